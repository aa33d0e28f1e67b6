//! The test step of `cargo xtask ci`: every test, then the tests gated on
//! something a machine may lack, run explicitly when it is there, and a
//! summary that counts and names every test that did not run.
//!
//! A test that returns early when its service is missing reports `ok`
//! exactly like one that ran, so a plain `cargo test` on a machine
//! without PostgreSQL would say the PostgreSQL store passed. Such tests
//! are `#[ignore = "needs ..."]` instead: libtest then says `ignored`,
//! and this step runs each gate's tests with `--ignored` when the gate is
//! open. Whatever stays unrun is listed by name at the end, with why.
//! A test that still skips at run time says so on its output with a line
//! starting `SKIPPED` (the fsync tests without strace), and is listed too.

use std::io::BufRead;
use std::io::BufReader;
use std::process::Command;

use anyhow::Context;
use anyhow::bail;

/// Tests ignored with a reason starting `reason` run when `open` says the
/// machine has what they need.
struct Gate {
    reason: &'static str,
    /// What to do to open it, for the summary.
    how: &'static str,
    open: fn() -> bool,
    /// `cargo test` arguments that run exactly these tests.
    args: &'static [&'static str],
}

/// The variable `.ci/postgres.sh` exports: the test database's URL.
const POSTGRES_VAR: &str = "ABRIDGE_TEST_POSTGRES";

const GATES: &[Gate] = &[Gate {
    reason: "needs PostgreSQL",
    how: "eval \"$(.ci/postgres.sh)\"",
    open: || std::env::var_os(POSTGRES_VAR).is_some(),
    args: &[
        "test",
        "-p",
        "abridge-store-postgres",
        "-p",
        "abridge-serve",
        "--tests",
        "--no-fail-fast",
        "--",
        "--ignored",
    ],
}];

/// Ignored tests with this in their reason are entry points another test
/// starts as a child process, not tests that were skipped.
const CHILD_ENTRY: &str = "child process";

/// What one `cargo test` run said.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) passed: u64,
    pub(crate) failed: u64,
    /// `(test, reason)` for each test libtest reported ignored.
    pub(crate) ignored: Vec<(String, String)>,
    /// Lines where a test said it skipped at run time.
    pub(crate) skipped_at_run_time: Vec<String>,
}

impl Tally {
    /// Reads `cargo test` output (cargo's and libtest's, interleaved as
    /// written), one line at a time.
    pub(crate) fn read_line(&mut self, target: &mut String, line: &str) {
        let trimmed = line.trim();
        if let Some(running) = trimmed.strip_prefix("Running ") {
            // `Running tests/lock.rs (target/debug/deps/lock-…)`
            let source = running.split(" (").next().unwrap_or(running);
            *target = source.to_string();
        } else if let Some(crate_name) = trimmed.strip_prefix("Doc-tests ") {
            *target = format!("doc-tests {crate_name}");
        } else if trimmed.starts_with("SKIPPED") {
            self.skipped_at_run_time.push(trimmed.to_string());
        } else if let Some(result) = trimmed.strip_prefix("test result: ") {
            self.passed += count(result, " passed");
            self.failed += count(result, " failed");
        } else if let Some(rest) = trimmed.strip_prefix("test ")
            && let Some((name, outcome)) = rest.split_once(" ... ")
            && let Some(reason) = outcome.strip_prefix("ignored")
        {
            let reason = reason.trim_start_matches(',').trim().to_string();
            self.ignored.push((format!("{target}: {name}"), reason));
        }
    }
}

/// The number before `label` in a `test result:` line.
fn count(result: &str, label: &str) -> u64 {
    result
        .split(';')
        .filter_map(|part| part.trim().trim_start_matches("ok. ").strip_suffix(label))
        .filter_map(|n| n.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// Runs `cargo args`, echoing its output and reading it into a tally.
/// Fails when cargo does.
fn cargo_tally(args: &[&str]) -> anyhow::Result<Tally> {
    println!("$ cargo {}", args.join(" "));
    let (reader, writer) = std::io::pipe().context("cannot make a pipe")?;
    let mut command = Command::new("cargo");
    command
        .args(args)
        .stdout(writer.try_clone().context("cannot clone a pipe")?)
        .stderr(writer);
    let mut child = command.spawn().context("cannot run cargo")?;
    // The command holds the pipe's writing ends: closed here, so the read
    // below ends when cargo does.
    drop(command);
    let mut tally = Tally::default();
    let mut target = String::new();
    for line in BufReader::new(reader).lines() {
        let line = line.context("cannot read cargo's output")?;
        println!("{line}");
        tally.read_line(&mut target, &line);
    }
    let status = child.wait().context("cannot wait for cargo")?;
    if !status.success() {
        bail!("`cargo {}` failed", args.join(" "));
    }
    Ok(tally)
}

/// Every test, then each open gate's; prints the summary.
pub(crate) fn run() -> anyhow::Result<()> {
    let all = cargo_tally(&["test", "--workspace", "--no-fail-fast"])?;
    let mut passed = all.passed;
    let mut skipped: Vec<String> = all
        .skipped_at_run_time
        .iter()
        .map(|line| format!("{line} (skipped at run time)"))
        .collect();
    let mut children = 0;
    for gate in GATES {
        let gated = all
            .ignored
            .iter()
            .filter(|(_, reason)| reason.starts_with(gate.reason));
        if (gate.open)() {
            let ran = cargo_tally(gate.args)?;
            passed += ran.passed;
            continue;
        }
        skipped.extend(
            gated.map(|(test, reason)| format!("{test} ({reason}; to run it: {})", gate.how)),
        );
    }
    for (test, reason) in &all.ignored {
        if reason.contains(CHILD_ENTRY) {
            children += 1;
        } else if !GATES.iter().any(|g| reason.starts_with(g.reason)) {
            skipped.push(format!("{test} (ignored: {reason})"));
        }
    }
    println!(
        "xtask ci: tests: {passed} passed, {} skipped, {children} child-process entries not run on their own",
        skipped.len()
    );
    for line in &skipped {
        println!("  skipped: {line}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(text: &str) -> Tally {
        let mut tally = Tally::default();
        let mut target = String::new();
        for line in text.lines() {
            tally.read_line(&mut target, line);
        }
        tally
    }

    #[test]
    fn ignored_tests_are_named_with_their_binary_and_reason() {
        let out = tally(
            "     Running tests/lock.rs (target/debug/deps/lock-0f3a)\n\
             running 2 tests\n\
             test a_lock_is_taken ... ignored, needs PostgreSQL (ABRIDGE_TEST_POSTGRES)\n\
             test plain ... ignored\n\
             test works ... ok\n\
             test result: ok. 1 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out; finished in 0.01s\n\
                Doc-tests abridge_x\n\
             test result: ok. 3 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out\n\
             SKIPPED fsync::*: strace is not installed\n",
        );
        assert_eq!(out.passed, 4);
        assert_eq!(out.failed, 1);
        assert_eq!(
            out.ignored,
            vec![
                (
                    "tests/lock.rs: a_lock_is_taken".to_string(),
                    "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)".to_string()
                ),
                ("tests/lock.rs: plain".to_string(), String::new()),
            ]
        );
        assert_eq!(
            out.skipped_at_run_time,
            vec!["SKIPPED fsync::*: strace is not installed".to_string()]
        );
    }
}
