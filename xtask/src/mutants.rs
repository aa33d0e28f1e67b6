//! `cargo xtask mutants`: mutation testing of the compaction core with
//! cargo-mutants, under a time budget, reported in docs/mutants.md and
//! summarized in BENCHMARKS.md.
//!
//! A test suite that passes proves little unless it fails when the code is
//! wrong; cargo-mutants breaks the code one small change at a time and
//! reruns the tests. A full run over the four crates takes hours on two
//! cores, so the run stops at a budget and reports what it reached: the
//! counts come from the outcome lists cargo-mutants appends to as it goes,
//! which a stopped run leaves in place. Not part of `cargo xtask ci`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;
use std::time::Instant;

use anyhow::Context;
use anyhow::bail;

use crate::bench::Section;

/// The crates mutated by default: the seam, the basic backend, prune and
/// the composition crate.
const DEFAULT_CRATES: [&str; 4] = [
    "crates/compact",
    "crates/compact-basic",
    "crates/prune",
    "crates/abridge",
];

/// Columns of the report table.
const COLUMNS: [&str; 7] = [
    "planned",
    "tested",
    "caught",
    "missed",
    "timeout",
    "unviable",
    "missed of viable",
];

/// What to run, from the command line.
#[derive(Debug)]
struct Options {
    /// Crate directories, relative to the workspace root.
    crates: Vec<String>,
    /// Seconds one mutant's tests may take (`--timeout`).
    timeout: u64,
    /// Minutes the whole run may take (`--budget`).
    budget: u64,
}

const USAGE: &str = "usage: cargo xtask mutants [--timeout SECS] [--budget MINUTES] [CRATE_DIR...]\n\n  --timeout  seconds one mutant's tests may take (default 120)\n  --budget   minutes the whole run may take; then it stops and reports (default 240)\n  CRATE_DIR  e.g. crates/prune (default: crates/compact, crates/compact-basic, crates/prune, crates/abridge)";

fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut options = Options {
        crates: Vec::new(),
        timeout: 120,
        budget: 240,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let mut number = |flag: &str| -> anyhow::Result<u64> {
            let value = args
                .next()
                .with_context(|| format!("{flag} needs a number\n\n{USAGE}"))?;
            value
                .parse()
                .with_context(|| format!("{flag} {value:?} is not a whole number\n\n{USAGE}"))
        };
        match arg.as_str() {
            "--timeout" => options.timeout = number("--timeout")?,
            "--budget" => options.budget = number("--budget")?,
            flag if flag.starts_with('-') => bail!("unknown flag {flag:?}\n\n{USAGE}"),
            dir => options.crates.push(dir.trim_end_matches('/').to_string()),
        }
    }
    if options.crates.is_empty() {
        options.crates = DEFAULT_CRATES.map(String::from).to_vec();
    }
    Ok(options)
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

/// Installs cargo-mutants when `cargo mutants` is not there.
fn ensure_installed() -> anyhow::Result<()> {
    let present = Command::new("cargo")
        .args(["mutants", "--version"])
        .output()
        .is_ok_and(|out| out.status.success());
    if !present {
        println!("cargo-mutants is missing; installing it");
        crate::cargo(&["install", "--locked", "cargo-mutants"])?;
    }
    Ok(())
}

/// Outcome counts and the missed mutants, read from a mutants.out
/// directory.
#[derive(Debug, Default)]
struct Report {
    planned: usize,
    caught: usize,
    missed: Vec<String>,
    timeout: usize,
    unviable: usize,
}

impl Report {
    fn read(out: &Path) -> Report {
        let lines = |name: &str| -> Vec<String> {
            std::fs::read_to_string(out.join(name))
                .unwrap_or_default()
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(String::from)
                .collect()
        };
        let planned = std::fs::read_to_string(out.join("mutants.json"))
            .ok()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .and_then(|json| json.as_array().map(Vec::len))
            .unwrap_or(0);
        Report {
            planned,
            caught: lines("caught.txt").len(),
            missed: lines("missed.txt"),
            timeout: lines("timeout.txt").len(),
            unviable: lines("unviable.txt").len(),
        }
    }

    fn tested(&self) -> usize {
        self.caught + self.missed.len() + self.timeout + self.unviable
    }

    /// One table row, in the order of [`COLUMNS`].
    fn cells(&self) -> Vec<String> {
        vec![
            self.planned.to_string(),
            self.tested().to_string(),
            self.caught.to_string(),
            self.missed.len().to_string(),
            self.timeout.to_string(),
            self.unviable.to_string(),
            self.missed_share(),
        ]
    }

    /// Missed as a share of the viable mutants tested.
    fn missed_share(&self) -> String {
        let viable = self.caught + self.missed.len() + self.timeout;
        if viable == 0 {
            return "n/a".to_string();
        }
        format!("{:.1}%", 100.0 * self.missed.len() as f64 / viable as f64)
    }
}

pub(crate) fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let options = parse(args)?;
    ensure_installed()?;
    let out_dir = root.join("target").join("mutants");
    let mut command = Command::new("cargo");
    command.args(["mutants", "--timeout"]);
    command.arg(options.timeout.to_string());
    command.arg("--output").arg(&out_dir);
    for dir in &options.crates {
        command.args(["--package", &package_name(root, dir)?]);
    }
    println!("$ {command:?}");
    let started = Instant::now();
    let mut child = command.spawn().context("cannot run cargo mutants")?;
    let budget = Duration::from_secs(options.budget * 60);
    let mut stopped = false;
    loop {
        if child
            .try_wait()
            .context("cannot wait for cargo mutants")?
            .is_some()
        {
            break;
        }
        if started.elapsed() >= budget {
            println!(
                "xtask mutants: the budget of {} min is spent; stopping",
                options.budget
            );
            interrupt(&mut child);
            stopped = true;
            break;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    let report = Report::read(&out_dir.join("mutants.out"));
    let elapsed = started.elapsed();
    write_report(root, &options, &report, elapsed, stopped)?;
    println!(
        "xtask mutants: {} of {} mutants tested: {} caught, {} missed, {} timeout, {} unviable",
        report.tested(),
        report.planned,
        report.caught,
        report.missed.len(),
        report.timeout,
        report.unviable
    );
    Ok(())
}

/// Stops cargo-mutants the way Ctrl-C would, so it stops its own cargo
/// children and leaves the source tree unmutated; kills it if it has not
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

fn scope(options: &Options, elapsed: Duration, stopped: bool) -> String {
    format!(
        "Crates: {}. Per-mutant timeout {} s, budget {} min; ran {:.0} min{}.",
        options.crates.join(", "),
        options.timeout,
        options.budget,
        elapsed.as_secs_f64() / 60.0,
        if stopped {
            ", stopped at the budget (the counts cover the mutants reached)"
        } else {
            ", to the end"
        }
    )
}

/// Writes the report to docs/mutants.md and its summary into
/// BENCHMARKS.md.
fn write_report(
    root: &Path,
    options: &Options,
    report: &Report,
    elapsed: Duration,
    stopped: bool,
) -> anyhow::Result<()> {
    let mut text = format!(
        "# Mutation testing\n\nProduced by `cargo xtask mutants` on {}.\n\n{}\n\n",
        abridge_session::time::now_rfc3339(),
        scope(options, elapsed, stopped)
    );
    text.push_str(&format!(
        "| {} |\n|{}\n| {} |\n\n",
        COLUMNS.join(" | "),
        "---|".repeat(COLUMNS.len()),
        report.cells().join(" | ")
    ));
    text.push_str("## Missed\n\nEach line is a change no test noticed: a test that fails on it is wanted (a test of the behaviour, not of the mutant).\n\n");
    if report.missed.is_empty() {
        text.push_str("None.\n");
    }
    for line in &report.missed {
        text.push_str(&format!("- `{line}`\n"));
    }
    let path = root.join("docs").join("mutants.md");
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    println!("wrote {}", path.display());

    let mut section = Section::new(
        "Mutation testing",
        &format!(
            "cargo-mutants over the compaction core; the missed list is in docs/mutants.md. {}",
            scope(options, elapsed, stopped)
        ),
        &COLUMNS,
    );
    section.row(report.cells());
    section.note(format!(
        "Run by `cargo xtask mutants` on {}.",
        abridge_session::time::now_rfc3339()
    ));
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

    #[test]
    fn flags_and_crates_are_read() {
        let args: Vec<String> = ["--timeout", "30", "crates/prune/", "--budget", "5"]
            .map(String::from)
            .to_vec();
        let options = parse(&args).unwrap();
        assert_eq!(options.crates, vec!["crates/prune".to_string()]);
        assert_eq!((options.timeout, options.budget), (30, 5));
        assert_eq!(parse(&[]).unwrap().crates.len(), 4);
        assert!(parse(&["--budget".to_string()]).is_err());
    }

    #[test]
    fn missed_share_counts_only_viable_mutants() {
        let report = Report {
            planned: 10,
            caught: 3,
            missed: vec!["m".into()],
            timeout: 0,
            unviable: 6,
        };
        assert_eq!(report.missed_share(), "25.0%");
        assert_eq!(report.tested(), 10);
    }
}
