use std::sync::Arc;

use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Origin;
use serde_json::json;

use super::*;

fn shared(message: Message) -> SharedMessage {
    Arc::new(message)
}

fn work() -> WorkLog {
    let messages = [
        Message::user("# AGENTS.md instructions for /w\n\n- Run cargo fmt before every commit.\n- Keep modules under 600 lines.\nSee the docs.").with_meta(Meta {
            origin: Some(Origin::Injected { source: "agents-md".into() }),
            ..Meta::default()
        }),
        Message::user("Fix the parser so nested lists work. Never push to main."),
        Message::tool_call("1", "read", json!({"path": "/w/src/lex.rs", "offset": 10, "limit": 20})),
        Message::tool_result("1", "fn lex() {}", false),
        Message::tool_call("2", "edit", json!({"file_path": "/w/src/parse.rs", "old_string": "fn old() {}", "new_string": "pub fn parse_nested_list(input: &str) {}\nstruct ListFrame;"})),
        Message::tool_result("2", "ok", false),
        Message::tool_call("3", "bash", json!({"command": "cargo test -p parser\necho done"})),
        Message::tool_result("3", "error: test nested_lists failed\nExit code: 101", false),
        Message::tool_call("4", "TodoWrite", json!({"todos": [
            {"content": "Add the empty list test", "status": "in_progress"},
            {"content": "Fix nested lists", "status": "completed"}
        ]})),
        Message::tool_result("4", "ok", false),
    ];
    let messages: Vec<SharedMessage> = messages.into_iter().map(shared).collect();
    let mut work = WorkLog::default();
    work.absorb(&messages);
    work
}

#[test]
fn rules_come_from_the_users_sentences_and_instruction_files() {
    assert_eq!(
        work().constraints,
        [
            "Run cargo fmt before every commit.",
            "Keep modules under 600 lines.",
            "Never push to main."
        ]
    );
    assert!(is_rule("Tests must pass before you stop."));
    assert!(!is_rule("Fix the parser."));
}

#[test]
fn a_changed_file_keeps_its_symbols_and_last_change() {
    let work = work();
    assert_eq!(
        work.changed,
        [FileChange {
            path: "/w/src/parse.rs".into(),
            symbols: vec!["parse_nested_list".into(), "ListFrame".into()],
            last: "replaced `fn old() {}` with `pub fn parse_nested_list(input: &str) {}`".into(),
        }]
    );
}

#[test]
fn a_read_file_keeps_the_version_seen_and_checks_their_outcome() {
    let work = work();
    assert_eq!(
        work.read,
        [FileSeen {
            path: "/w/src/lex.rs".into(),
            chars: 11,
            hash: fnv("fn lex() {}"),
            lines: Some("10-29".into()),
        }]
    );
    assert_eq!(
        work.checks,
        [Check {
            command: "cargo test -p parser".into(),
            failed: true
        }]
    );
    assert_eq!(work.plan, ["Add the empty list test"]);
}

#[test]
fn the_sections_name_every_kept_fact() {
    let work = work();
    let mut out = String::new();
    work.render_constraints(&mut out);
    work.render_work(&mut out);
    assert_eq!(
        out,
        "## Constraints (the user's rules, verbatim)\n\
         - Run cargo fmt before every commit.\n\
         - Keep modules under 600 lines.\n\
         - Never push to main.\n\n\
         (file paths below are relative to /w/src/)\n\n\
         ## Files changed (last change last)\n\
         - parse.rs [parse_nested_list, ListFrame]: replaced `fn old() {}` with `pub fn parse_nested_list(input: &str) {}`\n\n\
         ## Files read (version seen; unchanged since unless listed above)\n\
         - lex.rs: 11 chars, fnv ".to_string()
            + &fnv("fn lex() {}")
            + ", lines 10-29\n\n\
         ## Build and test commands\n\
         - `cargo test -p parser` (last run failed)\n\n\
         ## Plan items not done\n\
         - Add the empty list test\n\n"
    );
}

#[test]
fn lists_are_bounded_to_the_newest() {
    let mut messages = Vec::new();
    for i in 0..(CHANGED_KEPT + 5) {
        let id = format!("w{i}");
        messages.push(shared(Message::tool_call(
            &id,
            "write",
            json!({"path": format!("f{i}.rs"), "content": format!("fn item_{i}() {{}}")}),
        )));
        messages.push(shared(Message::tool_result(&id, "ok", false)));
    }
    let mut work = WorkLog::default();
    work.absorb(&messages);
    assert_eq!(work.changed.len(), CHANGED_KEPT);
    assert_eq!(work.changed[0].path, "f5.rs");
    assert_eq!(work.changed[CHANGED_KEPT - 1].symbols, ["item_24"]);
}

#[test]
fn sentences_end_at_stops_followed_by_space() {
    assert_eq!(
        sentences("Use v1.2 here. Never push to main! ok"),
        ["Use v1.2 here.", "Never push to main!", "ok"]
    );
}
