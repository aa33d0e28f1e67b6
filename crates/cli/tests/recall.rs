//! `abridge recall` as a user runs it: after a digest compaction of a real
//! sample, `--toc` lists what is hidden, `--query` finds it, `--ref` reads
//! it back exactly, each with `--json`; bad input names what was wrong.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use abridge_test_support::cli::Cli;
use abridge_test_support::cli::stderr;
use abridge_test_support::cli::stdout;
use abridge_test_support::samples::SWE;

fn cli() -> Cli {
    Cli::new(env!("CARGO_BIN_EXE_abridge"))
}

#[test]
fn toc_query_and_ref_after_a_digest() {
    let dir = tempfile::tempdir().unwrap();
    let session = cli().import(dir.path(), SWE);
    let path = session.to_str().unwrap();
    let compacted = cli().run(&[
        "compact", path, "--method", "digest", "--window", "8000", "--keep", "1500",
    ]);
    assert!(compacted.status.success(), "{}", stderr(&compacted));

    let toc = cli().run(&["recall", path, "--toc", "--json"]);
    assert!(toc.status.success(), "{}", stderr(&toc));
    let entries: serde_json::Value = serde_json::from_slice(&toc.stdout).unwrap();
    let first_turn = &entries[0]["turns"][0];
    let range = first_turn["reference"].as_str().unwrap().to_string();
    assert!(range.starts_with("recall://"), "{entries}");

    let read = cli().run(&["recall", path, "--ref", &range, "--json"]);
    assert!(read.status.success(), "{}", stderr(&read));
    let page: serde_json::Value = serde_json::from_slice(&read.stdout).unwrap();
    let text = page["text"].as_str().unwrap();
    assert!(text.contains("--- recall://"), "{text}");

    // A word of the hidden text is found again.
    let word = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .find(|w| w.len() >= 10 && w.contains('_'))
        .unwrap_or("marshmallow");
    let found = cli().run(&["recall", path, "--query", word, "--json"]);
    assert!(found.status.success(), "{}", stderr(&found));
    let hits: Vec<serde_json::Value> = serde_json::from_slice(&found.stdout).unwrap();
    assert!(!hits.is_empty(), "{word} not found");
    let plain = cli().run(&["recall", path, "--query", word]);
    assert!(
        stdout(&plain).starts_with("1. recall://"),
        "{}",
        stdout(&plain)
    );
}

#[test]
fn bad_input_names_what_was_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let session = cli().import(dir.path(), SWE);
    let path = session.to_str().unwrap();
    let bad = cli().run(&["recall", path, "--ref", "recall://x"]);
    assert!(!bad.status.success());
    assert!(
        stderr(&bad).contains("--ref recall://x"),
        "{}",
        stderr(&bad)
    );
    assert!(stderr(&bad).contains("is not a number"), "{}", stderr(&bad));
    let missing = cli().run(&["recall", path, "--ref", "recall://99999999"]);
    assert!(
        stderr(&missing).contains("there is no recall://99999999"),
        "{}",
        stderr(&missing)
    );
    let none = cli().run(&["recall", path]);
    assert!(!none.status.success());
    let empty = cli().run(&["recall", path, "--query", "..."]);
    assert!(
        stderr(&empty).contains("the query is empty"),
        "{}",
        stderr(&empty)
    );
}
