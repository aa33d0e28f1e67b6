//! The answer key on small hand-made sessions.

use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Origin;
use serde_json::json;

use super::key::Key;
use super::key::definitions;
use super::key::derive;
use super::probe::Category;
use abridge_compact_basic::is_build_or_test;
use abridge_compact_basic::is_rule;

fn texts(key: &Key, category: Category) -> Vec<String> {
    key.of(category).map(|p| p.text.clone()).collect()
}

fn call(id: &str, name: &str, arguments: serde_json::Value) -> Message {
    Message::tool_call(id, name, arguments)
}

fn result(id: &str, text: &str, is_error: bool) -> Message {
    Message::tool_result(id, text, is_error)
}

fn injected(text: &str, source: &str) -> Message {
    Message::user(text).with_meta(Meta {
        origin: Some(Origin::Injected {
            source: source.into(),
        }),
        ..Meta::default()
    })
}

/// A small session of every kind of fact.
fn session() -> Vec<Message> {
    vec![
        injected(
            "# AGENTS.md instructions for /w\n\n- Run cargo fmt before every commit.\n- Keep modules under 600 lines.\nSee the docs.",
            "agents-md",
        ),
        Message::user("Fix the parser so nested lists work. Never push to main."),
        call("1", "read", json!({"path": "src/lex.rs"})),
        result("1", "fn lex() {}", false),
        call(
            "2",
            "edit",
            json!({"file_path": "/w/app/src/parse.rs", "old_string": "x", "new_string": "pub fn parse_nested_list(input: &str) {}\nstruct ListFrame;"}),
        ),
        result("2", "ok", false),
        call(
            "3",
            "bash",
            json!({"command": "cargo test -p parser\necho done"}),
        ),
        result(
            "3",
            "running 3 tests\nerror: test nested_lists failed\nExit code: 101",
            false,
        ),
        Message::assistant("The nested test still fails; looking at the frame stack."),
        Message::user("<system-reminder>3 todos</system-reminder>"),
        Message::user("Also add a test for empty lists."),
        call(
            "4",
            "TodoWrite",
            json!({"todos": [
                {"content": "Add the empty list test", "status": "in_progress"},
                {"content": "Fix nested lists", "status": "completed"}
            ]}),
        ),
        result("4", "ok", false),
    ]
}

#[test]
fn the_task_is_the_first_and_the_latest_request() {
    let key = derive(&session());
    assert_eq!(
        texts(&key, Category::Task),
        [
            "Fix the parser so nested lists work. Never push to main.",
            "Also add a test for empty lists."
        ]
    );
}

#[test]
fn constraints_come_from_rule_sentences_and_instruction_files() {
    let key = derive(&session());
    assert_eq!(
        texts(&key, Category::Constraints),
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
fn files_read_and_changed_are_kept_apart() {
    let key = derive(&session());
    assert_eq!(texts(&key, Category::FilesChanged), ["/w/app/src/parse.rs"]);
    assert_eq!(texts(&key, Category::FilesRead), ["src/lex.rs"]);
    // A summary names the file relative to the project: the needle is
    // the path's last two components.
    let changed = key.of(Category::FilesChanged).next().unwrap();
    assert_eq!(changed.needle, "srcparsers");
}

#[test]
fn the_last_error_is_the_failing_command_and_its_line() {
    let key = derive(&session());
    assert_eq!(
        texts(&key, Category::LastError),
        ["cargo test -p parser", "error: test nested_lists failed"]
    );
    assert_eq!(texts(&key, Category::Commands), ["cargo test -p parser"]);
}

#[test]
fn identifiers_are_the_names_written_and_open_items_the_unfinished() {
    let key = derive(&session());
    assert_eq!(
        texts(&key, Category::Identifiers),
        ["parse_nested_list", "ListFrame"]
    );
    // The latest request's turn had not ended, and one plan item is open.
    assert_eq!(
        texts(&key, Category::OpenItems),
        [
            "Also add a test for empty lists.",
            "Add the empty list test"
        ]
    );
}

#[test]
fn an_answered_request_is_not_open() {
    let mut messages = session();
    messages.truncate(11);
    messages.push(Message::assistant("Added the test; it passes."));
    let key = derive(&messages);
    assert!(texts(&key, Category::OpenItems).is_empty());
}

#[test]
fn patches_name_their_files_and_added_definitions() {
    let key = derive(&[
        Message::user("Rename the loader."),
        call(
            "1",
            "apply_patch",
            json!({"input": "*** Begin Patch\n*** Update File: src/load.rs\n@@\n-fn old_loader() {}\n+fn stream_loader() {}\n*** End Patch"}),
        ),
        result("1", "Done", false),
    ]);
    assert_eq!(texts(&key, Category::FilesChanged), ["src/load.rs"]);
    assert_eq!(texts(&key, Category::Identifiers), ["stream_loader"]);
}

#[test]
fn definers_and_commands_are_recognised() {
    assert_eq!(
        definitions("defmodule Spotter.Beads do\n  defp parse_line(x)"),
        ["Spotter.Beads", "parse_line"]
    );
    assert!(is_build_or_test("cd app && mix test test/foo_test.exs"));
    assert!(is_build_or_test("cargo clippy -p x"));
    assert!(!is_build_or_test("git commit -m 'makefile'"));
    assert!(!is_build_or_test("ls remake/"));
}
