//! `cargo xtask fuzz [--minutes N] [--target T] [--seed S] [--jobs J]`:
//! fuzzing on the stable toolchain. `--minutes` is the total of the
//! targets' shares; `--jobs` runs that many targets at once (one core
//! each), so the wall time is about `N / J` minutes.
//!
//! Each target runs in a child process of its own (`xtask fuzz-child`),
//! because a stack overflow aborts a process and cannot be caught: the
//! child writes every input to a file before trying it, so when it dies the
//! parent saves that input as a regression and starts a new child for the
//! rest of the time. Inside the child each input runs under
//! `catch_unwind`; a panic, or an error that names no line or field, saves
//! the input under tests/data/fuzz-regressions/TARGET/, where the replay
//! test (`fuzz_replay`) runs it on every `cargo test`.
//!
//! The run is seeded and prints its seed; the figures (inputs tried,
//! failures) go to BENCHMARKS.md unless `--no-report` (the short pass
//! `cargo xtask ci` runs).

use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;
use std::time::Instant;

use anyhow::Context;
use anyhow::bail;

use crate::bench::Section;
use crate::fuzz_mutate::Rng;
use crate::fuzz_targets::Target;
use crate::fuzz_targets::Verdict;

/// What the command line asked for.
#[derive(Debug)]
struct Options {
    /// Wall time for all targets together.
    total: Duration,
    targets: Vec<Target>,
    seed: u64,
    report: bool,
    /// Targets fuzzed at the same time, each in its own child process.
    jobs: usize,
}

fn parse(args: &[String]) -> anyhow::Result<Options> {
    let mut options = Options {
        total: Duration::from_secs(60),
        targets: Target::ALL.to_vec(),
        seed: seed_from_clock(),
        report: true,
        jobs: 1,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .with_context(|| format!("{arg} needs a value"))
                .cloned()
        };
        match arg.as_str() {
            "--minutes" => {
                let minutes: f64 = value()?.parse().context("--minutes takes a number")?;
                anyhow::ensure!(minutes > 0.0, "--minutes must be above 0");
                options.total = Duration::from_secs_f64(minutes * 60.0);
            }
            "--seconds" => {
                let seconds: f64 = value()?.parse().context("--seconds takes a number")?;
                anyhow::ensure!(seconds > 0.0, "--seconds must be above 0");
                options.total = Duration::from_secs_f64(seconds);
            }
            "--target" => {
                let name = value()?;
                let target = Target::by_name(&name).with_context(|| {
                    let names: Vec<String> = Target::ALL.iter().map(|t| t.name()).collect();
                    format!("unknown target {name:?}; one of {}", names.join(", "))
                })?;
                options.targets = vec![target];
            }
            "--seed" => options.seed = value()?.parse().context("--seed takes an integer")?,
            "--no-report" => options.report = false,
            "--jobs" => {
                options.jobs = value()?.parse().context("--jobs takes a whole number")?;
                anyhow::ensure!(options.jobs > 0, "--jobs must be above 0");
            }
            other => bail!("unknown fuzz option {other:?}"),
        }
    }
    Ok(options)
}

fn seed_from_clock() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
}

/// What one target's run came to.
#[derive(Debug, Default)]
struct Tally {
    inputs: u64,
    /// Inputs read without error (the rest were refused with a located error).
    accepted: u64,
    failures: u64,
    /// Children that died (stack overflow, abort) and were restarted.
    crashes: u64,
}

/// `cargo xtask fuzz ...`: every target for an even share of the time.
pub(crate) fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let options = parse(args)?;
    let share = options.total / options.targets.len() as u32;
    println!(
        "xtask fuzz: seed {} ({} target(s), {:.0} s each, {} at a time); replay with --seed {}",
        options.seed,
        options.targets.len(),
        share.as_secs_f64(),
        options.jobs,
        options.seed
    );
    let scratch = root.join("target/fuzz");
    std::fs::create_dir_all(&scratch).context("cannot create target/fuzz")?;
    // Read once: a rebuild during the run replaces the file, and the
    // kernel then names this process's image "... (deleted)", so asking
    // again would find nothing to start children from.
    let exe = std::env::current_exe().context("cannot find the xtask binary")?;
    let results = fuzz_all(&options, &exe, share, &scratch)?;
    let failures: u64 = results.iter().map(|(_, t)| t.failures + t.crashes).sum();
    if options.report {
        write_report(root, &options, share, &results)?;
    }
    if failures > 0 {
        bail!(
            "fuzz found {failures} failing input(s), saved under tests/data/fuzz-regressions/ (seed {})",
            options.seed
        );
    }
    Ok(())
}

/// Fuzzes every target for `share`, `options.jobs` of them at a time,
/// and returns their tallies in the order the targets were given.
fn fuzz_all(
    options: &Options,
    exe: &Path,
    share: Duration,
    scratch: &Path,
) -> anyhow::Result<Vec<(Target, Tally)>> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let done = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..options.jobs.min(options.targets.len()) {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(target) = options.targets.get(index) else {
                        return;
                    };
                    let tally = fuzz_target(exe, *target, options.seed, share, scratch);
                    if let Ok(tally) = &tally {
                        println!(
                            "fuzz {}: {} inputs ({} accepted), {} failure(s), {} crash(es)",
                            target.name(),
                            tally.inputs,
                            tally.accepted,
                            tally.failures,
                            tally.crashes
                        );
                    }
                    done.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push((index, *target, tally));
                }
            });
        }
    });
    let mut done = done
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    done.sort_by_key(|(index, _, _)| *index);
    done.into_iter()
        .map(|(_, target, tally)| Ok((target, tally?)))
        .collect()
}

/// Runs children for `target` until `share` is spent, restarting one that
/// dies after saving the input it died on.
fn fuzz_target(
    exe: &Path,
    target: Target,
    seed: u64,
    share: Duration,
    scratch: &Path,
) -> anyhow::Result<Tally> {
    let current = scratch.join(format!("current-{}.bin", target.name()));
    let started = Instant::now();
    let mut tally = Tally::default();
    // Each restart gets a seed of its own, derived from the run's.
    let mut restarts = Rng::new(seed ^ fnv1a(target.name().as_bytes()));
    let mut child_seed = seed;
    while started.elapsed() < share {
        let left = share.saturating_sub(started.elapsed());
        let _ = std::fs::remove_file(&current);
        let output = Command::new(exe)
            .args([
                "fuzz-child",
                &target.name(),
                &child_seed.to_string(),
                &format!("{:.3}", left.as_secs_f64()),
            ])
            .arg(&current)
            .output()
            .context("cannot run the fuzz child")?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        for line in stdout.lines() {
            if let Some(counts) = line.strip_prefix("tally ") {
                let mut parts = counts.split_whitespace().map(str::parse::<u64>);
                let mut next = || parts.next().and_then(Result::ok).unwrap_or(0);
                tally.inputs += next();
                tally.accepted += next();
                tally.failures += next();
            } else {
                println!("{line}");
            }
        }
        if !output.status.success() {
            tally.crashes += 1;
            let input = std::fs::read(&current).unwrap_or_default();
            let saved = save_regression(target, &input)?;
            let stderr = String::from_utf8_lossy(&output.stderr);
            println!(
                "fuzz {}: the child died ({}), input saved as {}: {}",
                target.name(),
                output.status,
                saved.display(),
                stderr.lines().last().unwrap_or_default()
            );
        }
        child_seed = restarts.next_u64();
    }
    let _ = std::fs::remove_file(&current);
    Ok(tally)
}

/// Hidden `xtask fuzz-child TARGET SEED SECONDS CURRENT`: fuzzes one
/// target in this process and prints `tally INPUTS ACCEPTED FAILURES`.
pub(crate) fn child(args: &[String]) -> anyhow::Result<()> {
    let [name, seed, seconds, current] = args else {
        bail!("usage: fuzz-child TARGET SEED SECONDS CURRENT");
    };
    let target = Target::by_name(name).with_context(|| format!("unknown target {name:?}"))?;
    let seed: u64 = seed.parse().context("bad seed")?;
    let budget = Duration::from_secs_f64(seconds.parse().context("bad seconds")?);
    let current = PathBuf::from(current);
    let scratch = current
        .parent()
        .map_or_else(std::env::temp_dir, Path::to_path_buf);
    let seeds = crate::fuzz_targets::seeds(target, &scratch)?;
    // Panics are findings, reported below with their input: keep the
    // default hook's message short.
    std::panic::set_hook(Box::new(|info| {
        eprintln!("panic: {info}");
    }));
    let mut rng = Rng::new(seed);
    let started = Instant::now();
    let (mut inputs, mut accepted, mut failures) = (0u64, 0u64, 0u64);
    while inputs == 0 || started.elapsed() < budget {
        let input_seed = rng.next_u64();
        let (input, kinds) = make_input(&seeds, target, input_seed);
        std::fs::write(&current, &input).context("cannot write the current input")?;
        inputs += 1;
        let verdict = run_guarded(target, &input, &scratch);
        if verdict == Ok(Verdict::Accepted) {
            accepted += 1;
        }
        if let Err(why) = verdict {
            failures += 1;
            let saved = save_regression(target, &input)?;
            let kinds: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
            println!(
                "fuzz {name}: input seed {input_seed} ({}): {why}; saved as {}",
                kinds.join(", "),
                saved.display()
            );
        }
    }
    let mut out = std::io::stdout().lock();
    writeln!(out, "tally {inputs} {accepted} {failures}")?;
    Ok(())
}

/// One input: a window of a seed with mutations applied.
fn make_input(
    seeds: &[Vec<u8>],
    target: Target,
    input_seed: u64,
) -> (Vec<u8>, Vec<crate::fuzz_mutate::Mutation>) {
    use crate::fuzz_mutate as m;
    let mut rng = Rng::new(input_seed);
    let seed = &seeds[rng.below(seeds.len())];
    // Whole documents stay whole (a window would only be broken JSON).
    let max_lines = if target.is_document() {
        usize::MAX - 1
    } else {
        48
    };
    let mut lines = m::window(seed, max_lines, &mut rng);
    let kinds = m::mutate(&mut lines, &mut rng);
    (m::splice_nesting(m::join(&lines, &mut rng)), kinds)
}

/// Runs `target` on `input`, turning a panic into an error naming it.
pub(crate) fn run_guarded(target: Target, input: &[u8], scratch: &Path) -> Result<Verdict, String> {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        crate::fuzz_targets::run(target, input, scratch)
    }));
    match outcome {
        Ok(verdict) => verdict,
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_string()))
                .unwrap_or_else(|| "a panic".to_string());
            Err(format!("panicked: {message}"))
        }
    }
}

/// Saves `input` as TARGET/HASH.EXT under the regression folder.
fn save_regression(target: Target, input: &[u8]) -> anyhow::Result<PathBuf> {
    let dir = crate::fuzz_targets::regression_dir(target);
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(format!("{:016x}.{}", fnv1a(input), target.extension()));
    std::fs::write(&path, input).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// FNV-1a, 64 bits: a stable name for a saved input.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The figures as a section of BENCHMARKS.md (the bench block's writer).
fn write_report(
    root: &Path,
    options: &Options,
    share: Duration,
    results: &[(Target, Tally)],
) -> anyhow::Result<()> {
    let mut section = Section::new(
        "Fuzzing",
        &format!(
            "`cargo xtask fuzz` (stable toolchain, structure-aware mutation of the bundled sessions; \
             see docs/bad-input.md): {:.1} minutes per target, seed {}. A failure is a panic, a \
             child that died, or an error naming no line or field; each is saved under \
             tests/data/fuzz-regressions/ and replayed by `cargo test -p xtask`.",
            share.as_secs_f64() / 60.0,
            options.seed
        ),
        &[
            "target",
            "inputs tried",
            "inputs/s",
            "accepted",
            "failures",
            "child crashes",
            "regressions kept",
        ],
    );
    for (target, tally) in results {
        let kept = std::fs::read_dir(crate::fuzz_targets::regression_dir(*target))
            .map_or(0, |dir| dir.count());
        section.row(vec![
            target.name(),
            tally.inputs.to_string(),
            format!("{:.0}", tally.inputs as f64 / share.as_secs_f64().max(1e-9)),
            format!(
                "{:.0}%",
                100.0 * tally.accepted as f64 / tally.inputs.max(1) as f64
            ),
            tally.failures.to_string(),
            tally.crashes.to_string(),
            kept.to_string(),
        ]);
    }
    let path = root.join("BENCHMARKS.md");
    let existing = std::fs::read_to_string(&path).unwrap_or_default();
    let mut markdown = section.to_markdown();
    markdown.push_str(&format!(
        "Written by `cargo xtask fuzz --minutes {:.0} --jobs {}` on {}, {}.\n\n",
        options.total.as_secs_f64() / 60.0,
        options.jobs,
        abridge_session::time::now_rfc3339(),
        crate::machine()
    ));
    let text = crate::replace_section(&existing, &section.title, &markdown);
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    println!("wrote the Fuzzing section of {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every input the fuzzer ever saved still passes: no panic, and any
    /// error names its line or field. One test, so the targets' scratch
    /// files (named by process) are never shared by two threads.
    #[test]
    fn every_saved_regression_passes() {
        let scratch =
            std::env::temp_dir().join(format!("abridge-fuzz-replay-{}", std::process::id()));
        std::fs::create_dir_all(&scratch).unwrap();
        let mut failing = Vec::new();
        let mut replayed = 0;
        for target in Target::ALL {
            let Ok(dir) = std::fs::read_dir(crate::fuzz_targets::regression_dir(target)) else {
                continue;
            };
            for entry in dir {
                let path = entry.unwrap().path();
                let input = std::fs::read(&path).unwrap();
                replayed += 1;
                if let Err(why) = run_guarded(target, &input, &scratch) {
                    failing.push(format!("{}: {why}", path.display()));
                }
            }
        }
        let _ = std::fs::remove_dir_all(&scratch);
        assert!(
            failing.is_empty(),
            "{replayed} replayed, failing:\n{}",
            failing.join("\n")
        );
    }

    #[test]
    fn options_parse_and_refuse_unknown_targets() {
        let args = |a: &[&str]| a.iter().map(|s| (*s).to_string()).collect::<Vec<_>>();
        let options = parse(&args(&[
            "--minutes",
            "2",
            "--target",
            "import-pi",
            "--seed",
            "9",
            "--jobs",
            "2",
        ]))
        .unwrap();
        assert_eq!(options.total, Duration::from_secs(120));
        assert_eq!(options.seed, 9);
        assert_eq!(options.jobs, 2);
        assert!(parse(&args(&["--jobs", "0"])).is_err());
        assert_eq!(options.targets.len(), 1);
        let error = parse(&args(&["--target", "nope"])).unwrap_err().to_string();
        assert!(error.contains("unknown target \"nope\""), "{error}");
    }
}
