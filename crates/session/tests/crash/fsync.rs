//! Durability through fsync, seen from the kernel's side: the crash child
//! runs under `strace`, and [`audit`](crate::strace::audit) checks that
//! each acknowledgement comes after the fsyncs it depends on.
//!
//! A SIGKILL leaves the page cache intact, so the kill tests pass without
//! any fsync; only the system calls show whether a power loss would keep
//! an acknowledged batch. The negative control runs the same child with
//! fsync off and must be caught.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use crate::crash::BATCHES_ENV;
use crate::crash::FSYNC_ENV;
use crate::crash::IMAGE_ENV;
use crate::crash::ONE_AT_A_TIME;
use crate::crash::child_command;
use crate::strace::Audit;
use crate::strace::TRACED;
use crate::strace::audit;

/// Set (CI sets it): a missing strace fails the test instead of skipping.
const REQUIRE_ENV: &str = "ABRIDGE_REQUIRE_STRACE";

/// Batches the child writes.
const BATCHES: u64 = 5;

/// True when `strace -V` runs. Otherwise says so on stderr (past the test
/// harness's capture, so the skip is visible), or fails when CI asked for
/// strace.
fn strace_available() -> bool {
    if Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return true;
    }
    assert!(
        std::env::var_os(REQUIRE_ENV).is_none(),
        "strace is not installed and {REQUIRE_ENV} is set (apt-get install strace)"
    );
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED fsync::*: strace is not installed (apt-get install strace; CI installs it)"
    );
    false
}

/// Runs the crash child under strace on a new session in a fresh directory
/// (so the trace holds its creation, a blob and `BATCHES` batches) and
/// audits the trace.
fn traced_run(fsync: &str) -> Audit {
    let dir = tempfile::tempdir().unwrap();
    // strace prints canonical paths.
    let dir_path = dir.path().canonicalize().unwrap();
    let log = dir_path.join("session.jsonl");
    let trace = dir_path.join("trace");
    let mut child = child_command(&log, 3, 200);
    child
        .env(BATCHES_ENV, BATCHES.to_string())
        .env(IMAGE_ENV, "1")
        .env(FSYNC_ENV, fsync);
    let mut strace = Command::new("strace");
    strace
        .args(["-f", "-y", "-s", "24", "-e"])
        .arg(format!("trace={TRACED}"))
        .arg("-o")
        .arg(&trace)
        .arg(child.get_program())
        .args(child.get_args());
    for (key, value) in child.get_envs() {
        if let Some(value) = value {
            strace.env(key, value);
        }
    }
    let out = strace.output().unwrap();
    assert!(
        out.status.success(),
        "the traced child failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("ACK ")).count() as u64,
        BATCHES,
        "{stdout}"
    );
    let text = std::fs::read_to_string(&trace).unwrap();
    let report = audit(&text, &log);
    assert!(
        report.acks as u64 == BATCHES + 1 && report.log_writes as u64 == BATCHES + 1,
        "the trace lacks the child's acks or writes (was it traced?): {report:?}\n{}",
        preview(&text, &log)
    );
    assert!(
        report.created >= 2 && report.made_dirs == 1 && report.renamed == 1,
        "the run must create the log and a blob: {report:?}"
    );
    report
}

/// The trace's lines about the session's directory, for a failure message.
fn preview(trace: &str, log: &Path) -> String {
    let dir = log.parent().unwrap().display().to_string();
    trace
        .lines()
        .filter(|l| l.contains(&dir) || l.contains("ACK ") || l.contains("READY "))
        .take(60)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_acknowledgement_follows_the_fsyncs_it_depends_on() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !strace_available() {
        return;
    }
    let report = traced_run("every");
    assert_eq!(report.problems, Vec::<String>::new());
    assert!(report.log_syncs as u64 > BATCHES, "{report:?}");
}

/// The negative control: the same child without fsync is caught at every
/// acknowledged batch.
#[test]
fn without_fsync_every_acknowledged_batch_is_caught() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !strace_available() {
        return;
    }
    let report = traced_run("never");
    assert_eq!(
        report.problems.len() as u64,
        BATCHES,
        "{:#?}",
        report.problems
    );
    assert!(
        report
            .problems
            .iter()
            .all(|p| p.contains("acknowledged before an fsync of") && p.contains("session.jsonl ")),
        "{:#?}",
        report.problems
    );
}
