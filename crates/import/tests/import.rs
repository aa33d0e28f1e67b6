//! Importers against the bundled real sessions, a hand-written pi v3 tree,
//! and bad input.
//!
//! Expected counts are computed here from the raw JSON with
//! `serde_json::Value`, independently of the importer's code.

// Helpers outside `#[test]` functions unwrap too: this whole file is a test.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::collections::HashSet;

use abridge_import as import;
use abridge_import::Format;
use abridge_import::ImportError;
use abridge_import::ImportWarning;
use abridge_llm::Block;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_session::EventBody;
use abridge_session::MemoryStore;
use abridge_session::Session;
use abridge_session::dangling_tool_calls;
use pretty_assertions::assert_eq;
use serde_json::Value;

mod support;

use support::*;

#[test]
fn pi_v1_sample_keeps_every_message_and_answers_interrupted_calls() {
    let raw = lines(&sample(PI));
    let messages: Vec<&Value> = raw
        .iter()
        .filter(|v| v["type"] == "message")
        .map(|v| &v["message"])
        .collect();
    let count_role = |role: &str| messages.iter().filter(|m| m["role"] == role).count();
    let calls: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["content"].as_array().unwrap())
        .filter(|b| b["type"] == "toolCall")
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    let answered: HashSet<&str> = messages
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .map(|m| m["toolCallId"].as_str().unwrap())
        .collect();
    let trailing: HashSet<&str> = match messages.last() {
        Some(m) if m["role"] == "assistant" => m["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|b| b["id"].as_str())
            .collect(),
        _ => HashSet::new(),
    };
    let interrupted = calls
        .iter()
        .filter(|c| !answered.contains(*c) && !trailing.contains(*c))
        .count();

    let (session, report) = import_and_reopen(&sample(PI));
    assert_eq!(
        counts(&session),
        Counts {
            by_role: roles(&[
                ("user", count_role("user")),
                ("assistant", count_role("assistant")),
                ("tool", count_role("toolResult") + interrupted),
            ]),
            tool_calls: calls.len(),
            replaces: 0,
        }
    );
    assert_eq!(report.synthesized_results, interrupted);
    assert_eq!(report.tool_results, count_role("toolResult"));
    assert_eq!(
        report.skipped.get("thinking_level_change").copied(),
        Some(
            raw.iter()
                .filter(|v| v["type"] == "thinking_level_change")
                .count() as u64
        )
    );
    assert_eq!(session.header().session_id, raw[0]["id"].as_str().unwrap());
    assert_eq!(session.header().cwd.as_deref(), raw[0]["cwd"].as_str());
    // Linear file, no compaction: everything is visible, in file order.
    assert_eq!(
        session.surface().len(),
        counts(&session).by_role.values().sum::<usize>()
    );
    let model_changes = session
        .events()
        .iter()
        .filter(|e| e.body.kind() == import::TYPE_MODEL_CHANGE)
        .count();
    assert_eq!(model_changes, 1);
}

#[test]
fn pi_v1_sample_keeps_source_times_usage_and_models() {
    let raw = lines(&sample(PI));
    let (session, _) = import_and_reopen(&sample(PI));
    // The first message entry is line 2; its event is seq 0.
    assert_eq!(
        session.events()[0].time,
        raw[1]["timestamp"].as_str().unwrap()
    );
    let first_reply = raw
        .iter()
        .position(|v| v["type"] == "message" && v["message"]["provider"] == "anthropic")
        .unwrap();
    let usage = &raw[first_reply]["message"]["usage"];
    let event = session
        .events()
        .iter()
        .find(|e| {
            e.time == raw[first_reply]["timestamp"].as_str().unwrap()
                && e.message().is_some_and(|m| m.role == Role::Assistant)
        })
        .unwrap();
    let meta = &event.message().unwrap().meta;
    assert_eq!(
        meta.origin,
        Some(Origin::Model {
            provider: "anthropic".into(),
            model: "claude-sonnet-4-5".into()
        })
    );
    let got = meta.usage.unwrap();
    assert_eq!(
        (got.input, got.output, got.cache_read, got.cache_write),
        (
            usage["input"].as_u64().unwrap(),
            usage["output"].as_u64().unwrap(),
            usage["cacheRead"].as_u64().unwrap(),
            usage["cacheWrite"].as_u64().unwrap()
        )
    );
}

#[test]
fn claude_code_sample_merges_split_replies_and_compacts() {
    let raw = lines(&sample(CLAUDE));
    let main: Vec<&Value> = raw.iter().filter(|v| v["isSidechain"] != true).collect();
    let mut reply_ids = HashSet::new();
    let mut calls = HashSet::new();
    for v in main.iter().filter(|v| v["type"] == "assistant") {
        reply_ids.insert(v["message"]["id"].as_str().unwrap());
        for b in v["message"]["content"].as_array().unwrap() {
            if b["type"] == "tool_use" {
                calls.insert(b["id"].as_str().unwrap());
            }
        }
    }
    let mut results = 0;
    let mut users = 0;
    for v in main.iter().filter(|v| v["type"] == "user") {
        match &v["message"]["content"] {
            Value::String(_) => users += 1,
            Value::Array(blocks) => {
                let r = blocks.iter().filter(|b| b["type"] == "tool_result").count();
                results += r;
                if r < blocks.len() {
                    users += 1;
                }
            }
            other => panic!("unexpected content {other}"),
        }
    }
    let summaries = main
        .iter()
        .filter(|v| v["isCompactSummary"] == true)
        .count();
    let progress = raw.iter().filter(|v| v["type"] == "progress").count() as u64;

    let (session, report) = import_and_reopen(&sample(CLAUDE));
    let got = counts(&session);
    assert_eq!(
        got,
        Counts {
            by_role: roles(&[
                ("user", users),
                ("assistant", reply_ids.len()),
                ("tool", results),
            ]),
            tool_calls: calls.len(),
            replaces: summaries,
        }
    );
    assert_eq!(summaries, 1);
    assert_eq!(report.compactions, 1);
    assert_eq!(report.synthesized_results, 0);
    let skipped_progress: u64 = report
        .skipped
        .iter()
        .filter(|(k, _)| k.starts_with("progress/"))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(skipped_progress, progress);
    // What the model saw after the compaction: the summary, then only what
    // came after it.
    let surface = session.surface_messages();
    assert!(surface.len() < got.by_role.values().sum::<usize>());
    assert!(matches!(
        surface[0].meta.origin,
        Some(Origin::Checkpoint { .. })
    ));
    assert!(
        surface[0]
            .plain_text()
            .starts_with("This session is being continued")
    );
    let summary_seq = session.surface().seqs()[0];
    let summary_event = session.event(summary_seq).unwrap().message_event().unwrap();
    // The imported checkpoint names what it hides by a recall reference
    // spanning exactly the hidden messages, and those seqs hold them.
    let reference = surface[0]
        .content
        .iter()
        .filter_map(abridge_llm::Block::as_text)
        .find_map(abridge_session::Reference::in_hidden_note)
        .unwrap();
    let hidden: Vec<_> = summary_event
        .sources
        .iter()
        .copied()
        .filter(|s| session.message(*s).is_some())
        .collect();
    assert_eq!(reference.seqs(), (hidden[0], *hidden.last().unwrap()));
    assert!(session.message(hidden[0]).is_some());
    let hidden_messages = summary_event
        .sources
        .iter()
        .filter(|s| session.message(**s).is_some())
        .count();
    let boundary = summary_event
        .sources
        .iter()
        .filter(|s| session.event(**s).unwrap().body.kind() == import::TYPE_IMPORTED_COMPACTION)
        .count();
    assert_eq!(boundary, 1);
    assert_eq!(
        hidden_messages + surface.len(),
        got.by_role.values().sum::<usize>()
    );
    assert_eq!(
        session.header().session_id,
        "4d5611e5-241a-462a-8d15-5122611a9569"
    );
}

#[test]
fn codex_sample_pairs_calls_attaches_usage_and_compacts() {
    let raw = lines(&sample(CODEX));
    let reply_side = [
        "reasoning",
        "function_call",
        "custom_tool_call",
        "local_shell_call",
    ];
    let mut calls = 0;
    let mut outputs = 0;
    let mut others: BTreeMap<String, usize> = BTreeMap::new();
    let mut replies = 0;
    let mut summaries = 0;
    // Counts items of one history; a reply is a run of items the model
    // wrote, ended by anything else or by a token_count event.
    let mut count_item = |item: &Value, in_reply: &mut bool, replies: &mut usize| {
        let kind = item["type"].as_str().unwrap();
        let from_model =
            reply_side.contains(&kind) || (kind == "message" && item["role"] == "assistant");
        if from_model {
            if !*in_reply {
                *replies += 1;
                *in_reply = true;
            }
        } else if kind != "web_search_call" {
            *in_reply = false;
        }
        if matches!(
            kind,
            "function_call" | "custom_tool_call" | "local_shell_call"
        ) {
            calls += 1;
        }
        if kind.ends_with("_call_output") {
            outputs += 1;
        }
        if kind == "message" && item["role"] != "assistant" {
            *others
                .entry(item["role"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
        if kind == "compaction" {
            *others.entry("user".to_string()).or_default() += 1;
        }
    };
    let mut in_reply = false;
    let mut token_counts = 0;
    for v in &raw {
        match v["type"].as_str().unwrap() {
            "response_item" => count_item(&v["payload"], &mut in_reply, &mut replies),
            "event_msg" if v["payload"]["type"] == "token_count" => {
                in_reply = false;
                token_counts += 1;
            }
            "compacted" => {
                summaries += 1;
                in_reply = false;
                for item in v["payload"]["replacement_history"].as_array().unwrap() {
                    count_item(item, &mut in_reply, &mut replies);
                }
                in_reply = false;
            }
            _ => {}
        }
    }

    let (session, report) = import_and_reopen(&sample(CODEX));
    let got = counts(&session);
    assert_eq!(
        got,
        Counts {
            by_role: roles(&[
                ("user", others.get("user").copied().unwrap_or(0)),
                ("developer", others.get("developer").copied().unwrap_or(0)),
                ("system", others.get("system").copied().unwrap_or(0)),
                ("assistant", replies),
                ("tool", outputs),
            ]),
            tool_calls: calls,
            replaces: summaries,
        }
    );
    assert_eq!(report.compactions, 1);
    assert_eq!(report.synthesized_results, 0);
    // Every token_count is attached or counted as skipped.
    let token_skips: u64 = report
        .skipped
        .iter()
        .filter(|(k, _)| k.starts_with("event_msg/token_count"))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(report.usage_attached as u64 + token_skips, token_counts);
    let with_usage = session
        .events()
        .iter()
        .filter_map(|e| e.message())
        .filter(|m| m.meta.usage.is_some())
        .count();
    assert_eq!(with_usage, report.usage_attached);
    assert!(session.surface().len() < got.by_role.values().sum::<usize>());
    assert_eq!(
        session.header().session_id,
        "019c8a59-e9dd-71f0-9ae3-4079fe9726a9"
    );
    // The encrypted summary item stands on the surface as the placeholder;
    // its data is kept in the compaction's log event.
    let placeholders = session
        .surface_messages()
        .iter()
        .filter(|m| m.plain_text() == import::ENCRYPTED_SUMMARY)
        .count();
    assert_eq!(placeholders, 1);
    let log = session
        .events()
        .iter()
        .find(|e| e.body.kind() == import::TYPE_IMPORTED_COMPACTION)
        .unwrap();
    assert_eq!(
        log.log().unwrap().data["encrypted"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn swe_agent_sample_keeps_the_history() {
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(sample(SWE)).unwrap()).unwrap();
    let history = doc["history"].as_array().unwrap();
    let count_role = |role: &str| history.iter().filter(|h| h["role"] == role).count();
    let calls: usize = history
        .iter()
        .map(|h| h["tool_calls"].as_array().map_or(0, Vec::len))
        .sum();
    let results: usize = history
        .iter()
        .map(|h| h["tool_call_ids"].as_array().map_or(0, Vec::len))
        .sum();

    let (session, report) = import_and_reopen(&sample(SWE));
    assert_eq!(
        counts(&session),
        Counts {
            by_role: roles(&[
                ("system", count_role("system")),
                ("user", count_role("user")),
                ("assistant", count_role("assistant")),
                ("tool", results),
            ]),
            tool_calls: calls,
            replaces: 0,
        }
    );
    assert_eq!(
        report.skipped.get("trajectory step").copied(),
        Some(doc["trajectory"].as_array().unwrap().len() as u64)
    );
    assert_eq!(session.surface().len(), history.len());
}

#[test]
fn pi_v3_tree_maps_branches_compaction_and_extensions() {
    let (session, report) = import_and_reopen(&fixture("pi-v3-tree.jsonl"));
    let texts: Vec<String> = session
        .surface_messages()
        .iter()
        .map(|m| format!("{}: {}", m.role, m.plain_text()))
        .collect();
    assert_eq!(
        texts,
        vec![
            &format!(
                "user: The user asked why the build failed on main. `cfg` had been renamed to `config`; the build error showed it.\n{}",
                abridge_session::Reference::range(0, 3).hidden_note()
            ),
            "user: Back to the first approach: fix it.",
            "assistant: ",
            "tool: Edited src/main.rs",
            "assistant: Fixed: the build passes now.",
            "user: Now add a test for it.",
            "user: Open todo: add a regression test.",
            "assistant: ",
        ]
    );
    let c = counts(&session);
    assert_eq!(c.by_role.values().sum::<usize>(), 15);
    assert_eq!(c.replaces, 1);
    assert_eq!(report.branch_points, 1);
    assert_eq!(report.leaf_events, 0);
    assert_eq!(
        report.warnings,
        vec![ImportWarning::DanglingAtEnd {
            line: Some(21),
            call_id: "call_write_1".into()
        }]
    );
    assert_eq!(report.skipped.get("thinking_level_change"), Some(&1));
    // The replace hides exactly the four messages before the first kept
    // entry, and lists its bookkeeping event.
    let summary = session.event(session.surface().seqs()[0]).unwrap();
    let hidden: Vec<String> = summary
        .message_event()
        .unwrap()
        .sources
        .iter()
        .filter_map(|s| session.message(*s))
        .map(|m| m.plain_text())
        .collect();
    assert_eq!(hidden.len(), 4);
    assert_eq!(hidden[0], "The build fails on main; find out why.");
    // The abandoned branch is still in the log, under its summary.
    let branch = session
        .events()
        .iter()
        .find(|e| {
            e.message()
                .is_some_and(|m| m.meta.origin == Some(Origin::BranchSummary))
        })
        .unwrap();
    assert_eq!(branch.parent, Some(0));
    let kinds: Vec<&str> = session
        .events()
        .iter()
        .map(|e| e.body.kind())
        .filter(|k| *k != "message")
        .collect();
    assert_eq!(
        kinds,
        vec![
            "model_change",
            "label",
            "compaction/imported",
            "extension_state",
            "session_info"
        ]
    );
    // A label points at the seq its target landed on.
    let label = session
        .events()
        .iter()
        .find(|e| e.body.kind() == "label")
        .unwrap();
    assert_eq!(label.log().unwrap().data["target"], 0);
    // The dangling call is left to resume repair.
    assert_eq!(
        dangling_tool_calls(&session),
        vec![("call_write_1".to_string(), "write".to_string())]
    );
    assert_eq!(session.header().cwd.as_deref(), Some("/home/dev/demo"));
    assert_eq!(session.header().created, "2026-01-05T09:00:00.000Z");
}

/// pi's v1 migration can give two entries the same id; pi's own parent
/// walk then loops forever. Ours resolves each parent id to the newest
/// earlier entry with it, so the chain is the file's order.
#[test]
fn regression_duplicate_pi_ids_do_not_loop() {
    let file = concat!(
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#,
        "\n",
        r#"{"type":"message","id":"aaaa","parentId":null,"timestamp":"t1","message":{"role":"user","content":"one"}}"#,
        "\n",
        r#"{"type":"message","id":"bbbb","parentId":"aaaa","timestamp":"t2","message":{"role":"assistant","content":[{"type":"text","text":"two"}]}}"#,
        "\n",
        r#"{"type":"message","id":"aaaa","parentId":"bbbb","timestamp":"t3","message":{"role":"user","content":"three"}}"#,
        "\n",
        r#"{"type":"message","id":"cccc","parentId":"aaaa","timestamp":"t4","message":{"role":"assistant","content":[{"type":"text","text":"four"}]}}"#,
        "\n",
    );
    let imported = import::read_bytes("dup.jsonl", file.as_bytes(), None).unwrap();
    assert_eq!(
        imported.report.warnings,
        vec![ImportWarning::DuplicateId {
            line: 4,
            id: "aaaa".into(),
            first_line: 2
        }]
    );
    let (session, _) = imported.into_session(Box::new(MemoryStore::new())).unwrap();
    let texts: Vec<String> = session
        .surface_messages()
        .iter()
        .map(|m| m.plain_text())
        .collect();
    assert_eq!(texts, ["one", "two", "three", "four"]);
}

/// Parent ids that point forward (or at each other) cannot form a loop:
/// an id is only known once its line has been read.
#[test]
fn regression_claude_parent_cycle_is_reported_not_followed() {
    let file = concat!(
        r#"{"type":"user","uuid":"A","parentUuid":"B","sessionId":"s","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"hello"}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"B","parentUuid":"A","sessionId":"s","timestamp":"2026-01-01T00:00:01Z","message":{"id":"m1","role":"assistant","model":"claude-x","content":[{"type":"text","text":"hi"}]}}"#,
        "\n",
    );
    let imported = import::read_bytes("cycle.jsonl", file.as_bytes(), None).unwrap();
    assert_eq!(
        imported.report.warnings,
        vec![ImportWarning::UnknownParent {
            line: 1,
            parent_id: "B".into()
        }]
    );
    let (session, _) = imported.into_session(Box::new(MemoryStore::new())).unwrap();
    assert_eq!(session.surface().len(), 2);
}

#[test]
fn truncated_sample_names_the_cut_line() {
    let bytes = std::fs::read(sample(PI)).unwrap();
    let tenth = bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .nth(8)
        .map(|(i, _)| i)
        .unwrap();
    let cut = &bytes[..tenth + 40];
    let err = import::read_bytes("large-session.jsonl", cut, None).unwrap_err();
    assert!(
        matches!(err, ImportError::Truncated { line: 10, .. }),
        "{err}"
    );
    assert_eq!(
        err.to_string(),
        "large-session.jsonl:10: the last line is cut short (39 bytes, no closing brace); the file was truncated while being written"
    );
}

#[test]
fn wrong_field_types_name_file_line_and_field() {
    let cases: [(&str, Format, &str); 5] = [
        (
            "{\"type\":\"session\",\"id\":\"s\"}\n{\"type\":\"message\",\"timestamp\":\"t\",\"message\":{\"role\":5,\"content\":[]}}\n",
            Format::Pi,
            "f:2: field `message.role`: expected a string, found a number",
        ),
        (
            "{\"type\":\"session\",\"id\":\"s\"}\n{\"type\":\"message\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":7,\"name\":\"x\"}]}}\n",
            Format::Pi,
            "f:2: field `message.content[0].id`: expected a string, found a number",
        ),
        (
            "{\"type\":\"user\",\"uuid\":\"u\",\"message\":{\"role\":\"user\",\"content\":{\"x\":1}}}\n",
            Format::ClaudeCode,
            "f:1: field `message.content`: expected a string or an array, found an object",
        ),
        (
            "{\"timestamp\":\"t\",\"type\":\"response_item\",\"payload\":{\"type\":\"function_call\",\"name\":\"x\",\"call_id\":\"c\",\"arguments\":{}}}\n",
            Format::Codex,
            "f:1: field `payload.arguments`: expected a string, found an object",
        ),
        (
            "{\"history\":[{\"role\":\"assistant\",\"content\":\"x\",\"tool_calls\":[{\"id\":\"c\",\"function\":{\"name\":3}}]}]}",
            Format::SweAgent,
            "f: field `history[0].tool_calls[0].function.name`: expected a string, found a number",
        ),
    ];
    for (input, format, expected) in cases {
        let err = import::read_bytes("f", input.as_bytes(), Some(format)).unwrap_err();
        assert_eq!(err.to_string(), expected);
    }
}

#[test]
fn invalid_json_in_the_middle_names_line_and_column() {
    let input = "{\"type\":\"session\",\"id\":\"s\"}\n{\"type\":\"message\",}\n{\"type\":\"model_change\"}\n";
    let err = import::read_bytes("f.jsonl", input.as_bytes(), None).unwrap_err();
    assert!(
        matches!(
            err,
            ImportError::Json {
                line: 2,
                column: 19,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_pi_v1_compaction_replaces_everything_before_the_kept_index() {
    // Entry indexes count the header as 0: index 3 is "kept".
    let input = concat!(
        r#"{"type":"session","id":"s","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#,
        "\n",
        r#"{"type":"message","timestamp":"t1","message":{"role":"user","content":"old question"}}"#,
        "\n",
        r#"{"type":"message","timestamp":"t2","message":{"role":"assistant","content":[{"type":"text","text":"old answer"}]}}"#,
        "\n",
        r#"{"type":"message","timestamp":"t3","message":{"role":"user","content":"kept"}}"#,
        "\n",
        r#"{"type":"compaction","timestamp":"t4","summary":"summary of the old exchange","firstKeptEntryIndex":3,"tokensBefore":100}"#,
        "\n",
        r#"{"type":"message","timestamp":"t5","message":{"role":"assistant","content":[{"type":"text","text":"after"}]}}"#,
        "\n",
    );
    let imported = import::read_bytes("v1.jsonl", input.as_bytes(), None).unwrap();
    let (session, report) = imported.into_session(Box::new(MemoryStore::new())).unwrap();
    let texts: Vec<String> = session
        .surface_messages()
        .iter()
        .map(|m| m.plain_text())
        .collect();
    let summary = format!(
        "summary of the old exchange\n{}",
        abridge_session::Reference::range(0, 1).hidden_note()
    );
    assert_eq!(texts, [summary.as_str(), "kept", "after"]);
    assert_eq!(report.compactions, 1);
    assert_eq!(session.surface().generation(), 1);
}

#[test]
fn codex_developer_note_between_call_and_output_moves_after_the_output() {
    let input = concat!(
        r#"{"timestamp":"t0","type":"session_meta","payload":{"id":"s","timestamp":"t0","cwd":"/w","model_provider":"openai"}}"#,
        "\n",
        r#"{"timestamp":"t1","type":"turn_context","payload":{"model":"gpt-5"}}"#,
        "\n",
        r#"{"timestamp":"t2","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"go"}]}}"#,
        "\n",
        r#"{"timestamp":"t3","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"cmd\":\"ls\"}","call_id":"c1"}}"#,
        "\n",
        r#"{"timestamp":"t4","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":10},"last_token_usage":{"input_tokens":100,"cached_input_tokens":60,"output_tokens":7}}}}"#,
        "\n",
        r#"{"timestamp":"t5","type":"response_item","payload":{"type":"message","role":"developer","content":[{"type":"input_text","text":"note"}]}}"#,
        "\n",
        r#"{"timestamp":"t6","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"a b"}}"#,
        "\n",
    );
    let imported = import::read_bytes("r.jsonl", input.as_bytes(), None).unwrap();
    assert_eq!(imported.report.reordered, 1);
    let (session, _) = imported.into_session(Box::new(MemoryStore::new())).unwrap();
    let shape: Vec<&str> = session
        .surface_messages()
        .iter()
        .map(|m| m.role.as_str())
        .collect();
    assert_eq!(shape, ["user", "assistant", "tool", "developer"]);
    let reply = &session.surface_messages()[1];
    let usage = reply.meta.usage.unwrap();
    assert_eq!((usage.input, usage.cache_read, usage.output), (40, 60, 7));
    assert_eq!(
        reply.meta.origin,
        Some(Origin::Model {
            provider: "openai".into(),
            model: "gpt-5".into()
        })
    );
    assert!(
        matches!(&reply.content[0], Block::ToolCall { arguments, .. } if arguments["cmd"] == "ls")
    );
    let tool = &session.surface_messages()[2];
    assert_eq!(
        tool.meta.origin,
        Some(Origin::Tool {
            call_id: "c1".into(),
            name: "shell".into()
        })
    );
}

#[test]
fn results_without_calls_are_kept_and_reported() {
    let input = concat!(
        r#"{"type":"session","id":"s"}"#,
        "\n",
        r#"{"type":"message","message":{"role":"toolResult","toolCallId":"ghost","toolName":"bash","content":[{"type":"text","text":"?"}],"isError":false}}"#,
        "\n",
    );
    let imported = import::read_bytes("o.jsonl", input.as_bytes(), None).unwrap();
    assert_eq!(
        imported.report.warnings,
        vec![ImportWarning::OrphanResult {
            line: Some(2),
            call_id: "ghost".into()
        }]
    );
    assert_eq!(imported.drafts.len(), 1);
}

#[test]
fn imported_drafts_need_an_empty_session() {
    let imported = import::read(&fixture("pi-v3-tree.jsonl"), None).unwrap();
    let mut session = Session::in_memory("busy");
    session
        .append_message(abridge_llm::Message::user("already here"))
        .unwrap();
    let err = imported.append_to(&mut session).unwrap_err();
    assert!(err.to_string().contains("already has 1 events"), "{err}");
    assert_eq!(session.len(), 1);
}

/// A refused import writes nothing, though it is written in several
/// batches: the drafts are checked before the store is created, and the
/// bad one comes after more than a batch of good ones.
#[test]
fn a_refused_import_leaves_the_store_untouched() {
    let mut imported = import::read(&sample(PI), None).unwrap();
    while imported.drafts.len() < 3000 {
        let again = imported.drafts.len() as u64;
        imported.drafts.push(
            abridge_session::Draft::message(abridge_llm::Message::user("more"))
                .with_parent(again.checked_sub(1)),
        );
    }
    let len = imported.drafts.len() as u64;
    // A parent that is not earlier than its child.
    imported.drafts.push(
        abridge_session::Draft::message(abridge_llm::Message::user("bad")).with_parent(Some(len)),
    );
    let mut store = MemoryStore::new();
    let err = imported.into_session(Box::new(store.clone())).unwrap_err();
    assert!(matches!(err, ImportError::Session { .. }), "{err}");
    assert!(err.to_string().contains("parent"), "{err}");
    assert!(
        abridge_session::SessionStore::load(&mut store)
            .unwrap()
            .is_none()
    );
}

#[test]
fn every_event_kind_written_is_known_to_the_report() {
    // Log events written are exactly those the report counts.
    for name in [PI, CLAUDE, CODEX, SWE] {
        let imported = import::read(&sample(name), None).unwrap();
        let logs = imported
            .drafts
            .iter()
            .filter(|d| matches!(d.body, EventBody::Log(_)))
            .count();
        assert_eq!(logs, imported.report.log_events, "{name}");
        let per_kind: HashMap<&str, usize> =
            imported.drafts.iter().fold(HashMap::new(), |mut acc, d| {
                *acc.entry(d.body.kind()).or_default() += 1;
                acc
            });
        assert_eq!(
            per_kind.get("message").copied().unwrap_or(0),
            imported.report.message_count(),
            "{name}"
        );
    }
}

mod fuzz {
    use proptest::prelude::*;

    use super::*;

    fn corpus() -> Vec<(Format, Vec<u8>)> {
        // The first 40 KiB of each sample, cut at a line end, keep the runs
        // quick while covering every record kind near the start.
        [
            (PI, Format::Pi),
            (CLAUDE, Format::ClaudeCode),
            (CODEX, Format::Codex),
        ]
        .into_iter()
        .map(|(name, format)| {
            let bytes = std::fs::read(sample(name)).unwrap();
            let end = bytes[..bytes.len().min(40_000)]
                .iter()
                .rposition(|b| *b == b'\n')
                .unwrap();
            (format, bytes[..=end].to_vec())
        })
        .chain(
            [
                ("pi-v3-tree.jsonl", Format::Pi),
                ("aider-three-chats.md", Format::Aider),
                ("openhands-trajectory.json", Format::OpenHands),
                ("openhands-output.jsonl", Format::OpenHands),
                ("claude-subagent.jsonl", Format::ClaudeCode),
                ("codex-legacy-rollout.jsonl", Format::Codex),
            ]
            .into_iter()
            .map(|(name, format)| (format, std::fs::read(fixture(name)).unwrap())),
        )
        .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Whatever the damage (a cut, a flipped byte, a deleted line), an
        /// import either fails with an error or yields drafts the session
        /// accepts. Nothing panics.
        #[test]
        fn damaged_input_never_panics_and_ok_imports_are_valid(
            which in 0usize..9,
            cut in 0.0f64..1.0,
            flips in proptest::collection::vec((0.0f64..1.0, any::<u8>()), 0..4),
            drop_line in proptest::option::of(0usize..40),
        ) {
            let corpus = corpus();
            let (format, bytes) = &corpus[which];
            let mut bytes = bytes.clone();
            if let Some(n) = drop_line {
                let starts: Vec<usize> = std::iter::once(0)
                    .chain(bytes.iter().enumerate().filter(|(_, b)| **b == b'\n').map(|(i, _)| i + 1))
                    .collect();
                if n + 1 < starts.len() {
                    bytes.drain(starts[n]..starts[n + 1]);
                }
            }
            for (at, byte) in flips {
                let i = ((bytes.len() as f64) * at) as usize;
                if let Some(b) = bytes.get_mut(i) {
                    *b = byte;
                }
            }
            bytes.truncate(((bytes.len() as f64) * cut) as usize + 1);
            if let Ok(imported) = import::read_bytes("fuzz.jsonl", &bytes, Some(*format)) {
                let result = imported.into_session(Box::new(MemoryStore::new()));
                prop_assert!(result.is_ok(), "{:?}", result.err());
            }
        }
    }
}

/// Claude Code writes each block of a reply on its own line and may write
/// a result as a sibling of the block that called it, before the reply's
/// last block. The model saw one reply, then both results.
#[test]
fn claude_split_reply_with_sibling_results_becomes_one_turn() {
    let file = concat!(
        r#"{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s","timestamp":"2026-01-01T00:00:00Z","message":{"role":"user","content":"check both"}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"a1","parentUuid":"u1","timestamp":"2026-01-01T00:00:01Z","message":{"id":"M","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"t1","name":"read","input":{"p":"a"}}],"usage":{"input_tokens":1,"output_tokens":2}}}"#,
        "\n",
        r#"{"type":"user","uuid":"r1","parentUuid":"a1","timestamp":"2026-01-01T00:00:02Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"A"}]}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"a2","parentUuid":"a1","timestamp":"2026-01-01T00:00:03Z","message":{"id":"M","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"t2","name":"read","input":{"p":"b"}}],"usage":{"input_tokens":1,"output_tokens":9,"cache_read_input_tokens":50,"cache_creation_input_tokens":7}}}"#,
        "\n",
        r#"{"type":"progress","uuid":"p1","parentUuid":"a2","timestamp":"2026-01-01T00:00:04Z","data":{"type":"hook_progress"}}"#,
        "\n",
        r#"{"type":"user","uuid":"r2","parentUuid":"p1","timestamp":"2026-01-01T00:00:05Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":[{"type":"text","text":"B"}],"is_error":true}]}}"#,
        "\n",
        r#"{"type":"assistant","uuid":"a3","parentUuid":"r2","timestamp":"2026-01-01T00:00:06Z","message":{"id":"N","role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"t3","name":"bash","input":{}}]}}"#,
        "\n",
        r#"{"type":"user","uuid":"u2","parentUuid":"a3","timestamp":"2026-01-01T00:00:07Z","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]}}"#,
        "\n",
    );
    let imported = import::read_bytes("split.jsonl", file.as_bytes(), None).unwrap();
    assert_eq!(
        imported.report.skipped.get("progress/hook_progress"),
        Some(&1)
    );
    assert_eq!(
        imported.report.warnings,
        vec![ImportWarning::MissingResult {
            line: Some(7),
            call_id: "t3".into()
        }]
    );
    let (session, _) = imported.into_session(Box::new(MemoryStore::new())).unwrap();
    let shape: Vec<String> = session
        .surface_messages()
        .iter()
        .map(|m| {
            let calls: Vec<&str> = m.tool_calls().map(|(id, _, _)| id).collect();
            match m.tool_result_block() {
                Some((id, _, error)) => format!("tool {id} error={error}"),
                None => format!("{} {}", m.role, calls.join(",")),
            }
        })
        .collect();
    assert_eq!(
        shape,
        [
            "user ",
            "assistant t1,t2",
            "tool t1 error=false",
            "tool t2 error=true",
            "assistant t3",
            "tool t3 error=true",
            "user ",
        ]
    );
    let reply = &session.surface_messages()[1];
    let usage = reply.meta.usage.unwrap();
    assert_eq!(
        (
            usage.input,
            usage.output,
            usage.cache_read,
            usage.cache_write
        ),
        (1, 9, 50, 7)
    );
    let added = &session.surface_messages()[5];
    assert_eq!(
        added.tool_result_block().unwrap().1[0].as_text(),
        Some(import::MISSING_RESULT)
    );
}

#[test]
fn a_pi_compaction_whose_kept_entry_is_elsewhere_replaces_everything() {
    let input = concat!(
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}"#,
        "\n",
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"one"}}"#,
        "\n",
        r#"{"type":"message","id":"b","parentId":"a","timestamp":"t","message":{"role":"assistant","content":[{"type":"text","text":"two"}]}}"#,
        "\n",
        r#"{"type":"compaction","id":"c","parentId":"b","timestamp":"t","summary":"all of it","firstKeptEntryId":"nowhere","tokensBefore":5}"#,
        "\n",
    );
    let imported = import::read_bytes("k.jsonl", input.as_bytes(), None).unwrap();
    assert!(matches!(
        imported.report.warnings.as_slice(),
        [ImportWarning::Compaction { line: 4, .. }]
    ));
    let (session, _) = imported.into_session(Box::new(MemoryStore::new())).unwrap();
    let texts: Vec<String> = session
        .surface_messages()
        .iter()
        .map(|m| m.plain_text())
        .collect();
    assert_eq!(
        texts,
        [format!(
            "all of it\n{}",
            abridge_session::Reference::range(0, 1).hidden_note()
        )]
    );
}

/// Issue 16, point 7: SWE-agent reuses a call id across turns (the sample
/// does four times); providers reject a request with two calls of one id,
/// so the import gives every repeat a suffix, on the call and its result.
#[test]
fn swe_agent_reused_call_ids_are_renamed_with_their_results() {
    let (session, report) = import_and_reopen(&sample(SWE));
    let surface = session.surface_messages();
    let calls: Vec<&str> = surface
        .iter()
        .flat_map(|m| m.tool_calls().map(|(id, _, _)| id))
        .collect();
    let unique: HashSet<&str> = calls.iter().copied().collect();
    assert_eq!(unique.len(), calls.len(), "{calls:?}");
    assert_eq!(report.renamed_calls, 4);
    let renamed: Vec<&str> = calls
        .iter()
        .copied()
        .filter(|id| id.contains("_dup"))
        .collect();
    assert_eq!(
        renamed,
        [
            "call_5iDdbOYybq7L19vqXmR0DPaU_dup2",
            "call_ahToD2vM0aQWJPkRmy5cumru_dup2",
            "call_5iDdbOYybq7L19vqXmR0DPaU_dup3",
            "call_5iDdbOYybq7L19vqXmR0DPaU_dup4",
        ]
    );
    // Each result follows its own call: pairing on the surface was checked
    // by import_and_reopen; the tool origin names the renamed call too.
    for m in surface.iter().filter(|m| m.role == Role::Tool) {
        let (id, _, _) = m.tool_result_block().unwrap();
        assert!(
            matches!(&m.meta.origin, Some(Origin::Tool { call_id, .. }) if call_id == id),
            "{id}"
        );
    }
    assert!(
        report.to_string().contains("renamed call ids: 4"),
        "{report}"
    );
}

/// A renamed id never takes one the source uses itself.
#[test]
fn a_renamed_call_id_skips_ids_the_source_already_has() {
    let doc = r#"{"history":[
        {"role":"user","content":"go"},
        {"role":"assistant","content":"","tool_calls":[{"id":"c_dup2","function":{"name":"a","arguments":"{}"}}]},
        {"role":"tool","content":"1","tool_call_ids":["c_dup2"]},
        {"role":"assistant","content":"","tool_calls":[{"id":"c","function":{"name":"a","arguments":"{}"}}]},
        {"role":"tool","content":"2","tool_call_ids":["c"]},
        {"role":"assistant","content":"","tool_calls":[{"id":"c","function":{"name":"a","arguments":"{}"}}]},
        {"role":"tool","content":"3","tool_call_ids":["c"]}
    ]}"#;
    let imported = import::read_bytes("t.traj", doc.as_bytes(), None).unwrap();
    assert_eq!(imported.report.renamed_calls, 1);
    assert_eq!(
        imported.report.warnings,
        vec![ImportWarning::DuplicateCallId {
            line: None,
            call_id: "c".into(),
            renamed: "c_dup3".into(),
        }]
    );
    let (session, _) = imported.into_session(Box::new(MemoryStore::new())).unwrap();
    let shape: Vec<String> = session
        .surface_messages()
        .iter()
        .map(|m| match m.tool_result_block() {
            Some((id, content, _)) => format!("{id}={}", content[0].as_text().unwrap()),
            None => m.tool_calls().map(|(id, _, _)| id).collect(),
        })
        .collect();
    assert_eq!(
        shape,
        ["", "c_dup2", "c_dup2=1", "c", "c=2", "c_dup3", "c_dup3=3"]
    );
}

/// Issue 16, point 7: a file that parses but holds no message is an error
/// that says why, not a session of zero events.
#[test]
fn an_import_without_messages_is_an_error_that_says_why() {
    let cases: [(&str, &str, &str); 4] = [
        (
            "c.jsonl",
            concat!(
                r#"{"type":"file-history-snapshot","messageId":"m","snapshot":{}}"#,
                "\n",
                r#"{"type":"progress","uuid":"p","parentUuid":null,"sessionId":"s","data":{"type":"hook_progress"}}"#,
                "\n",
                r#"{"type":"file-history-snapshot","messageId":"n","snapshot":{}}"#,
                "\n",
            ),
            "c.jsonl: nothing to import: none of its 3 records is a message (skipped: file-history-snapshot 2, progress/hook_progress 1)",
        ),
        (
            "p.jsonl",
            "{\"type\":\"session\",\"id\":\"s\",\"timestamp\":\"2026-01-01T00:00:00Z\"}\n",
            "p.jsonl: nothing to import: none of its 1 record is a message",
        ),
        (
            "r.jsonl",
            concat!(
                r#"{"timestamp":"t0","type":"session_meta","payload":{"id":"s","timestamp":"t0","cwd":"/w"}}"#,
                "\n",
                r#"{"timestamp":"t1","type":"turn_context","payload":{"model":"gpt-5"}}"#,
                "\n",
            ),
            "r.jsonl: nothing to import: none of its 2 records is a message (skipped: turn_context 1)",
        ),
        (
            "e.traj",
            r#"{"history":[],"trajectory":[]}"#,
            "e.traj: nothing to import: none of its 1 record is a message",
        ),
    ];
    for (name, input, expected) in cases {
        let err = import::read_bytes(name, input.as_bytes(), None).unwrap_err();
        assert!(
            matches!(err, ImportError::NoMessages { .. }),
            "{name}: {err}"
        );
        assert_eq!(err.to_string(), expected);
    }
}

/// Issue 16, point 4: Codex writes its AGENTS.md block and environment as
/// user messages and echoes only what the user typed (`event_msg`
/// `user_message` right after it). The sample is redacted, so the echo is
/// what tells them apart.
#[test]
fn codex_sample_marks_the_context_codex_injected() {
    let raw = lines(&sample(CODEX));
    let mut typed = 0;
    let mut injected = 0;
    for (i, v) in raw.iter().enumerate() {
        if v["type"] == "response_item" && v["payload"]["role"] == "user" {
            let next = &raw[i + 1];
            if next["type"] == "event_msg" && next["payload"]["type"] == "user_message" {
                typed += 1;
            } else {
                injected += 1;
            }
        }
    }
    assert_eq!((typed, injected), (38, 8));
    let (session, _) = import_and_reopen(&sample(CODEX));
    assert_eq!(injected_sources(&session), vec![import::UNECHOED; injected]);
    let users = session
        .events()
        .iter()
        .filter_map(|e| e.message())
        .filter(|m| m.meta.origin == Some(Origin::User))
        .count();
    assert_eq!(users, typed);
}

/// Without echoes (older rollouts), Codex's own markers tell context apart.
#[test]
fn codex_context_is_recognised_by_its_markers() {
    let user = |text: &str| {
        serde_json::json!({"timestamp":"t","type":"response_item","payload":{
            "type":"message","role":"user","content":[{"type":"input_text","text":text}]}})
        .to_string()
    };
    let input = [
        r#"{"timestamp":"t0","type":"session_meta","payload":{"id":"s","timestamp":"t0","cwd":"/w"}}"#.to_string(),
        user("# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nrun the tests\n</INSTRUCTIONS>"),
        user("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
        user("<user_shell_command>\n<command>ls</command>\n<result>a</result>\n</user_shell_command>"),
        user("Make the parser accept tabs."),
    ]
    .join("\n");
    let imported = import::read_bytes("old.jsonl", input.as_bytes(), None).unwrap();
    let (session, _) = imported.into_session(Box::new(MemoryStore::new())).unwrap();
    assert_eq!(
        injected_sources(&session),
        ["agents-md", "environment_context", "user_shell_command"]
    );
    let last = session.surface_messages().last().unwrap().clone();
    assert_eq!(last.meta.origin, Some(Origin::User));
}

/// Issue 16, point 4: Claude Code's notification, slash-command echo,
/// caveat and reminder-only messages are context; a request carrying a
/// reminder stays the user's.
#[test]
fn claude_code_context_is_marked_and_requests_are_kept() {
    let raw = lines(&sample(CLAUDE));
    let notifications = raw
        .iter()
        .filter(|v| {
            v["type"] == "user"
                && v["message"]["content"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("<task-notification>"))
        })
        .count();
    assert_eq!(notifications, 1);
    let (session, _) = import_and_reopen(&sample(CLAUDE));
    assert_eq!(injected_sources(&session), ["task-notification"]);

    let line = |uuid: &str, parent: &str, content: Value, meta: bool| {
        serde_json::json!({"type":"user","uuid":uuid,"parentUuid":parent,"sessionId":"s",
            "isMeta":meta,"message":{"role":"user","content":content}})
        .to_string()
    };
    let input = [
        line(
            "u1",
            "",
            Value::String("Caveat: The messages below were generated by the user while running local commands. DO NOT respond.".into()),
            true,
        ),
        line(
            "u2",
            "u1",
            Value::String("<command-name>/model</command-name>\n<command-message>model</command-message>\n<command-args></command-args>".into()),
            false,
        ),
        line(
            "u3",
            "u2",
            Value::String("<local-command-stdout>Set model to opus</local-command-stdout>".into()),
            false,
        ),
        line(
            "u4",
            "u3",
            serde_json::json!([
                {"type":"text","text":"<system-reminder>The todo list is empty.</system-reminder>"},
                {"type":"text","text":"Rename the crate."}
            ]),
            false,
        ),
        line(
            "u5",
            "u4",
            serde_json::json!([{"type":"text","text":"<system-reminder>A file changed.</system-reminder>"}]),
            false,
        ),
    ]
    .join("\n")
    .replace(r#""parentUuid":"""#, r#""parentUuid":null"#);
    let imported = import::read_bytes("cc.jsonl", input.as_bytes(), None).unwrap();
    let (session, _) = imported.into_session(Box::new(MemoryStore::new())).unwrap();
    let origins: Vec<String> = session
        .surface_messages()
        .iter()
        .map(|m| match &m.meta.origin {
            Some(Origin::Injected { source }) => format!("injected {source}"),
            Some(Origin::User) => "user".to_string(),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        origins,
        [
            "injected local-command-caveat",
            "injected command-name",
            "injected local-command-stdout",
            "user",
            "injected system-reminder",
        ]
    );
}

/// A `!` command the user ran in pi is context for the model.
#[test]
fn pi_bash_runs_are_injected_context() {
    let input = concat!(
        r#"{"type":"session","id":"s","timestamp":"2026-01-01T00:00:00Z"}"#,
        "\n",
        r#"{"type":"message","message":{"role":"bashExecution","command":"git status","output":"clean","exitCode":0}}"#,
        "\n",
        r#"{"type":"message","message":{"role":"user","content":"commit it"}}"#,
        "\n",
    );
    let imported = import::read_bytes("b.jsonl", input.as_bytes(), None).unwrap();
    let (session, _) = imported.into_session(Box::new(MemoryStore::new())).unwrap();
    assert_eq!(injected_sources(&session), ["bash"]);
    assert_eq!(
        session.surface_messages()[1].meta.origin,
        Some(Origin::User)
    );
}
