//! `cargo xtask mutants`: mutation testing of the compaction core with
//! cargo-mutants, under a time budget, reported in docs/mutants.md and
//! summarized in BENCHMARKS.md.
//!
//! A test suite that passes proves little unless it fails when the code is
//! wrong; cargo-mutants breaks the code one small change at a time and
//! reruns the tests. A full run over the four crates takes hours on two
//! cores, so a run can take a systematic sample (`--shard K/N`: every N-th
//! mutant of each crate's list, starting at the K-th) and stops at a
//! budget, reporting what it reached: the counts come from the outcome
//! lists cargo-mutants appends to as it goes, which a stopped run leaves in
//! place. Each crate is its own cargo-mutants run, so the report has one
//! row per crate. cargo-mutants runs under `nice -n 19` with one job, so it
//! takes only the CPU other builds leave. `cargo xtask ci` runs the cheap
//! variant in [`ci`]: the mutants of the lines a change touched.

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;
use std::time::Instant;

use anyhow::Context;
use anyhow::bail;

use crate::bench::Section;

pub(crate) mod ci;
mod report;

use report::Report;

/// The crates mutated by default: the seam, the basic backend, prune and
/// the composition crate.
const DEFAULT_CRATES: [&str; 4] = [
    "crates/compact",
    "crates/compact-basic",
    "crates/prune",
    "crates/abridge",
];

/// What to run, from the command line.
#[derive(Debug, PartialEq)]
struct Options {
    /// Crate directories, relative to the workspace root.
    crates: Vec<String>,
    /// Seconds one mutant's tests may take (`--timeout`).
    timeout: u64,
    /// Minutes the whole run may take (`--budget`), shared by the crates.
    budget: u64,
    /// `(k, n)`: test every n-th mutant starting at the k-th (`--shard`).
    shard: Option<(u32, u32)>,
    /// Globs of the files to mutate (`--file`, repeatable); all when empty.
    files: Vec<String>,
    /// Test only mutants whose names match this regex (`--re`).
    re: Option<String>,
    /// A confirmation run (`--check NAME`): its own output directory and
    /// report in target/mutants/NAME.md; docs/ and BENCHMARKS.md are left
    /// alone.
    check: Option<String>,
    /// Parallel cargo-mutants jobs (`--jobs`).
    jobs: u32,
}

const USAGE: &str = "usage: cargo xtask mutants --diff  (the ci step: mutants of the lines changed since origin/main or HEAD~1)\n       cargo xtask mutants [--timeout SECS] [--budget MINUTES] [--shard K/N] [--jobs J] [--file GLOB]... [--re REGEX] [--check NAME] [CRATE_DIR...]\n\n  --timeout  seconds one mutant's tests may take (default 120)\n  --budget   minutes the whole run may take, shared by the crates; then it stops and reports (default 240)\n  --shard    test only every N-th mutant of each crate, starting at the K-th (0-based): a systematic sample\n  --jobs     parallel cargo-mutants jobs (default 1: the machine is shared)\n  --file     mutate only files matching this glob (repeatable)\n  --re       test only mutants whose names match this regex (e.g. a past missed list)\n  --check    a confirmation run: report to target/mutants/NAME.md, docs/ and BENCHMARKS.md untouched\n  CRATE_DIR  e.g. crates/prune (default: crates/compact, crates/compact-basic, crates/prune, crates/abridge)";

fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut options = Options {
        crates: Vec::new(),
        timeout: 120,
        budget: 240,
        shard: None,
        files: Vec::new(),
        re: None,
        check: None,
        jobs: 1,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| -> anyhow::Result<&String> {
            args.next()
                .with_context(|| format!("{flag} needs a value\n\n{USAGE}"))
        };
        match arg.as_str() {
            "--timeout" => options.timeout = number("--timeout", value("--timeout")?)?,
            "--budget" => options.budget = number("--budget", value("--budget")?)?,
            "--jobs" => options.jobs = number("--jobs", value("--jobs")?)?,
            "--shard" => options.shard = Some(shard(value("--shard")?)?),
            "--file" => options.files.push(value("--file")?.clone()),
            "--re" => options.re = Some(value("--re")?.clone()),
            "--check" => options.check = Some(value("--check")?.clone()),
            flag if flag.starts_with('-') => bail!("unknown flag {flag:?}\n\n{USAGE}"),
            dir => options.crates.push(dir.trim_end_matches('/').to_string()),
        }
    }
    if options.crates.is_empty() {
        options.crates = DEFAULT_CRATES.map(String::from).to_vec();
    }
    if options.jobs == 0 {
        bail!("--jobs 0 would test nothing\n\n{USAGE}");
    }
    Ok(options)
}

fn number<T: std::str::FromStr>(flag: &str, value: &str) -> anyhow::Result<T> {
    value
        .parse()
        .ok()
        .with_context(|| format!("{flag} {value:?} is not a whole number\n\n{USAGE}"))
}

/// Reads `K/N` with `K < N`.
fn shard(value: &str) -> anyhow::Result<(u32, u32)> {
    let (k, n) = value
        .split_once('/')
        .with_context(|| format!("--shard {value:?} is not K/N\n\n{USAGE}"))?;
    let (k, n): (u32, u32) = (number("--shard", k)?, number("--shard", n)?);
    if k >= n {
        bail!("--shard {value:?}: K counts from 0 and must be below N\n\n{USAGE}");
    }
    Ok((k, n))
}

/// The package name in `dir/Cargo.toml`.
fn package_name(root: &Path, dir: &str) -> anyhow::Result<String> {
    let path = root.join(dir).join("Cargo.toml");
    let manifest = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    manifest
        .lines()
        .find_map(|line| {
            let value = line.trim().strip_prefix("name")?.trim().strip_prefix('=')?;
            Some(value.trim().trim_matches('"').to_string())
        })
        .with_context(|| format!("no package name in {}", path.display()))
}

/// Whether `cargo mutants` runs here.
fn installed() -> bool {
    Command::new("cargo")
        .args(["mutants", "--version"])
        .output()
        .is_ok_and(|out| out.status.success())
}

/// Installs cargo-mutants when `cargo mutants` is not there.
fn ensure_installed() -> anyhow::Result<()> {
    if !installed() {
        println!("cargo-mutants is missing; installing it");
        crate::cargo(&["install", "--locked", "cargo-mutants"])?;
    }
    Ok(())
}

/// `cargo mutants` at the lowest CPU priority (when `nice` exists), with
/// one job by default, building into `build` (see [`build_dir`]) so the copy
/// it tests in reuses the registry dependencies built there instead of
/// building them again in every temporary tree.
fn mutants_command(build: &Path, jobs: u32, timeout: u64, out: &Path) -> Command {
    let nice = Command::new("nice")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let mut command = if nice {
        let mut nice = Command::new("nice");
        nice.args(["-n", "19", "cargo"]);
        nice
    } else {
        Command::new("cargo")
    };
    command.args(["mutants", "--no-shuffle", "--jobs", &jobs.to_string()]);
    command.args(["--timeout", &timeout.to_string()]);
    command.arg("--output").arg(out);
    command.env("CARGO_TARGET_DIR", build);
    command
}

/// The build directory of a run: `target/mutants-build`, or
/// `target/mutants-build-NAME` for a check or CI run, so two runs at once
/// do not wait for each other's build lock.
fn build_dir(root: &Path, name: Option<&str>) -> PathBuf {
    let target = root.join("target");
    match name {
        Some(name) => target.join(format!("mutants-build-{name}")),
        None => target.join("mutants-build"),
    }
}

/// Seeds `build` with hard links to the debug build (no
/// disk cost) the first time, so cargo-mutants' first build reuses every
/// registry dependency; when `cp -al` fails it builds them itself.
fn seed_build_dir(root: &Path, build: &Path) {
    let debug = root.join("target").join("debug");
    if build.join("debug").exists() || !debug.exists() {
        return;
    }
    let seeded = std::fs::create_dir_all(build).is_ok()
        && Command::new("cp")
            .arg("-al")
            .arg(&debug)
            .arg(build.join("debug"))
            .status()
            .is_ok_and(|s| s.success());
    if !seeded {
        println!(
            "xtask mutants: could not seed {}; cargo-mutants builds from scratch",
            build.display()
        );
        return;
    }
    // The copied lock file would be the same file as the debug build's:
    // every build there would wait for this run and the other way round.
    let lock = build.join("debug").join(".cargo-lock");
    if std::fs::remove_file(&lock).is_ok() {
        let _ = std::fs::File::create(&lock);
    }
}

/// Runs `command`, stopping it once `budget` has passed; says whether it
/// was stopped.
fn run_within(mut command: Command, budget: Duration) -> anyhow::Result<bool> {
    println!("$ {command:?}");
    let started = Instant::now();
    let mut child = command.spawn().context("cannot run cargo mutants")?;
    loop {
        if child
            .try_wait()
            .context("cannot wait for cargo mutants")?
            .is_some()
        {
            return Ok(false);
        }
        if started.elapsed() >= budget {
            println!(
                "xtask mutants: the budget of {:.0} min is spent; stopping",
                budget.as_secs_f64() / 60.0
            );
            interrupt(&mut child);
            return Ok(true);
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// Stops cargo-mutants the way Ctrl-C would, so it stops its own cargo
/// children and removes its temporary tree; kills it if it has not
/// stopped within a minute.
fn interrupt(child: &mut std::process::Child) {
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// One crate's outcome.
struct CrateRun {
    dir: String,
    report: Report,
    minutes: f64,
    stopped: bool,
}

pub(crate) fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    if args == ["--diff"] {
        // The step `cargo xtask ci` runs, alone.
        return ci::run(root);
    }
    let options = parse(args)?;
    ensure_installed()?;
    let build = build_dir(root, options.check.as_deref());
    seed_build_dir(root, &build);
    let started = Instant::now();
    let budget = Duration::from_secs(options.budget * 60);
    let mut runs = Vec::new();
    for (i, dir) in options.crates.iter().enumerate() {
        // Each crate gets an even share of what is left, so time a crate
        // does not use passes on to the next.
        let left = budget.saturating_sub(started.elapsed());
        let share = left / (options.crates.len() - i) as u32;
        let package = package_name(root, dir)?;
        let out = out_dir(root, options.check.as_deref(), &package);
        std::fs::create_dir_all(&out)
            .with_context(|| format!("cannot create {}", out.display()))?;
        let mut command = mutants_command(&build, options.jobs, options.timeout, &out);
        command.args(["--package", &package]);
        if let Some((k, n)) = options.shard {
            command.args(["--shard", &format!("{k}/{n}"), "--sharding", "round-robin"]);
        }
        for glob in &options.files {
            command.args(["--file", glob]);
        }
        if let Some(re) = &options.re {
            command.args(["--re", re]);
        }
        let crate_started = Instant::now();
        let stopped = run_within(command, share)?;
        if !out.join("mutants.out").join("mutants.json").exists() {
            bail!("cargo mutants did not start for {dir} (see its error above); no report written");
        }
        let report = Report::read(&out.join("mutants.out"));
        println!(
            "xtask mutants: {dir}: {} of {} tested: {} caught, {} missed, {} timeout, {} unviable",
            report.tested(),
            report.planned,
            report.caught,
            report.missed.len(),
            report.timeout,
            report.unviable
        );
        runs.push(CrateRun {
            dir: dir.clone(),
            report,
            minutes: crate_started.elapsed().as_secs_f64() / 60.0,
            stopped,
        });
    }
    write_report(root, &options, &runs)
}

/// Where one package's run writes its `mutants.out`.
fn out_dir(root: &Path, check: Option<&str>, package: &str) -> PathBuf {
    let base = root.join("target").join("mutants");
    match check {
        Some(name) => base.join(name).join(package),
        None => base.join(package),
    }
}

/// The command line that reproduces this run.
fn rerun(options: &Options) -> String {
    let mut command = format!(
        "cargo xtask mutants --timeout {} --budget {}",
        options.timeout, options.budget
    );
    if let Some((k, n)) = options.shard {
        command.push_str(&format!(" --shard {k}/{n}"));
    }
    for glob in &options.files {
        command.push_str(&format!(" --file '{glob}'"));
    }
    if let Some(re) = &options.re {
        command.push_str(&format!(" --re '{re}'"));
    }
    if let Some(name) = &options.check {
        command.push_str(&format!(" --check {name}"));
    }
    if options.jobs != 1 {
        command.push_str(&format!(" --jobs {}", options.jobs));
    }
    if options.crates != DEFAULT_CRATES.map(String::from) {
        command.push(' ');
        command.push_str(&options.crates.join(" "));
    }
    command
}

fn scope(options: &Options, runs: &[CrateRun]) -> String {
    let sample = match options.shard {
        Some((k, n)) => format!(
            "A systematic sample: shard {k}/{n} round-robin, i.e. every {n}th mutant of each crate's list starting at index {k} (about 1 in {n})."
        ),
        None if options.re.is_some() => {
            "Only the mutants whose names match the --re pattern (no sampling).".to_string()
        }
        None => "Every mutant of each crate (no sampling).".to_string(),
    };
    let files = if options.files.is_empty() {
        String::new()
    } else {
        format!(" Files: {}.", options.files.join(", "))
    };
    let timing: Vec<String> = runs
        .iter()
        .map(|run| {
            format!(
                "{} {:.0} min{}",
                run.dir,
                run.minutes,
                if run.stopped {
                    " (stopped at its budget share; counts cover the mutants reached)"
                } else if run.report.tested() < run.report.planned {
                    " (ended before its list did: interrupted, or the unmutated tree failed its tests)"
                } else {
                    " (to the end)"
                }
            )
        })
        .collect();
    format!(
        "Command: `{}`.{files} {sample} One job under `nice -n 19`; per-mutant timeout {} s, budget {} min. Ran: {}.",
        rerun(options),
        options.timeout,
        options.budget,
        timing.join("; ")
    )
}

/// Where the hand-written part of docs/mutants.md starts: a run rewrites
/// what comes before it and keeps the rest.
const HAND_WRITTEN: &str = "\n<!-- hand-written";

/// Writes the report to docs/mutants.md (keeping its hand-written part,
/// from [`HAND_WRITTEN`] on) and its summary into BENCHMARKS.md.
fn write_report(root: &Path, options: &Options, runs: &[CrateRun]) -> anyhow::Result<()> {
    let mut total = Report::default();
    let mut rows: Vec<(String, Report)> = runs
        .iter()
        .map(|run| {
            total.add(&run.report);
            (run.dir.clone(), run.report.clone())
        })
        .collect();
    rows.push(("total".to_string(), total));
    let now = abridge_session::time::now_rfc3339();
    let mut text = format!(
        "# Mutation testing\n\nProduced by `cargo xtask mutants` on {now}.\n\n{}\n\n{}\n",
        scope(options, runs),
        report::table("crate", &rows)
    );
    text.push_str("## Missed\n\nEach line is a change no test noticed: a test that fails on it is wanted (a test of the behaviour, not of the mutant), or, when the change cannot alter behaviour, an entry under Equivalent below and in .cargo/mutants.toml.\n\n");
    if runs.iter().all(|run| run.report.missed.is_empty()) {
        text.push_str("None.\n");
    }
    for line in runs.iter().flat_map(|run| &run.report.missed) {
        text.push_str(&format!("- `{line}`\n"));
    }
    if let Some(name) = &options.check {
        let path = root
            .join("target")
            .join("mutants")
            .join(format!("{name}.md"));
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        println!(
            "wrote {} (a check: docs/ and BENCHMARKS.md untouched)",
            path.display()
        );
        return Ok(());
    }
    let path = root.join("docs").join("mutants.md");
    let existing = std::fs::read_to_string(&path).unwrap_or_default();
    if let Some(kept) = existing.find(HAND_WRITTEN) {
        text.push_str(&existing[kept..]);
    }
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    println!("wrote {}", path.display());

    let mut columns = vec!["crate"];
    columns.extend(report::COLUMNS);
    let mut section = Section::new(
        "Mutation testing",
        &format!(
            "cargo-mutants over the compaction core; the missed list is in docs/mutants.md. {}",
            scope(options, runs)
        ),
        &columns,
    );
    for (name, report) in &rows {
        let mut cells = vec![name.clone()];
        cells.extend(report.cells());
        section.row(cells);
    }
    section.note(format!("Run by `cargo xtask mutants` on {now}."));
    let path = root.join("BENCHMARKS.md");
    let existing = std::fs::read_to_string(&path).unwrap_or_default();
    let text = crate::replace_section(&existing, &section.title, &section.to_markdown());
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    println!("updated the mutation-testing section of {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn flags_and_crates_are_read() {
        let options = parse(&strings(&[
            "--timeout",
            "30",
            "crates/prune/",
            "--budget",
            "5",
            "--shard",
            "1/4",
            "--file",
            "src/reads.rs",
        ]))
        .unwrap();
        assert_eq!(options.crates, ["crates/prune"]);
        assert_eq!((options.timeout, options.budget), (30, 5));
        assert_eq!(options.shard, Some((1, 4)));
        assert_eq!(options.files, ["src/reads.rs"]);
        assert_eq!(options.jobs, 1);
        assert_eq!(parse(&[]).unwrap().crates.len(), 4);
        assert!(parse(&strings(&["--budget"])).is_err());
    }

    #[test]
    fn a_shard_past_its_count_is_refused() {
        assert!(parse(&strings(&["--shard", "4/4"])).is_err());
        assert!(parse(&strings(&["--shard", "4"])).is_err());
        assert!(parse(&strings(&["--jobs", "0"])).is_err());
    }

    #[test]
    fn the_rerun_line_reproduces_the_options() {
        let args = strings(&["--budget", "60", "--shard", "0/4", "crates/prune"]);
        let options = parse(&args).unwrap();
        let line = rerun(&options);
        assert_eq!(
            line,
            "cargo xtask mutants --timeout 120 --budget 60 --shard 0/4 crates/prune"
        );
        let again: Vec<String> = line.split(' ').skip(3).map(String::from).collect();
        assert_eq!(parse(&again).unwrap(), options);
    }
}
