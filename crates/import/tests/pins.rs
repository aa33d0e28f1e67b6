//! Instruction files the importers pin (issue 32, item 3): Claude Code's
//! CLAUDE.md reminders and Codex's AGENTS.md, on the bundled sessions and
//! on small hand-written ones, with the log still passing every check.

#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::Path;

use abridge_import as import;
use abridge_session::MemoryStore;
use abridge_session::Session;
use abridge_session::dangling_tool_calls;

mod support;

use support::*;

fn imported(path: &Path) -> Session {
    import::read(path, None)
        .unwrap()
        .into_session(Box::new(MemoryStore::new()))
        .unwrap()
        .0
}

fn written(lines: &[serde_json::Value]) -> tempfile::NamedTempFile {
    let mut file = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .unwrap();
    for line in lines {
        writeln!(file, "{line}").unwrap();
    }
    file
}

/// The bundled Codex rollout is redacted: its AGENTS.md message is a
/// placeholder no marker can read, but every `turn_context` carries the
/// instructions, and the first one is pinned, once.
#[test]
fn the_bundled_codex_rollout_pins_its_user_instructions_once() {
    let session = imported(&sample(CODEX));
    let pins = session.pins();
    assert_eq!(pins.len(), 1, "{pins:#?}");
    assert_eq!(pins[0].pin.origin, "codex-user-instructions");
    assert!(
        pins[0]
            .text
            .starts_with("[REDACTED_USER_INSTRUCTIONS len=2926"),
        "{}",
        pins[0].text
    );
    assert!(session.pin_faults().is_empty());
    assert!(dangling_tool_calls(&session).is_empty());
}

/// The bundled Claude Code session carries no CLAUDE.md reminder (the
/// file has no `claudeMd` block), so nothing is pinned.
#[test]
fn the_bundled_claude_session_has_no_claude_md_to_pin() {
    let raw = std::fs::read_to_string(sample(CLAUDE)).unwrap();
    assert!(!raw.contains("claudeMd") && !raw.contains("system-reminder"));
    assert!(imported(&sample(CLAUDE)).pins().is_empty());
}

const REMINDER: &str = "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# claudeMd\nCodebase and user instructions are shown below.\n\nContents of /home/dev/calc/CLAUDE.md (project instructions, checked into the codebase):\n\nNever push to main.\n</system-reminder>";

/// Claude Code's reminder rides in the user's first request as a block of
/// its own: that block is pinned, the request stays the user's.
#[test]
fn a_claude_md_reminder_block_is_pinned_and_the_request_stays_the_users() {
    let line = |kind: &str, uuid: &str, parent: Option<&str>, message: serde_json::Value| {
        serde_json::json!({"parentUuid": parent, "type": kind, "sessionId": "s1",
            "cwd": "/home/dev/calc", "uuid": uuid, "timestamp": "2025-05-06T10:00:00.000Z",
            "message": message})
    };
    let file = written(&[
        line(
            "user",
            "u-1",
            None,
            serde_json::json!({"role": "user", "content": [
                {"type": "text", "text": REMINDER},
                {"type": "text", "text": "fix the build"}]}),
        ),
        line(
            "assistant",
            "a-1",
            Some("u-1"),
            serde_json::json!({"id": "m1", "type": "message", "role": "assistant",
                "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "On it."}]}),
        ),
    ]);
    let session = imported(file.path());
    let pins = session.pins();
    assert_eq!(pins.len(), 1, "{pins:#?}");
    assert_eq!(pins[0].pin.origin, "claude-md");
    assert_eq!(pins[0].pin.block, Some(0));
    assert_eq!(
        pins[0].pin.label.as_deref(),
        Some("/home/dev/calc/CLAUDE.md")
    );
    assert_eq!(pins[0].text, REMINDER);
    assert!(pins[0].visible);
    let user = session.message(pins[0].pin.seq.unwrap()).unwrap();
    assert_eq!(user.meta.origin, Some(abridge_llm::Origin::User));
    // The reply hangs off the pin, so the pin is on the active path.
    assert_eq!(session.surface().len(), 2);
}

/// A Codex AGENTS.md message is pinned whole, and the `turn_context` copy
/// of the same instructions is then not pinned again.
#[test]
fn a_codex_agents_md_message_is_pinned_and_turn_context_adds_nothing() {
    let agents =
        "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nRun cargo fmt.\n</INSTRUCTIONS>";
    let at = "2026-02-23T11:54:52.353Z";
    let file = written(&[
        serde_json::json!({"timestamp": at, "type": "session_meta",
            "payload": {"id": "s1", "timestamp": at, "cwd": "/w"}}),
        serde_json::json!({"timestamp": at, "type": "response_item", "payload": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": agents}]}}),
        serde_json::json!({"timestamp": at, "type": "turn_context", "payload": {
            "model": "gpt-5", "user_instructions": "Run cargo fmt."}}),
        serde_json::json!({"timestamp": at, "type": "response_item", "payload": {
            "type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "tidy the repo"}]}}),
    ]);
    let session = imported(file.path());
    let pins = session.pins();
    assert_eq!(pins.len(), 1, "{pins:#?}");
    assert_eq!(pins[0].pin.origin, "agents-md");
    assert_eq!(pins[0].pin.label.as_deref(), Some("/w/AGENTS.md"));
    assert_eq!(pins[0].text, agents);
}
