//! `abridge report` as a user runs it: real bundled sessions compacted and
//! reported, a hand-built session snapshotted, hostile text escaped, and
//! bad input named in the error.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::path::PathBuf;
use std::process::Output;

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_session::Draft;
use abridge_session::Header;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::Session;
use abridge_test_support::cli::Cli;
use abridge_test_support::cli::assert_ok;
use abridge_test_support::cli::stderr;
use abridge_test_support::samples::CLAUDE;
use abridge_test_support::samples::SWE;
use abridge_test_support::samples::sample;

fn cli() -> Cli {
    Cli::new(env!("CARGO_BIN_EXE_abridge"))
}

fn abridge(args: &[&str]) -> Output {
    cli().run(args)
}

fn import(dir: &Path, name: &str) -> PathBuf {
    cli().import(dir, name)
}

/// The SWE-agent sample imported into `dir` and compacted once with
/// digest under a small window, so its page has a checkpoint to show.
fn digested_swe(dir: &Path) -> PathBuf {
    let session = import(dir, SWE);
    assert_ok(&abridge(&[
        "compact",
        session.to_str().unwrap(),
        "--method",
        "digest",
        "--window",
        "8000",
        "--keep",
        "1500",
    ]));
    session
}

fn report(session: &Path, extra: &[&str]) -> String {
    let html = session.with_extension("html");
    let mut args = vec![
        "report",
        session.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    assert_ok(&abridge(&args));
    std::fs::read_to_string(html).unwrap()
}

/// Every `call_...` id the SWE-agent trajectory's tool calls carry.
fn source_call_ids() -> Vec<String> {
    fn walk(value: &serde_json::Value, out: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                if let Some(calls) = map.get("tool_calls").and_then(|c| c.as_array()) {
                    for call in calls {
                        if let Some(id) = call.get("id").and_then(|i| i.as_str()) {
                            out.push(id.to_string());
                        }
                    }
                }
                map.values().for_each(|v| walk(v, out));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let text = std::fs::read_to_string(sample(SWE)).unwrap();
    let mut ids = Vec::new();
    walk(&serde_json::from_str(&text).unwrap(), &mut ids);
    ids.sort();
    ids.dedup();
    ids
}

#[test]
fn digest_compacted_swe_session_reports_divider_chart_calls_and_hidden() {
    let dir = tempfile::tempdir().unwrap();
    let session = digested_swe(dir.path());
    let html = report(&session, &[]);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("checkpoint by digest: "), "no divider");
    assert!(html.contains("<svg"));
    assert!(html.contains("class=\"threshold\""));
    assert!(html.contains("class=\"compaction\""));
    let ids = source_call_ids();
    assert!(ids.len() >= 9, "{ids:?}");
    for id in &ids {
        assert!(html.contains(id.as_str()), "call id {id} missing");
    }
    assert!(html.contains("class=\"msg role-user hidden\""));
    assert!(html.contains("hidden by checkpoint at"));
    // No external assets and nothing to run.
    assert!(!html.contains("<script"));
    assert!(!html.contains("src=\"http"));
    assert!(!html.contains("<link"));
}

#[test]
fn snapcompact_claude_session_shows_its_frames() {
    let dir = tempfile::tempdir().unwrap();
    let session = import(dir.path(), CLAUDE);
    let compacted = abridge(&[
        "compact",
        session.to_str().unwrap(),
        "--method",
        "snapcompact",
        "--model",
        "claude-sonnet-4-5",
        // Large enough for the 42k of system prompt and tools the
        // session's usage reports show beside the threshold.
        "--window",
        "100000",
    ]);
    // Landed, though short of the pass's goal (exit 3): the frames are
    // what this test looks at.
    assert!(
        matches!(compacted.status.code(), Some(0 | 3)),
        "{}",
        stderr(&compacted)
    );
    let html = report(&session, &["--model", "claude-sonnet-4-5"]);
    assert!(html.contains("checkpoint by snapcompact: "));
    assert!(html.contains("<img class=\"frame\""));
    assert!(html.contains("data:image/png;base64,"));
}

/// `report --json` names the page and its size, and its figures are the
/// ones `stats` gives for the same session and model.
#[test]
fn json_names_the_page_and_agrees_with_stats() {
    let dir = tempfile::tempdir().unwrap();
    let session = digested_swe(dir.path());
    let path = session.to_str().unwrap();
    let html = session.with_extension("html");
    let output = abridge(&[
        "report",
        path,
        "-o",
        html.to_str().unwrap(),
        "--model",
        "gpt-4o",
        "--json",
    ]);
    assert_ok(&output);
    let written: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(written["out"], html.to_str().unwrap());
    assert_eq!(
        written["bytes"].as_u64(),
        Some(std::fs::metadata(&html).unwrap().len())
    );
    assert_eq!(written["session"], path);
    assert_eq!(written["model"], "gpt-4o");
    assert_eq!(written["checkpoints"], 1);

    let stats = abridge(&["stats", path, "--model", "gpt-4o", "--json"]);
    assert_ok(&stats);
    let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
    for key in [
        "events",
        "messages_by_role",
        "surface_messages",
        "checkpoints",
        "rewrites",
    ] {
        assert_eq!(written[key], stats[key], "{key}");
    }
    assert_eq!(written["window"], stats["context_window"]);
    assert_eq!(written["tokens"], stats["tokens"]["measure"]["tokens"]);
    let by_role: u64 = written["messages_by_role"]
        .as_object()
        .unwrap()
        .values()
        .map(|n| n.as_u64().unwrap())
        .sum();
    assert_eq!(written["messages"].as_u64(), Some(by_role));
    assert!(written["threshold"].as_u64() < written["window"].as_u64());
    // The page's head says the same.
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains(&format!(
            "<tr><td>events</td><td>{}</td></tr>",
            written["events"]
        )),
        "events row"
    );
}

fn checkpoint_meta(method: &str) -> Meta {
    Meta {
        origin: Some(Origin::Checkpoint {
            compaction_id: "c1".into(),
            method: method.into(),
        }),
        ..Meta::default()
    }
}

/// A small session touching every kind of event the page draws, with
/// fixed times so the page is the same on every run.
fn hand_built(path: &Path) {
    let store = JsonlStore::open(path, JsonlOptions::default()).unwrap();
    let mut header = Header::new("hand-built");
    header.created = "2026-01-01T00:00:00Z".into();
    let mut session = Session::create(Box::new(store), header).unwrap();
    let at = |draft: Draft| draft.with_time("2026-01-01T00:00:00Z");
    let call = |id: &str, command: &str| Message {
        role: Role::Assistant,
        content: vec![
            Block::Thinking {
                thinking: "look first".into(),
                signature: None,
            },
            Block::ToolCall {
                id: id.into(),
                name: "bash".into(),
                arguments: serde_json::json!({ "command": command }),
            },
        ],
        meta: Meta::default(),
    };
    let drafts = vec![
        Draft::message(Message::user(
            "please look <script>alert(1)</script> & tell me",
        )),
        Draft::message(call("call_1", "ls")),
        Draft::message(Message::tool_result("call_1", "a.txt\nb.txt", false)),
        Draft::replace(
            Message::user("summary: listed a.txt and b.txt").with_meta(checkpoint_meta("digest")),
            0,
            2,
            vec![0, 1, 2],
        ),
        Draft::log("model_change", serde_json::json!({ "model": "gpt-4o" })),
        Draft::message(call("call_2", "cat a.txt")),
        Draft::message(Message::tool_result(
            "call_2",
            (1..=20).map(|i| format!("line {i}\n")).collect::<String>(),
            false,
        )),
        Draft::log(
            "compaction/start",
            serde_json::json!({ "compaction_id": "c2", "method": "prune" }),
        ),
        Draft::rewrite(Message::tool_result("call_2", "[output pruned]", false), 6),
        Draft::message(Message::assistant("done")),
    ];
    for draft in drafts {
        session.append(at(draft)).unwrap();
    }
}

#[test]
fn hand_built_session_report_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hand.jsonl");
    hand_built(&path);
    let html = report(&path, &["--model", "gpt-4o"]);
    let body = &html[html.find("<body>").unwrap()..];
    let body = body.replace(path.to_str().unwrap(), "SESSION");
    insta::assert_snapshot!(body);
}

#[test]
fn message_text_is_escaped_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hostile.jsonl");
    hand_built(&path);
    let html = report(&path, &["--model", "gpt-4o"]);
    assert!(!html.contains("<script>"));
    assert!(html.contains("please look &lt;script&gt;alert(1)&lt;/script&gt; &amp; tell me"));
}

#[test]
fn missing_session_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.jsonl");
    let out = dir.path().join("out.html");
    let output = abridge(&[
        "report",
        missing.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(!output.status.success());
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(err.contains("nope.jsonl: no such file"), "{err}");
    assert!(!out.exists());
}

#[test]
fn unwritable_output_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hand.jsonl");
    hand_built(&path);
    let out = dir.path().join("no-such-dir").join("out.html");
    let output = abridge(&[
        "report",
        path.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--model",
        "gpt-4o",
    ]);
    assert!(!output.status.success());
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(
        err.contains("cannot write the report to") && err.contains("no-such-dir"),
        "{err}"
    );
}
