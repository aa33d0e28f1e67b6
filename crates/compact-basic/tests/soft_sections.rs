//! `soft` checks the model's summary for the sections its prompt asks
//! for, and fills the missing ones from digest's model-free reading of the
//! same span rather than refusing the summary; the checkpoint's soft
//! record names the sections filled.

// Test helpers outside #[test] functions unwrap too: a failure is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use abridge_compact::host::*;
use abridge_compact::*;
use abridge_compact_basic::*;
use abridge_llm::Message;
use abridge_session::Session;
use abridge_test_support::scripted::ScriptedClient;
use abridge_test_support::scripted::Step;
use abridge_test_support::scripted::text_reply;
use pretty_assertions::assert_eq;

/// Two finished turns, then a short last one kept verbatim: the hidden
/// span holds a rule, a changed file, a file only read, and two test
/// commands (the first failing).
fn session() -> Session {
    let mut s = Session::in_memory("soft-sections");
    let calls: [(&str, &str, serde_json::Value, String); 4] = [
        (
            "c1",
            "read",
            serde_json::json!({"path": "/p/src/lexer.rs"}),
            "fn lex() {} ".repeat(100),
        ),
        (
            "c2",
            "edit",
            serde_json::json!({"path": "/p/src/parser.rs", "oldText": "a", "newText": "fn parse_list() {}"}),
            "edited ".repeat(80),
        ),
        (
            "c3",
            "bash",
            serde_json::json!({"command": "cargo test -p parser"}),
            format!(
                "{}\ntest result: FAILED\nexit code: 101",
                "running ".repeat(80)
            ),
        ),
        (
            "c4",
            "bash",
            serde_json::json!({"command": "cargo build"}),
            "ok ".repeat(60),
        ),
    ];
    s.append_message(Message::user(
        "Make the parser accept trailing commas. Never change the public API.",
    ))
    .unwrap();
    for (id, name, arguments, result) in calls {
        s.append_message(Message::tool_call(id, name, arguments))
            .unwrap();
        s.append_message(Message::tool_result(id, result, false))
            .unwrap();
    }
    s.append_message(Message::assistant("The parser now takes trailing commas."))
        .unwrap();
    s.append_message(Message::user("Thanks, now the docs."))
        .unwrap();
    s.append_message(Message::assistant("Docs next.")).unwrap();
    s
}

/// Compacts `session()` with soft, the model answering `summary`; the
/// checkpoint's text and the sections its record says were filled.
fn compact_with(summary: &str) -> (String, Vec<String>, usize) {
    let mut session = session();
    let client = ScriptedClient::new(vec![Step::Reply(Box::new(text_reply(summary)))])
        .fallback("## Goal\nan unplanned call")
        .shared();
    let method: Arc<dyn CompactionMethod> = Arc::new(SoftMethod::new(Arc::new(
        LlmSummarizer::new(client.clone(), "m-1"),
    )));
    let policy = Policy::default().with_keep_recent_tokens(20);
    let outcome = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(compact_session(
            &mut session,
            &method,
            &policy,
            Trigger::Manual,
        ))
        .unwrap();
    let data = summary_of_checkpoint(&session, outcome.checkpoint_seq.unwrap()).unwrap();
    let record = data.details.get::<SoftRecord>().unwrap().unwrap();
    (data.summary, record.filled, client.requests().len())
}

const COMPLETE: &str = "## Goal\nTrailing commas.\n\n## Constraints\n- Never change the public API.\n\n## Progress\nDone.\n\n## Next steps\n- docs\n\n## Files changed\n- src/parser.rs\n\n## Files read\n- src/lexer.rs\n\n## Build and test\n- `cargo test -p parser`";

/// The short summary the model adds: parsed out of the summary's text.
const IN_SHORT: &str = "\n\n## In short\nParser done.";

#[test]
fn a_summary_with_every_section_is_kept_as_written() {
    let (summary, filled, calls) = compact_with(&format!("{COMPLETE}{IN_SHORT}"));
    assert_eq!(calls, 1);
    assert!(filled.is_empty(), "{filled:?}");
    assert_eq!(summary, COMPLETE);
}

#[test]
fn missing_sections_are_filled_from_the_history_and_named() {
    let partial = "## Goal\nTrailing commas.\n\n## Constraints\nnone\n\n## Next steps\n- docs\n\n## Files changed\n- src/parser.rs";
    let (summary, filled, _) = compact_with(&format!("{partial}{IN_SHORT}"));
    assert_eq!(filled, ["Files read", "Build and test"]);
    assert!(summary.starts_with(partial), "{summary}");
    assert!(
        summary.contains("## Files read\n- /p/src/lexer.rs: "),
        "{summary}"
    );
    assert!(
        summary.contains(
            "## Build and test\n- `cargo test -p parser` (last run failed)\n- `cargo build`\n"
        ),
        "{summary}"
    );
    // A section the model wrote is not written twice.
    assert_eq!(summary.matches("## Files changed").count(), 1, "{summary}");
}

#[test]
fn a_summary_with_no_sections_gets_all_of_them_from_the_history() {
    let (summary, filled, _) = compact_with("ok ok ok, the parser is fine I think");
    assert_eq!(
        filled,
        [
            "Goal",
            "Constraints",
            "Files changed",
            "Files read",
            "Build and test",
            "Next steps"
        ]
    );
    assert!(
        summary.contains("## Goal\nMake the parser accept trailing commas."),
        "{summary}"
    );
    assert!(
        summary.contains("## Constraints\n- Never change the public API."),
        "{summary}"
    );
    assert!(
        summary.contains("## Files changed\n- /p/src/parser.rs [parse_list]: "),
        "{summary}"
    );
    // Nothing to say is said, so the section is still there.
    assert!(summary.contains("## Next steps\nnone\n"), "{summary}");
}
