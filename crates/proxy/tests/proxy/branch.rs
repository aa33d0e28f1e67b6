//! An agent that rewrites part of the history it sent: the conversation
//! stays one session, going on from a branch at the last shared item,
//! with its checkpoint carried over while it still describes the
//! history.

use abridge::compact::check::check_invariants;
use abridge::compact::host::TYPE_COMPACTION_SUMMARY;
use abridge_proxy::Dialect;
use abridge_proxy::TYPE_PROXY_BRANCH;
use abridge_proxy::request_tokens;
use abridge_session::Event;
use abridge_session::EventBody;
use abridge_session::Session;
use serde_json::Value;
use serde_json::json;

use crate::common::*;

const WINDOW: u64 = 4_096;

/// What aider appends to its newest request, and drops from it on the
/// next turn.
const REMINDER: &str = "Reply in English. Return every edited file as a whole file listing.";

/// One request's user text: about 250 tokens, as in the aider e2e.
fn ask(turn: usize) -> String {
    let sentence = format!(
        "Note {turn}: it matters for a long session, it is measured in tokens, \
         it is kept in an append-only log, and nothing written is ever lost."
    );
    format!(
        "Append this paragraph to notes.md: {}",
        [sentence.as_str(); 6].join(" ")
    )
}

/// Aider's shape in the Chat dialect: a system message and example
/// turns, the turns so far, and the newest request with the reminder
/// appended; the next request carries that request without it. Streamed
/// replies (text only). Returns what the agent sent each turn.
async fn aider_loop(url: &str, turns: usize) -> Vec<Value> {
    let mut history = vec![
        json!({"role": "system", "content": "Act as an expert software developer. Take requests for changes to the supplied code."}),
        json!({"role": "user", "content": "Change the greeting to be more casual"}),
        json!({"role": "assistant", "content": "Ok, I will switch the greeting from Hello to Hey."}),
        json!({"role": "user", "content": "I have added notes.md to the chat."}),
        json!({"role": "assistant", "content": "Ok, any changes I propose will be to those files."}),
    ];
    let mut sent = Vec::new();
    for turn in 0..turns {
        let mut messages = history.clone();
        messages.push(json!({"role": "user", "content": format!("{}\n\n{REMINDER}", ask(turn))}));
        let body = json!({"model": "smollm2", "stream": true, "messages": messages});
        let (status, _) = post(url, "/v1/chat/completions", &[], body.to_string()).await;
        assert_eq!(status, 200, "turn {turn}");
        sent.push(body);
        history.push(json!({"role": "user", "content": ask(turn)}));
        history.push(json!({"role": "assistant", "content": reply_text(turn)}));
    }
    sent
}

fn logged(session: &Session, kind: &str) -> Vec<Value> {
    session
        .events()
        .iter()
        .filter_map(Event::log)
        .filter(|log| log.kind == kind)
        .map(|log| log.data.clone())
        .collect()
}

fn chat_setup() -> Setup {
    Setup {
        window: Some(WINDOW),
        settings: digest_settings(),
        ..Setup::default()
    }
}

#[tokio::test]
async fn an_aider_loop_stays_one_session_and_reuses_its_checkpoint() {
    let store = tempfile::tempdir().unwrap();
    let (url, upstream) = proxy(store.path(), chat_setup()).await;
    let turns = 22;
    let sent = aider_loop(&url, turns).await;
    let got = upstream.all();
    assert_eq!(got.len(), turns);

    let session = only_session(store.path());
    let report = check_invariants(&session);
    assert!(report.is_ok(), "{:?}", report.violations);
    // Every request after the first rewrote the last item the proxy saw.
    let branches = logged(&session, TYPE_PROXY_BRANCH);
    assert_eq!(branches.len(), turns - 1, "{branches:?}");
    let summaries = logged(&session, TYPE_COMPACTION_SUMMARY).len();
    assert!(summaries >= 1, "no compaction landed");

    let mut compacted = Vec::new();
    for (turn, (agent, out)) in sent.iter().zip(&got).enumerate() {
        let out = out.json();
        let tokens = request_tokens(Dialect::Chat, &out).unwrap();
        assert!(tokens <= WINDOW, "turn {turn}: {tokens} tokens sent");
        if out["messages"] != agent["messages"] {
            compacted.push((turn, out));
        }
    }
    assert!(
        compacted.len() > summaries,
        "{} compacted requests for {summaries} compactions: the checkpoint was not reused",
        compacted.len()
    );
    // Consecutive compacted requests: what the first sent, but for the
    // newest item (the request with its reminder), the next sends again
    // byte for byte, checkpoint included.
    let mut reused = 0;
    for pair in compacted.windows(2) {
        let ((a_turn, a), (b_turn, b)) = (&pair[0], &pair[1]);
        let (a, b) = (
            a["messages"].as_array().unwrap(),
            b["messages"].as_array().unwrap(),
        );
        if *b_turn != a_turn + 1 || a[1] != b[1] {
            continue; // compacted again in between
        }
        let text = |items: &[Value]| items.iter().map(Value::to_string).collect::<Vec<_>>();
        assert_eq!(
            text(&b[..a.len() - 1]),
            text(&a[..a.len() - 1]),
            "turn {b_turn}: the compacted prefix changed"
        );
        reused += 1;
    }
    assert!(reused >= 2, "only {reused} turns reused the checkpoint");
}

/// An Anthropic agent whose replies call a tool; `edit` may rewrite the
/// history before each request. Returns what the agent sent.
async fn anthropic_loop(
    url: &str,
    turns: usize,
    edit: impl Fn(usize, &mut Vec<Value>),
) -> Vec<Value> {
    let mut messages = vec![json!({"role": "user", "content": "Fix the failing test."})];
    let mut sent = Vec::new();
    for turn in 0..turns {
        edit(turn, &mut messages);
        let body = json!({"model": "claude-x", "max_tokens": 200, "system": "Be careful.", "messages": messages});
        let (status, reply) =
            post(url, "/v1/messages", &[("x-api-key", "k")], body.to_string()).await;
        assert_eq!(status, 200, "turn {turn}");
        sent.push(body);
        let reply: Value = serde_json::from_slice(&reply).unwrap();
        let call = reply["content"][1]["id"].as_str().unwrap().to_string();
        messages.push(json!({"role": "assistant", "content": reply["content"]}));
        let output = format!("// file {turn}\n{}", "let x = compute(input);\n".repeat(30));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "content": output}
        ]}));
    }
    sent
}

/// The texts of the messages on the session's surface.
fn surface_texts(session: &Session) -> Vec<String> {
    session
        .surface_messages()
        .iter()
        .map(|m| m.plain_text())
        .collect()
}

#[tokio::test]
async fn an_edit_in_the_middle_branches_at_the_edit() {
    let store = tempfile::tempdir().unwrap();
    let (url, upstream) = proxy(store.path(), Setup::default()).await;
    let edited = "Fix the failing test, and only that one.";
    let sent = anthropic_loop(&url, 6, |turn, messages| {
        if turn == 4 {
            // The agent rewrites its third message (the first tool result).
            messages[2] = json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": messages[1]["content"][1]["id"], "content": edited}
            ]});
        }
    })
    .await;
    // Below the threshold everything goes as the agent sent it.
    for (agent, out) in sent.iter().zip(upstream.all()) {
        assert_eq!(out.body, agent.to_string().as_bytes());
    }
    let session = only_session(store.path());
    let report = check_invariants(&session);
    assert!(report.is_ok(), "{:?}", report.violations);
    let branches = logged(&session, TYPE_PROXY_BRANCH);
    assert_eq!(branches.len(), 1, "{branches:?}");
    assert_eq!(branches[0]["kept_items"], 2);
    // The surface is the history as the agent now has it, with the reply
    // to the last request.
    let texts = surface_texts(&session);
    assert_eq!(texts.len(), 12, "{texts:?}");
    assert!(texts[2].contains(edited), "{texts:?}");
    assert!(texts[11].contains(&reply_text(5)), "{texts:?}");
    // The branch left behind keeps the original.
    let leaves = session
        .events()
        .iter()
        .filter(|e| matches!(e.body, EventBody::Leaf))
        .count();
    assert_eq!(leaves, 1);
}

#[tokio::test]
async fn an_edit_inside_a_checkpoint_drops_it_and_the_request_still_fits() {
    let store = tempfile::tempdir().unwrap();
    let setup = Setup {
        window: Some(WINDOW),
        settings: digest_settings(),
        ..Setup::default()
    };
    let (url, upstream) = proxy(store.path(), setup).await;
    let turns = 24;
    let sent = anthropic_loop(&url, turns, |turn, messages| {
        if turn == turns - 1 {
            // The first tool result, long since inside a checkpoint.
            messages[2] = json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": messages[1]["content"][1]["id"], "content": "nothing"}
            ]});
        }
    })
    .await;
    let session = only_session(store.path());
    let report = check_invariants(&session);
    assert!(report.is_ok(), "{:?}", report.violations);
    let branches = logged(&session, TYPE_PROXY_BRANCH);
    assert_eq!(branches.len(), 1, "{branches:?}");
    assert_eq!(branches[0]["kept_items"], 2);
    // The checkpoints summarized that result as it was: none is carried
    // to the branch, and the threshold pass compacts the branch afresh.
    assert_eq!(branches[0]["carried"], json!([]), "{branches:?}");
    let seq_of = |kind: &str| {
        session
            .events()
            .iter()
            .filter(|e| e.log().is_some_and(|log| log.kind == kind))
            .map(|e| e.seq)
            .collect::<Vec<_>>()
    };
    let branched = seq_of(TYPE_PROXY_BRANCH)[0];
    let summaries = seq_of(TYPE_COMPACTION_SUMMARY);
    assert!(
        summaries.first().is_some_and(|s| *s < branched),
        "{summaries:?}"
    );
    assert!(
        summaries.last().is_some_and(|s| *s > branched),
        "{summaries:?}"
    );
    let got = upstream.all();
    for (turn, out) in got.iter().enumerate() {
        let out = out.json();
        let tokens = request_tokens(Dialect::Anthropic, &out).unwrap();
        assert!(tokens <= WINDOW, "turn {turn}: {tokens} tokens sent");
        let errors = anthropic_pairing_errors(out["messages"].as_array().unwrap());
        assert!(errors.is_empty(), "turn {turn}: {errors:?}");
    }
    let last = got.last().unwrap().json();
    assert_ne!(last["messages"], sent.last().unwrap()["messages"]);
}
