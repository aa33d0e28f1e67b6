//! Above the threshold: the session's compacted history goes upstream,
//! under the window, its tool pairs intact, and the same bytes on the
//! next turn.

use abridge_proxy::Dialect;
use abridge_proxy::request_tokens;
use serde_json::Value;
use serde_json::json;

use crate::common::*;

const WINDOW: u64 = 6_000;

/// An agent's loop in the Anthropic dialect: every reply calls a tool,
/// every tool answers ~1.2 kB, and each turn resends the whole history.
/// Returns what the agent sent each turn.
async fn anthropic_agent(url: &str, turns: usize) -> Vec<Value> {
    let system = "You are a careful coding agent.";
    let tools =
        json!([{"name": "read", "description": "read a file", "input_schema": {"type": "object"}}]);
    let mut messages =
        vec![json!({"role": "user", "content": "Fix the failing test in src/lib.rs."})];
    let mut sent = Vec::new();
    for turn in 0..turns {
        let body = json!({"model": "claude-x", "max_tokens": 200, "system": system, "tools": tools, "messages": messages});
        let (status, reply) =
            post(url, "/v1/messages", &[("x-api-key", "k")], body.to_string()).await;
        assert_eq!(status, 200, "turn {turn}");
        sent.push(body);
        let reply: Value = serde_json::from_slice(&reply).unwrap();
        let call = reply["content"][1]["id"].as_str().unwrap().to_string();
        messages.push(json!({"role": "assistant", "content": reply["content"]}));
        let output = format!(
            "// file {turn}\n{}",
            "let value = compute(input, options);\n".repeat(48)
        );
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "content": output}
        ]}));
    }
    sent
}

#[tokio::test]
async fn above_the_threshold_the_compacted_history_fits_the_window_with_pairs_intact() {
    let store = tempfile::tempdir().unwrap();
    let setup = Setup {
        window: Some(WINDOW),
        settings: digest_settings(),
        ..Setup::default()
    };
    let (url, upstream) = proxy(store.path(), setup).await;
    let sent = anthropic_agent(&url, 40).await;
    let got = upstream.all();
    assert_eq!(got.len(), sent.len());
    let mut compacted = 0;
    for (turn, (agent, upstream)) in sent.iter().zip(&got).enumerate() {
        let out = upstream.json();
        let tokens = request_tokens(Dialect::Anthropic, &out).unwrap();
        assert!(
            tokens <= WINDOW,
            "turn {turn}: {tokens} tokens sent over a {WINDOW} window"
        );
        let errors = anthropic_pairing_errors(out["messages"].as_array().unwrap());
        assert!(errors.is_empty(), "turn {turn}: {errors:?}");
        if out["messages"] != agent["messages"] {
            compacted += 1;
            // Only the history changes; the agent's other fields go as sent.
            assert_eq!(out["system"], agent["system"]);
            assert_eq!(out["tools"], agent["tools"]);
            assert_eq!(out["max_tokens"], agent["max_tokens"]);
        } else {
            assert_eq!(
                upstream.body,
                agent.to_string().as_bytes(),
                "turn {turn}: untouched bodies go byte for byte"
            );
        }
    }
    let agent_tokens = request_tokens(Dialect::Anthropic, sent.last().unwrap()).unwrap();
    assert!(
        agent_tokens > 2 * WINDOW,
        "the agent's history must outgrow the window ({agent_tokens})"
    );
    assert!(compacted > 0, "no request was compacted");
    // The checkpoint is there, as a user message the encoder wrote.
    let last = got.last().unwrap().json();
    let first = last["messages"][0].to_string();
    assert!(
        first.contains(abridge::compact::host::CHECKPOINT_OPENING.trim_end()),
        "{first}"
    );
}

#[tokio::test]
async fn the_compacted_prefix_is_the_same_bytes_on_the_next_turn() {
    let store = tempfile::tempdir().unwrap();
    let setup = Setup {
        window: Some(WINDOW),
        settings: digest_settings(),
        ..Setup::default()
    };
    let (url, upstream) = proxy(store.path(), setup).await;
    let sent = anthropic_agent(&url, 40).await;
    let got = upstream.all();
    let mut stable = 0;
    for turn in 1..got.len() {
        let (before, after) = (got[turn - 1].json(), got[turn].json());
        let (before, after) = (
            before["messages"].as_array().unwrap(),
            after["messages"].as_array().unwrap(),
        );
        let compacted =
            |out: &[Value], agent: &Value| out != agent["messages"].as_array().unwrap().as_slice();
        if !(compacted(before, &sent[turn - 1]) && compacted(after, &sent[turn]))
            || before[0] != after[0]
        {
            continue; // not both compacted, or compacted again in between
        }
        let text = |items: &[Value]| items.iter().map(Value::to_string).collect::<Vec<_>>();
        assert_eq!(
            text(&after[..before.len()]),
            text(before),
            "turn {turn}: the prefix changed"
        );
        // And in the body's bytes, not only as JSON values.
        let (b, a) = (&got[turn - 1].body, &got[turn].body);
        let head = b.windows(12).position(|w| w == b"\"messages\":[").unwrap();
        let common = b.iter().zip(a.iter()).take_while(|(x, y)| x == y).count();
        assert!(
            common
                > head
                    + before[..before.len() - 1]
                        .iter()
                        .map(|v| v.to_string().len())
                        .sum::<usize>(),
            "turn {turn}"
        );
        stable += 1;
    }
    assert!(stable >= 3, "only {stable} turns kept the compacted prefix");
}
