//! `abridge simulate` as a user runs it: a bundled session imported, then
//! replayed under a smaller window; and each kind of bad input, checking
//! the error names what was wrong.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

use abridge_test_support::cli::Cli;
use abridge_test_support::cli::stderr;
use abridge_test_support::cli::stdout;
use abridge_test_support::samples::PI;
use abridge_test_support::samples::SWE;
use abridge_test_support::samples::sample;

fn abridge_in(dir: &Path, args: &[&str]) -> Output {
    Cli::new(env!("CARGO_BIN_EXE_abridge"))
        .in_dir(dir)
        .run(args)
}

/// Imports `name` into `dir` as `out`, returning the file name (relative
/// to `dir`, so outputs do not carry the temporary path).
fn imported(dir: &Path, name: &str, out: &'static str) -> &'static str {
    let output = abridge_in(dir, &["import", sample(name).to_str().unwrap(), "-o", out]);
    assert!(output.status.success(), "{}", stderr(&output));
    out
}

fn u(value: &serde_json::Value) -> u64 {
    value
        .as_u64()
        .unwrap_or_else(|| panic!("not a count: {value}"))
}

#[test]
fn pi_session_under_a_64k_window_compacts_and_bills_less() {
    let dir = tempfile::tempdir().unwrap();
    let session = imported(dir.path(), PI, "pi.jsonl");
    let before = std::fs::read(dir.path().join(session)).unwrap();
    let output = abridge_in(
        dir.path(),
        &[
            "simulate", session, "--window", "64000", "--method", "digest", "--json",
        ],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let window = u(&report["window"]);
    assert_eq!(window, 64000);
    let threshold = u(&report["threshold"]);
    assert!(threshold < window);

    let compactions = report["compactions"].as_array().unwrap();
    assert!(!compactions.is_empty(), "no compaction fired");
    assert_eq!(compactions.len() as u64, u(&report["compaction_count"]));
    assert_eq!(u(&report["cache_breaks"]), u(&report["compaction_count"]));
    let mut last = None;
    for c in compactions {
        assert_eq!(c["method"], "digest");
        assert!(u(&c["tokens_before"]) >= threshold, "{c}");
        assert!(u(&c["tokens_after"]) < u(&c["tokens_before"]), "{c}");
        let at = u(&c["at_message"]);
        assert!(last.is_none_or(|l| at > l), "compactions out of order");
        assert!(at < u(&report["messages"]));
        last = Some(at);
    }

    let sim = &report["simulated"];
    let base = &report["baseline"];
    assert_eq!(u(&sim["turns_over_window"]), 0);
    assert!(u(&sim["peak_context"]) <= window);
    assert!(u(&base["turns_over_window"]) > 0);
    assert!(u(&base["peak_context"]) > window);
    assert!(u(&sim["input_tokens_billed"]) < u(&base["input_tokens_billed"]));
    assert!(u(&sim["input_tokens_billed"]) > 0);
    assert!(u(&report["assistant_turns"]) > 0);

    // Read only: the session file is untouched.
    assert_eq!(std::fs::read(dir.path().join(session)).unwrap(), before);
}

#[test]
fn swe_session_summary_under_a_small_window() {
    let dir = tempfile::tempdir().unwrap();
    let session = imported(dir.path(), SWE, "swe.jsonl");
    let output = abridge_in(
        dir.path(),
        &["simulate", session, "--window", "5000", "--no-timings"],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    insta::assert_snapshot!(stdout(&output));
}

#[test]
fn timings_are_a_column_unless_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    let session = imported(dir.path(), SWE, "swe.jsonl");
    let with = stdout(&abridge_in(
        dir.path(),
        &["simulate", session, "--window", "5000"],
    ));
    assert!(with.lines().any(|l| l.trim_end().ends_with("ms")), "{with}");
    let without = stdout(&abridge_in(
        dir.path(),
        &["simulate", session, "--window", "5000", "--no-timings"],
    ));
    assert!(!without.contains(" ms"), "{without}");
}

#[test]
fn missing_session_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let output = abridge_in(dir.path(), &["simulate", "nowhere.jsonl"]);
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(error.contains("nowhere.jsonl"), "{error}");
    assert!(error.contains("no such file"), "{error}");
}

#[test]
fn another_agents_file_says_to_import_it() {
    let dir = tempfile::tempdir().unwrap();
    let output = abridge_in(dir.path(), &["simulate", sample(PI).to_str().unwrap()]);
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(error.contains("abridge import"), "{error}");
    assert!(error.contains(PI), "{error}");
}

#[test]
fn keep_at_or_above_threshold_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let session = imported(dir.path(), SWE, "swe.jsonl");
    let output = abridge_in(
        dir.path(),
        &["simulate", session, "--window", "8000", "--keep", "7000"],
    );
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(error.contains("--keep 7000"), "{error}");
    assert!(error.contains("threshold"), "{error}");
    assert!(stdout(&output).is_empty());
}

#[test]
fn unknown_method_lists_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let session = imported(dir.path(), SWE, "swe.jsonl");
    let output = abridge_in(
        dir.path(),
        &["simulate", session, "--method", "digest,magic"],
    );
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(error.contains("\"magic\""), "{error}");
    assert!(error.contains("digest"), "{error}");
}

/// Every bundled sample under a window small enough to force several
/// passes, with the default method order (what a Harness runs): no turn
/// over the window, no loop (the breaker bounds failed passes), and the
/// simulated session's invariants hold.
#[test]
fn every_sample_under_a_small_window_stays_under_it_without_looping() {
    let samples = [
        // Windows at least as large as each sample's largest single unit
        // (a unit larger than the window cannot be compacted below it),
        // and for Claude Code, large enough for the 42k of system prompt
        // and tools its usage reports show beside the threshold.
        (SWE, "swe.jsonl", "6000"),
        (PI, "pi.jsonl", "16000"),
        (
            "claude-code__spotter__4d5611e5.jsonl",
            "claude.jsonl",
            "100000",
        ),
    ];
    for (name, out, window) in samples {
        let dir = tempfile::tempdir().unwrap();
        let session = imported(dir.path(), name, out);
        let output = abridge_in(
            dir.path(),
            &[
                "simulate", session, "--window", window, "--model", "gpt-4o", "--json",
            ],
        );
        assert!(output.status.success(), "{name}: {}", stderr(&output));
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        let sim = &report["simulated"];
        assert!(u(&report["compaction_count"]) >= 2, "{name}: {report}");
        assert_eq!(u(&sim["turns_over_window"]), 0, "{name}: {report}");
        assert!(
            report["failed_attempts"].as_array().unwrap().len() <= 3,
            "{name}: more failed passes than the breaker allows: {report}"
        );
        assert_eq!(report["violations"], serde_json::json!([]), "{name}");
    }
}

/// Issue 13, point 6: `simulate` reports mask beside prune and digest on
/// every bundled sample. Each run is the same replay under a 64k window
/// with one method; mask must keep every replay inside the window wherever
/// it lands, and bill no more than the replay without compaction. Prints
/// the table docs/pruning.md quotes (`-- --nocapture`).
#[test]
fn mask_beside_prune_and_digest_on_every_sample() {
    let dir = tempfile::tempdir().unwrap();
    let samples = [
        (abridge_test_support::samples::CLAUDE, "claude.jsonl"),
        (abridge_test_support::samples::CODEX, "codex.jsonl"),
        (PI, "pi.jsonl"),
        (SWE, "swe.jsonl"),
    ];
    println!(
        "| sample | baseline billed | prune billed | mask billed | digest billed | mask / prune | mask / digest | mask compactions |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (name, out) in samples {
        let session = imported(dir.path(), name, out);
        let run = |method: &str| -> serde_json::Value {
            let output = abridge_in(
                dir.path(),
                &[
                    "simulate", session, "--window", "64000", "--method", method, "--json",
                ],
            );
            assert!(
                output.status.success(),
                "{name} {method}: {}",
                stderr(&output)
            );
            serde_json::from_slice(&output.stdout).unwrap()
        };
        let (prune, mask, digest) = (run("prune"), run("mask"), run("digest"));
        let billed = |r: &serde_json::Value| u(&r["simulated"]["input_tokens_billed"]);
        let baseline = u(&mask["baseline"]["input_tokens_billed"]);
        assert!(billed(&mask) <= baseline, "{name}: mask billed more");
        for c in mask["compactions"].as_array().unwrap() {
            assert_eq!(c["method"], "mask", "{name}: {c}");
            assert!(u(&c["tokens_after"]) < u(&c["tokens_before"]), "{c}");
        }
        assert!(mask["violations"].as_array().unwrap().is_empty(), "{name}");
        println!(
            "| {name} | {baseline} | {} | {} | {} | {:.2} | {:.2} | {} |",
            billed(&prune),
            billed(&mask),
            billed(&digest),
            billed(&mask) as f64 / billed(&prune).max(1) as f64,
            billed(&mask) as f64 / billed(&digest).max(1) as f64,
            u(&mask["compaction_count"]),
        );
    }
}

/// Issue 27, point 6: the replay stripped the usage reports and carried
/// no overhead, so on the Claude Code session at a 40k window it ran 15
/// passes blind to the 42k of system prompt and tools that make the
/// threshold (23,616) unreachable. It carries the source's overhead, says
/// once that nothing can help, and runs no pass.
#[test]
fn a_fixed_part_above_the_threshold_is_said_once_and_nothing_runs() {
    let dir = tempfile::tempdir().unwrap();
    let session = imported(
        dir.path(),
        abridge_test_support::samples::CLAUDE,
        "cc.jsonl",
    );
    let args = [
        "simulate",
        session,
        "--window",
        "40000",
        "--model",
        "claude-sonnet-4-5",
    ];
    let output = abridge_in(dir.path(), &[&args[..], &["--json"]].concat());
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(u(&report["compaction_count"]), 0, "{report}");
    assert!(report["failed_attempts"].as_array().unwrap().is_empty());
    let fixed = &report["fixed_above_threshold"];
    assert!(u(&fixed["fixed"]) > u(&report["threshold"]), "{report}");
    // The baseline carries the same overhead: stats' figure for the log.
    assert!(u(&report["baseline"]["peak_context"]) > u(&fixed["fixed"]));
    let human = stdout(&abridge_in(dir.path(), &args));
    assert_eq!(
        human.matches("no compaction can help").count(),
        1,
        "{human}"
    );
}
