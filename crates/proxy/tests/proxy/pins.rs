//! Pins through the proxy (issue 32): the CLAUDE.md reminder Claude Code
//! puts in its first request is pinned as it arrives, and once the proxy
//! compacts that request away every request still carries it, once.

use abridge_proxy::Dialect;
use abridge_proxy::request_tokens;
use serde_json::Value;
use serde_json::json;

use crate::common::*;

const WINDOW: u64 = 6_000;

/// What only the CLAUDE.md file says: counted in every request.
const RULE: &str = "Never force-push from this repository.";

fn reminder() -> String {
    format!(
        "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# claudeMd\nCodebase and user instructions are shown below.\n\nContents of /repo/CLAUDE.md (project instructions, checked into the codebase):\n\n{RULE}\n</system-reminder>"
    )
}

/// How many times `text` is in `value`'s strings.
fn times(value: &Value, text: &str) -> usize {
    match value {
        Value::String(s) => s.matches(text).count(),
        Value::Array(items) => items.iter().map(|v| times(v, text)).sum(),
        Value::Object(map) => map.values().map(|v| times(v, text)).sum(),
        _ => 0,
    }
}

#[tokio::test]
async fn a_claude_md_reminder_is_in_every_request_once_after_the_proxy_compacts() {
    let store = tempfile::tempdir().unwrap();
    let setup = Setup {
        window: Some(WINDOW),
        settings: digest_settings(),
        ..Setup::default()
    };
    let (url, upstream) = proxy(store.path(), setup).await;
    let mut messages = vec![json!({"role": "user", "content": [
        {"type": "text", "text": reminder()},
        {"type": "text", "text": "Fix the failing test in src/lib.rs."}
    ]})];
    let mut sent = Vec::new();
    for turn in 0..30 {
        let body = json!({"model": "claude-x", "max_tokens": 200, "system": "You are careful.", "messages": messages});
        let (status, reply) = post(
            &url,
            "/v1/messages",
            &[("x-api-key", "k")],
            body.to_string(),
        )
        .await;
        assert_eq!(status, 200, "turn {turn}");
        sent.push(body);
        let reply: Value = serde_json::from_slice(&reply).unwrap();
        let call = reply["content"][1]["id"].as_str().unwrap().to_string();
        messages.push(json!({"role": "assistant", "content": reply["content"]}));
        let output = format!("// file {turn}\n{}", "let v = compute(input);\n".repeat(60));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "content": output}
        ]}));
    }
    let got = upstream.all();
    let mut hidden = 0;
    for (turn, (agent, out)) in sent.iter().zip(&got).enumerate() {
        let out = out.json();
        assert_eq!(
            times(&out["messages"], RULE),
            1,
            "turn {turn}: the CLAUDE.md rule must go upstream exactly once"
        );
        let tokens = request_tokens(Dialect::Anthropic, &out).unwrap();
        assert!(tokens <= WINDOW, "turn {turn}: {tokens} tokens");
        // The agent's first request, reminder and all, is no longer sent.
        let items = out["messages"].as_array().unwrap();
        if !items.contains(&agent["messages"][0]) {
            hidden += 1;
        }
    }
    assert!(hidden > 0, "no compaction hid the first request");
}
