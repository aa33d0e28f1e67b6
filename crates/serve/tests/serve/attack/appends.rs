//! Appends keep the tool pairing the library checks, and keep every field
//! the client sent.

use serde_json::Value;
use serde_json::json;

use super::code;
use crate::common::Api;
use crate::common::Setup;
use crate::common::TOKEN_A;
use crate::common::small;

fn call(id: &str) -> Value {
    json!({"role": "assistant", "content": [{"type": "tool_call", "id": id, "name": "read", "arguments": {"path": "a.rs"}}]})
}

fn result(id: &str) -> Value {
    json!({"role": "tool", "content": [{"type": "tool_result", "call_id": id, "content": [{"type": "text", "text": "fn main() {}"}]}]})
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}]})
}

async fn append(api: &Api, messages: Value) -> (u16, Value) {
    api.post("/v1/sessions/s/messages", &json!({"messages": messages}))
        .await
}

// Issue 28: a result before its call, a result for an unknown call and
// two calls with one id all answered 200, and `/request?provider=
// anthropic` then built a body the provider rejects.
#[tokio::test]
async fn unpaired_appends_are_refused_naming_the_message() {
    let dir = tempfile::tempdir().expect("dir");
    let server = Setup::new(dir.path()).start().await;
    let api = server.client(TOKEN_A);
    api.create(&small("s", &["digest"])).await;
    let (status, body) = append(&api, json!([user("read a.rs"), call("c1"), result("c1")])).await;
    assert_eq!(status, 200, "{body}");
    let cases = [
        (
            json!([user("again"), result("c2"), call("c2")]),
            "messages[1]: a tool result for call \"c2\", which no earlier message makes",
        ),
        (
            json!([user("again"), result("nope")]),
            "messages[1]: a tool result for call \"nope\", which no earlier message makes",
        ),
        (
            json!([call("c1")]),
            "messages[0]: a tool call with id \"c1\", which an earlier call already has",
        ),
        (
            json!([user("x"), {"role": "assistant", "content": [
                {"type": "tool_call", "id": "d", "name": "a", "arguments": {}},
                {"type": "tool_call", "id": "d", "name": "b", "arguments": {}}]}]),
            "messages[1]: a tool call with id \"d\", which an earlier call already has",
        ),
        (
            json!([result("c1")]),
            "messages[0]: a second tool result for call \"c1\"",
        ),
    ];
    for (messages, said) in cases {
        let (status, body) = append(&api, messages).await;
        assert_eq!(status, 422, "{body}");
        assert_eq!(code(status, &body), "rejected");
        assert_eq!(
            body["error"]["message"],
            format!("{said}; nothing of the batch was written")
        );
    }
    let (_, context) = api.get("/v1/sessions/s/context").await;
    assert_eq!(
        context["messages"].as_array().map(Vec::len),
        Some(3),
        "nothing refused was written"
    );
    let (status, request) = api.get("/v1/sessions/s/request?provider=anthropic").await;
    assert_eq!(status, 200, "{request}");
    server.shutdown().await;
}

// Issue 28: unknown fields inside a message were dropped without a word,
// while unknown fields at the top were refused.
#[tokio::test]
async fn an_unknown_field_anywhere_is_refused_with_its_path() {
    let dir = tempfile::tempdir().expect("dir");
    let server = Setup::new(dir.path()).start().await;
    let api = server.client(TOKEN_A);
    api.create(&small("s", &["digest"])).await;
    for (messages, path) in [
        (
            json!([{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]),
            "messages[0].content[0].cache_control",
        ),
        (
            json!([{"role": "user", "content": [], "name": "alice"}]),
            "messages[0].name",
        ),
    ] {
        let (status, body) = append(&api, messages).await;
        assert_eq!(status, 400, "{body}");
        assert_eq!(code(status, &body), "bad_request");
        assert_eq!(
            body["error"]["message"],
            format!("{path}: unknown field; nothing was written")
        );
    }
    let (status, body) = api
        .post(
            "/v1/sessions/s/messages",
            &json!({"messages": [user("hi")], "extra": 1}),
        )
        .await;
    assert_eq!(
        (status, code(status, &body)),
        (400, "bad_request".to_string()),
        "{body}"
    );
    // Defaults written out are fine.
    let (status, body) = append(
        &api,
        json!([{"role": "user", "content": [{"type": "text", "text": "hi"}], "meta": {"useless": false}}]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    server.shutdown().await;
}
