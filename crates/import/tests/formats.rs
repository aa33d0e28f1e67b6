//! The formats added in issue 16, point 6, on the hand-written fixtures in
//! `tests/data` (see its README for the shapes they follow): aider chat
//! histories, OpenHands trajectories and evaluation output, Claude Code
//! sub-agent transcripts and legacy Codex rollouts.

// Helpers outside `#[test]` functions unwrap too: this whole file is a test.
#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;

use abridge_import as import;
use abridge_import::Format;
use abridge_import::ImportError;
use abridge_import::ImportWarning;
use abridge_import::ReadOptions;
use abridge_llm::Block;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_llm::Usage;
use abridge_session::MemoryStore;
use abridge_session::Session;
use pretty_assertions::assert_eq;
use support::*;

const AIDER: &str = "aider-three-chats.md";
const OPENHANDS: &str = "openhands-trajectory.json";
const OPENHANDS_OUTPUT: &str = "openhands-output.jsonl";
const SUBAGENT: &str = "claude-subagent.jsonl";
const CODEX_LEGACY: &str = "codex-legacy-rollout.jsonl";

/// One line per message on the surface: role, origin and content, tool
/// calls as `call id name`, results as `result id [error]`.
fn shape(session: &Session) -> Vec<String> {
    session
        .surface_messages()
        .iter()
        .map(|m| {
            let origin = match &m.meta.origin {
                Some(Origin::Injected { source }) => format!(" ({source})"),
                Some(Origin::User) | Some(Origin::Tool { .. }) | None => String::new(),
                Some(Origin::Model { provider, model }) => format!(" ({provider}/{model})"),
                Some(Origin::Imported { .. }) => " (imported)".to_string(),
                Some(other) => format!(" ({other:?})"),
            };
            let mut parts = Vec::new();
            for block in &m.content {
                match block {
                    Block::Text { text } => {
                        parts.push(text.lines().next().unwrap_or("").to_string())
                    }
                    Block::Thinking { thinking, .. } => parts.push(format!("thinking {thinking}")),
                    Block::ToolCall { id, name, .. } => parts.push(format!("call {id} {name}")),
                    Block::ToolResult {
                        call_id, is_error, ..
                    } => parts.push(format!(
                        "result {call_id}{}",
                        if *is_error { " error" } else { "" }
                    )),
                    other => parts.push(format!("{other:?}")),
                }
            }
            format!("{}{origin}: {}", m.role, parts.join(" | "))
        })
        .collect()
}

fn read(name: &str, session: Option<usize>) -> Result<import::Imported, ImportError> {
    import::read_with(
        &fixture(name),
        &ReadOptions {
            format: None,
            session,
            ..ReadOptions::default()
        },
    )
}

fn into_session(imported: import::Imported) -> Session {
    imported
        .into_session(Box::new(MemoryStore::new()))
        .unwrap()
        .0
}

#[test]
fn each_fixture_is_detected_by_its_content() {
    let cases = [
        (AIDER, Format::Aider),
        (OPENHANDS, Format::OpenHands),
        (OPENHANDS_OUTPUT, Format::OpenHands),
        (SUBAGENT, Format::ClaudeCode),
        (CODEX_LEGACY, Format::Codex),
    ];
    for (name, format) in cases {
        let bytes = std::fs::read(fixture(name)).unwrap();
        // A neutral name: only the content decides.
        assert_eq!(
            Format::detect(Path::new("session"), &bytes),
            Some(format),
            "{name}"
        );
        assert_eq!(read(name, None).unwrap().report.format, format, "{name}");
    }
}

/// By default the last chat with a message (the third is a banner alone);
/// the reply that is only an edit block, the output after the first
/// request, the request interrupted before a reply and the multi-line
/// output all land where aider wrote them.
#[test]
fn aider_imports_the_last_chat_with_a_message() {
    let imported = read(AIDER, None).unwrap();
    assert_eq!((imported.report.session, imported.report.sessions), (2, 3));
    assert_eq!(imported.header.session_id, "aider-three-chats-2");
    assert_eq!(imported.header.created, "2025-03-02T11:40:51");
    assert_eq!(imported.report.skipped.get("startup output"), Some(&1));
    assert_eq!(imported.report.warnings, Vec::new());
    let session = into_session(imported);
    let model = " (anthropic/claude-3-7-sonnet-20250219)";
    assert_eq!(
        shape(&session),
        [
            "user: add a --shout flag".to_string(),
            format!("assistant{model}: cli.py"),
            "user: /run python cli.py ada --shout".to_string(),
            "user (aider-output): usage: cli.py [-h] name".to_string(),
            "user: and now wire it into greet()".to_string(),
            "user (aider-output): ^C KeyboardInterrupt".to_string(),
            "user: wire --shout into greet()".to_string(),
            format!("assistant{model}: The flag is parsed but never used; pass it through:"),
            "user (aider-output): Applied edit to cli.py".to_string(),
        ]
    );
    let messages = session.surface_messages();
    assert_eq!(
        messages[0].plain_text(),
        "add a --shout flag\nthat upper-cases the greeting"
    );
    // The edit block is the reply, markers included, as the model wrote it.
    let edit = messages[1].plain_text();
    assert!(
        edit.starts_with("cli.py\n```python\n<<<<<<< SEARCH\n"),
        "{edit}"
    );
    assert!(edit.ends_with(">>>>>>> REPLACE\n```"), "{edit}");
    assert_eq!(
        messages[3].plain_text(),
        "usage: cli.py [-h] name\ncli.py: error: unrecognized arguments: --shout\nAdd command output to the chat? (Y)es/(N)o [Yes]: y\nAdded 2 lines of output to the chat."
    );
    assert!(time_of_every_event_is(&session, "2025-03-02T11:40:51"));
}

fn time_of_every_event_is(session: &Session, time: &str) -> bool {
    session.events().iter().all(|e| e.time == time)
}

#[test]
fn aider_session_picks_a_chat_and_names_the_range() {
    let first = into_session(read(AIDER, Some(1)).unwrap());
    assert_eq!(
        shape(&first),
        [
            "user: /add greet.py",
            "user (aider-output): Added greet.py to the chat",
            "user: make greet() take a name and say hello to it",
            "assistant (/gpt-4o): I'll add a `name` parameter and use it in the message.",
            "user (aider-output): Tokens: 2.4k sent, 96 received. Cost: $0.0070 message, $0.0070 session.",
        ]
    );
    let err = read(AIDER, Some(3)).unwrap_err();
    assert!(matches!(err, ImportError::NoMessages { .. }), "{err}");
    let err = read(AIDER, Some(4)).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("aider-three-chats.md: there is no session 4: the file holds 3 sessions; pass --session 1 to 3"),
        "{err}"
    );
    let err = import::read_with(
        &sample(SWE),
        &ReadOptions {
            format: None,
            session: Some(2),
            ..ReadOptions::default()
        },
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .ends_with("there is no session 2: the file holds 1 session; pass --session 1 to 1"),
        "{err}"
    );
}

/// A fence left open by a reply ends at the next request aider wrote, with
/// a warning, instead of swallowing the rest of the chat.
#[test]
fn aider_unclosed_fence_ends_at_the_next_request() {
    let text = "# aider chat started at 2025-01-01 10:00:00\n\n#### show me  \n\nHere:\n```python\nprint(1)\n\n#### thanks  \n\nYou're welcome.\n";
    let imported = import::read_bytes("h.md", text.as_bytes(), None).unwrap();
    assert_eq!(
        imported.report.warnings,
        vec![ImportWarning::Note {
            line: Some(6),
            what: "a code fence or edit block of the reply is not closed before the next request; it ends there".into()
        }]
    );
    let session = into_session(imported);
    assert_eq!(
        shape(&session),
        [
            "user: show me",
            "assistant (imported): Here:",
            "user: thanks",
            "assistant (imported): You're welcome."
        ]
    );
}

// Issue 27, point 8: a real `.aider.chat.history.md` opens with a mode
// line before its first start line. It was not detected, and with
// `--format aider` the mode line became a session of its own: an
// assistant message `-*- mode: fundamental -*-`.
#[test]
fn aider_history_opening_with_a_mode_line_is_detected_and_the_line_left_out() {
    let chats = std::fs::read_to_string(fixture(AIDER)).unwrap();
    let text = format!("-*- mode: fundamental -*-\n\n{chats}");
    assert_eq!(
        Format::detect(Path::new("session"), text.as_bytes()),
        Some(Format::Aider)
    );
    let imported = import::read_bytes_with(
        ".aider.chat.history.md",
        text.as_bytes(),
        &ReadOptions {
            session: Some(1),
            ..ReadOptions::default()
        },
    )
    .unwrap();
    assert_eq!((imported.report.session, imported.report.sessions), (1, 3));
    assert_eq!(
        imported.report.skipped.get("text before the first chat"),
        Some(&1)
    );
    let session = into_session(imported);
    assert_eq!(shape(&session)[0], "user: /add greet.py");
    assert!(
        session
            .surface_messages()
            .iter()
            .all(|m| !m.plain_text().contains("mode: fundamental"))
    );
}

// Issue 27, point 8: console output that starts like a banner's model
// line (`> Models: [...]`) was read as a model change.
#[test]
fn aider_console_output_naming_no_model_changes_no_model() {
    let text = "# aider chat started at 2025-01-01 10:00:00\n\n> Main model: gpt-4o with diff edit format  \n\n#### /models gpt  \n\n> Models: ['gpt-4o', 'gpt-4o-mini']  \n\n#### thanks  \n\nDone.\n";
    let imported = import::read_bytes("h.md", text.as_bytes(), None).unwrap();
    let changes = imported
        .drafts
        .iter()
        .filter(|d| matches!(&d.body, abridge_session::EventBody::Log(log) if log.kind == import::TYPE_MODEL_CHANGE))
        .count();
    assert_eq!(changes, 0);
    let session = into_session(imported);
    assert_eq!(
        shape(&session).last().unwrap(),
        "assistant (/gpt-4o): Done."
    );
}

// Issue 27, point 8: `--format aider` on a pi file gave one event and
// exit 0. A file that reads as another format is refused, naming it.
#[test]
fn a_format_asked_for_that_the_file_is_not_is_refused_naming_the_one_found() {
    let err = import::read(&sample(PI), Some(Format::Aider)).unwrap_err();
    assert!(
        matches!(
            err,
            ImportError::FormatMismatch {
                asked: "aider",
                found: "pi",
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string().ends_with(
            "not an aider file: its content reads as pi; pass --format pi, or leave --format out"
        ),
        "{err}"
    );
    // The format it is, asked for, reads as before.
    assert!(import::read(&sample(PI), Some(Format::Pi)).is_ok());
}

// Issue 27, point 8: there was no way to see the sessions of a file that
// holds several.
#[test]
fn every_session_of_a_multi_session_file_is_handed_on_in_order() {
    let mut seen = Vec::new();
    let count = import::each_session(&fixture(AIDER), &ReadOptions::default(), &mut |i| {
        seen.push((
            i.report.session,
            i.header.created.clone(),
            i.report.message_count(),
        ));
        Ok(())
    })
    .unwrap();
    assert_eq!(count, 3);
    assert_eq!(
        seen,
        [
            (1, "2025-03-02T09:14:05".to_string(), 5),
            (2, "2025-03-02T11:40:51".to_string(), 9),
            (3, "2025-03-03T08:02:17".to_string(), 0),
        ]
    );
    let mut records = Vec::new();
    let count = import::each_session(
        &fixture(OPENHANDS_OUTPUT),
        &ReadOptions::default(),
        &mut |i| {
            records.push((i.report.session, i.header.session_id));
            Ok(())
        },
    )
    .unwrap();
    assert_eq!(count, 2);
    assert_eq!(records.len(), 2);
    assert_eq!((records[0].0, records[1].0), (1, 2));
    // Each is the session `--session N` imports.
    for (n, id) in records {
        assert_eq!(
            read(OPENHANDS_OUTPUT, Some(n)).unwrap().header.session_id,
            id
        );
    }
    let mut one = 0;
    let count = import::each_session(&sample(SWE), &ReadOptions::default(), &mut |_| {
        one += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!((count, one), (1, 1));
}

#[test]
fn openhands_trajectory_maps_responses_calls_results_and_context() {
    let imported = read(OPENHANDS, None).unwrap();
    let report = imported.report.clone();
    assert_eq!((report.session, report.sessions), (1, 1));
    assert_eq!(imported.header.session_id, "openhands-trajectory");
    assert_eq!(imported.header.created, "2025-04-10T09:00:00.000000");
    assert_eq!(
        report
            .skipped
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>(),
        [
            "action/recall 1",
            "observation/agent_state_changed 2",
            "observation/recall (empty) 1",
        ]
    );
    assert_eq!(
        report.warnings,
        vec![ImportWarning::Note {
            line: None,
            what:
                "[11]: observation `error` answers no recorded action (cause 99); kept as context"
                    .into()
        }]
    );
    assert_eq!((report.tool_calls, report.tool_results), (4, 4));
    let (session, _) = import_and_reopen(&fixture(OPENHANDS));
    let model = " (/claude-3-7-sonnet-20250219)";
    assert_eq!(
        shape(&session),
        [
            "system (imported): You are a helpful coding agent.".to_string(),
            "user: Fix the failing test in tests/test_dates.py".to_string(),
            format!("assistant{model}: Let me run the test first. | call toolu_01 execute_bash"),
            "tool: result toolu_01 error".to_string(),
            format!("assistant{model}: call toolu_02 str_replace_editor | call toolu_03 think"),
            "tool: result toolu_02".to_string(),
            "tool: result toolu_03".to_string(),
            "user (observation): The runtime restarted; the previous command's output was lost."
                .to_string(),
            format!("assistant{model}: Swap the fields. | call toolu_04 str_replace_editor"),
            "tool: result toolu_04".to_string(),
            format!("assistant{model}: Fixed: the parser now reads the month before the day."),
        ]
    );
    let messages = session.surface_messages();
    assert_eq!(
        messages[2].meta.usage,
        Some(Usage {
            input: 200,
            output: 80,
            cache_read: 4000,
            cache_write: 1000
        })
    );
    let Block::ToolCall { arguments, .. } = &messages[2].content[1] else {
        panic!("{:?}", messages[2]);
    };
    assert_eq!(
        arguments["command"],
        "python -m pytest tests/test_dates.py -q"
    );
    let (_, content, _) = messages[3].tool_result_block().unwrap();
    assert!(
        content[0]
            .as_text()
            .unwrap()
            .ends_with("day is out of range for month\n[exit code 1]"),
        "{content:?}"
    );
}

#[test]
fn openhands_output_records_are_sessions() {
    let last = read(OPENHANDS_OUTPUT, None).unwrap();
    assert_eq!((last.report.session, last.report.sessions), (2, 2));
    assert_eq!(last.header.session_id, "demo__calc-2");
    assert_eq!(
        last.report.skipped.keys().cloned().collect::<Vec<_>>(),
        [
            "observation/run (empty)",
            "record error",
            "record instance_id",
            "record instruction",
            "record metadata",
            "record metrics",
            "record test_result",
        ]
    );
    // Prompted tool use: no calls; the agent's action is its words, the
    // observations are context, the user's own command too.
    assert_eq!(
        shape(&into_session(last)),
        [
            "user: List the source files.",
            "assistant (imported): I will list the directory.",
            "user (observation): calc.py",
            "user (bash): $ git status --short",
            "assistant (imported): The sources are calc.py and ops.py.",
        ]
    );
    let first = read(OPENHANDS_OUTPUT, Some(1)).unwrap();
    assert_eq!(first.header.session_id, "demo__calc-1");
    assert_eq!(
        shape(&into_session(first)),
        [
            "system (imported): You are a coding agent.",
            "user: Make `calc 1/0` print an error instead of crashing.",
            "assistant (/gpt-4o-2024-08-06): call call_a1 execute_bash",
            "tool: result call_a1",
            "assistant (/gpt-4o-2024-08-06): Division by zero now prints `error: division by zero`.",
        ]
    );
}

/// Bare events, one per line, are one session after the file's records:
/// the trajectory's events written as JSONL import as the trajectory does,
/// and a record before them is session 1 of 2.
#[test]
fn openhands_bare_events_are_the_last_session() {
    let trajectory = read(OPENHANDS, None).unwrap();
    let events: Vec<serde_json::Value> =
        serde_json::from_slice(&std::fs::read(fixture(OPENHANDS)).unwrap()).unwrap();
    let lines: String = events.iter().map(|e| format!("{e}\n")).collect();
    let record = std::fs::read_to_string(fixture(OPENHANDS_OUTPUT))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    let dir = tempfile::tempdir().unwrap();
    for (name, text, sessions) in [
        ("bare.jsonl", lines.clone(), 1),
        ("mixed.jsonl", format!("{record}\n{lines}"), 2),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, &text).unwrap();
        let bare = import::read(&path, None).unwrap();
        assert_eq!(bare.report.sessions, sessions, "{name}");
        assert_eq!(bare.report.session, sessions, "{name}");
        assert_eq!(bare.report.records, text.lines().count() as u64, "{name}");
        assert!(bare.drafts == trajectory.drafts, "{name}");
        let first = import::read_with(
            &path,
            &ReadOptions {
                session: Some(1),
                ..ReadOptions::default()
            },
        )
        .unwrap();
        let expected = if sessions == 1 {
            "bare"
        } else {
            "demo__calc-1"
        };
        assert_eq!(first.header.session_id, expected, "{name}");
    }
}

/// Issue 16, point 6: a file holding only sidechain entries is a
/// sub-agent's transcript; it imports as its own session (it used to give
/// 0 events and exit 0).
#[test]
fn claude_subagent_transcript_imports_as_its_own_session() {
    let (session, report) = import_and_reopen(&fixture(SUBAGENT));
    assert_eq!(session.header().session_id, "a3f9c21");
    assert_eq!(
        session.header().parent_session.as_deref(),
        Some("7e1d0c4a-3b2f-4c55-9a61-0f2e8d9b1c77")
    );
    assert_eq!(
        report.warnings,
        vec![ImportWarning::Note {
            line: None,
            what: "every entry is a sidechain: imported as the transcript of sub-agent a3f9c21 of session 7e1d0c4a-3b2f-4c55-9a61-0f2e8d9b1c77".into()
        }]
    );
    assert_eq!(
        shape(&session),
        [
            "user: Find every call of div() in src/ and report whether its divisor can be zero.",
            "assistant (anthropic/claude-sonnet-4-20250514): call toolu_s1 Grep",
            "tool: result toolu_s1",
            "assistant (anthropic/claude-sonnet-4-20250514): One call: src/calc.py:14 passes the user's divisor straight through, so it can be zero.",
        ]
    );
    assert!(!report.skipped.keys().any(|k| k.starts_with("sidechain")));
}

/// Sidechain lines inside a main transcript are still left out.
#[test]
fn sidechain_lines_beside_a_main_line_are_still_skipped() {
    let main = r#"{"type":"user","uuid":"m","parentUuid":null,"isSidechain":false,"sessionId":"s","message":{"role":"user","content":"go"}}"#;
    let side = std::fs::read_to_string(fixture(SUBAGENT)).unwrap();
    let input = format!("{main}\n{side}");
    let imported = import::read_bytes("mixed.jsonl", input.as_bytes(), None).unwrap();
    assert_eq!(imported.report.message_count(), 1);
    assert_eq!(imported.report.skipped.get("sidechain user"), Some(&2));
}

#[test]
fn codex_legacy_rollout_imports_with_its_context_marked() {
    let (session, report) = import_and_reopen(&fixture(CODEX_LEGACY));
    assert_eq!(
        session.header().session_id,
        "5f3c2a10-8e4b-4d0a-b1c2-6a7d9e0f1234"
    );
    assert_eq!(session.header().created, "2025-04-22T14:03:11.512Z");
    assert_eq!(report.skipped.get("record_type/state"), Some(&2));
    assert_eq!(
        shape(&session),
        [
            "user (user_instructions): <user_instructions>",
            "user (environment_context): <environment_context>",
            "user: Why does `calc 1/0` crash?",
            "assistant (imported): thinking Look at the division helper. | call call_A shell",
            "tool: result call_A",
            "assistant (imported): `div` divides without checking for zero, so `1/0` raises ZeroDivisionError.",
        ]
    );
    assert_eq!(
        session.surface_messages()[0].role,
        Role::User,
        "context keeps the role the model saw"
    );
}
