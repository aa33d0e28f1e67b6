//! What the proxy leaves alone: requests below the threshold, paths it
//! does not read, replies, keys. And what it refuses.

use abridge_serve::ServiceLimits;
use serde_json::Value;
use serde_json::json;

use crate::common::*;

/// A first turn in each dialect, spaced oddly on purpose: the upstream
/// must get these exact bytes.
fn first_turns() -> [(&'static str, String); 3] {
    [
        (
            "/v1/messages",
            "{ \"model\":\"claude-x\",  \"max_tokens\": 100,\n \"system\":\"be brief\",\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}".to_string(),
        ),
        (
            "/v1/chat/completions",
            "{\"model\" : \"gpt-x\", \"messages\":[ {\"role\":\"system\",\"content\":\"be brief\"}, {\"role\":\"user\",\"content\":\"hello\"} ] }".to_string(),
        ),
        (
            "/v1/responses",
            "{\"model\":\"gpt-x\",\"instructions\":\"be brief\",   \"input\":\"hello\"}".to_string(),
        ),
    ]
}

#[tokio::test]
async fn below_the_threshold_each_dialect_goes_upstream_byte_for_byte() {
    let store = tempfile::tempdir().unwrap();
    let (url, upstream) = proxy(store.path(), Setup::default()).await;
    for (path, body) in first_turns() {
        let (status, _) = post(&url, path, &[], body.clone()).await;
        assert_eq!(status, 200, "{path}");
        let got = upstream.last();
        assert_eq!(got.path_and_query, path);
        assert_eq!(got.body, body.as_bytes(), "{path}");
    }
    // Each started its own session, and each logged the reply.
    let logs = session_logs(store.path());
    assert_eq!(logs.len(), 3);
    for (name, bytes) in logs {
        let text = String::from_utf8(bytes).unwrap();
        assert!(
            text.contains("working on step"),
            "{name}: the reply was not logged:\n{text}"
        );
    }
}

#[tokio::test]
async fn the_next_turn_continues_the_same_session() {
    let store = tempfile::tempdir().unwrap();
    let (url, upstream) = proxy(store.path(), Setup::default()).await;
    let mut messages = vec![json!({"role": "user", "content": "hello"})];
    for _ in 0..3 {
        let body = json!({"model": "gpt-x", "messages": messages});
        let (_, reply) = post(&url, "/v1/chat/completions", &[], body.to_string()).await;
        let reply: Value = serde_json::from_slice(&reply).unwrap();
        let said = reply["choices"][0]["message"].clone();
        let call = said["tool_calls"][0]["id"].as_str().unwrap().to_string();
        messages.push(said);
        messages.push(json!({"role": "tool", "tool_call_id": call, "content": "fn main() {}"}));
        assert_eq!(upstream.last().body, body.to_string().as_bytes());
    }
    let logs = session_logs(store.path());
    assert_eq!(logs.len(), 1, "one conversation, one session");
    let text = String::from_utf8(logs[0].1.clone()).unwrap();
    // Three replies logged once each, never a second copy from the resend.
    for turn in 0..3 {
        assert_eq!(text.matches(&reply_text(turn)).count(), 1, "{text}");
    }
}

#[tokio::test]
async fn a_streamed_reply_comes_back_unchanged_and_is_logged() {
    let store = tempfile::tempdir().unwrap();
    let (url, _upstream) = proxy(store.path(), Setup::default()).await;
    let body = json!({"model": "claude-x", "max_tokens": 10, "stream": true,
        "messages": [{"role": "user", "content": "stream please"}]});
    let (status, got) = post(&url, "/v1/messages", &[], body.to_string()).await;
    assert_eq!(status, 200);
    assert_eq!(got, anthropic_sse(0, body.to_string().len() / 4).as_bytes());
    let logs = session_logs(store.path());
    let text = String::from_utf8(logs[0].1.clone()).unwrap();
    assert!(text.contains(&reply_text(0)), "{text}");
}

#[tokio::test]
async fn keys_reach_the_upstream_and_never_the_store() {
    let store = tempfile::tempdir().unwrap();
    let (url, upstream) = proxy(store.path(), Setup::default()).await;
    let anthropic_key = "sk-ant-SECRET-never-stored-41";
    let openai_key = "sk-proj-SECRET-never-stored-42";
    for (path, body) in first_turns() {
        let headers = [
            ("x-api-key", anthropic_key),
            ("authorization", &*format!("Bearer {openai_key}")),
        ];
        post(&url, path, &headers, body).await;
        let got = upstream.last();
        assert_eq!(got.headers["x-api-key"], anthropic_key);
        assert_eq!(
            got.headers["authorization"],
            format!("Bearer {openai_key}").as_str()
        );
    }
    let files = files_under(store.path());
    assert!(
        files.len() >= 3,
        "{:?}",
        files.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    for (name, bytes) in files {
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains("SECRET"), "{name} holds a key");
    }
}

#[tokio::test]
async fn a_body_over_the_limit_gets_413_with_an_error_body() {
    let store = tempfile::tempdir().unwrap();
    let setup = Setup {
        limits: ServiceLimits {
            body_bytes: 4096,
            ..ServiceLimits::default()
        },
        ..Setup::default()
    };
    let (url, upstream) = proxy(store.path(), setup).await;
    let body = json!({"model": "x", "messages": [{"role": "user", "content": "y".repeat(10_000)}]});
    let (status, got) = post(&url, "/v1/messages", &[], body.to_string()).await;
    assert_eq!(status, 413);
    let error: Value = serde_json::from_slice(&got).unwrap();
    assert_eq!(error["error"]["code"], "too_large");
    assert!(upstream.all().is_empty(), "nothing went upstream");
}

#[tokio::test]
async fn unknown_paths_and_count_tokens_pass_through_untouched() {
    let store = tempfile::tempdir().unwrap();
    let (url, upstream) = proxy(store.path(), Setup::default()).await;
    let response = reqwest::Client::new()
        .get(format!("{url}/v1/models?limit=2&after=a%20b"))
        .header("x-custom", "kept")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-upstream"], "fake");
    let text = response.text().await.unwrap();
    assert_eq!(
        text,
        "{\"path\":\"/v1/models?limit=2&after=a%20b\",\"method\":\"GET\"}"
    );
    let got = upstream.last();
    assert_eq!(got.path_and_query, "/v1/models?limit=2&after=a%20b");
    assert_eq!(got.headers["x-custom"], "kept");

    let count =
        "{\"model\":\"claude-x\",  \"messages\":[{\"role\":\"user\",\"content\":\"count me\"}]}";
    post(
        &url,
        "/v1/messages/count_tokens",
        &[("anthropic-version", "2023-06-01")],
        count,
    )
    .await;
    let got = upstream.last();
    assert_eq!(got.path_and_query, "/v1/messages/count_tokens");
    assert_eq!(got.body, count.as_bytes());
    assert!(
        session_logs(store.path()).is_empty(),
        "no session for a path the proxy does not read"
    );
}
