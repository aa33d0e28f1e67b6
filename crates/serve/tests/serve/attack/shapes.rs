//! Every refusal has the service's error body, the framework's own
//! included; settings are bounded; a 500 names an error id, not a path.

use serde_json::Value;
use serde_json::json;

use super::code;
use crate::common::Setup;
use crate::common::TOKEN_A;
use crate::common::small;

/// `method path` with raw headers and body: status, content type, JSON.
async fn raw(
    base: &str,
    method: reqwest::Method,
    path: &str,
    content_type: Option<&str>,
    body: &str,
) -> (u16, String, Value) {
    let mut request = reqwest::Client::new()
        .request(method, format!("{base}{path}"))
        .bearer_auth(TOKEN_A)
        .body(body.to_string());
    if let Some(content_type) = content_type {
        request = request.header("content-type", content_type);
    }
    let response = request.send().await.expect("send");
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let text = response.text().await.expect("body");
    (
        status,
        kind,
        serde_json::from_str(&text).unwrap_or(Value::Null),
    )
}

/// A request (method, path, content type, body) and the status and code
/// it must get.
type Case<'a> = (
    reqwest::Method,
    &'a str,
    Option<&'a str>,
    String,
    u16,
    &'a str,
);

// Issue 28: framework rejections were plain text (`400 Failed to parse
// the request body as JSON...`, `415`, `413`, `422 ... unknown field`),
// bad recall arguments answered 200, `window` 1 and 2^64-1 were accepted.
#[tokio::test]
async fn every_refusal_has_the_error_body() {
    use reqwest::Method;
    let dir = tempfile::tempdir().expect("dir");
    let mut setup = Setup::new(dir.path());
    setup.limits.body_bytes = 4096;
    let server = setup.start().await;
    let api = server.client(TOKEN_A);
    api.create(&small("s", &["digest"])).await;
    let json = Some("application/json");
    let messages = "/v1/sessions/s/messages";
    let big = format!("{{\"messages\": [\"{}\"]}}", "x".repeat(5000));
    let cases: Vec<Case<'_>> = vec![
        (
            Method::POST,
            messages,
            json,
            "{not json".into(),
            400,
            "bad_request",
        ),
        (
            Method::POST,
            messages,
            None,
            "{}".into(),
            415,
            "unsupported_media_type",
        ),
        (
            Method::POST,
            messages,
            Some("text/plain"),
            "{}".into(),
            415,
            "unsupported_media_type",
        ),
        (Method::POST, messages, json, big, 413, "too_large"),
        (
            Method::POST,
            messages,
            json,
            r#"{"messages": [], "x": 1}"#.into(),
            400,
            "bad_request",
        ),
        (
            Method::POST,
            messages,
            json,
            r#"{"messages": 5}"#.into(),
            400,
            "bad_request",
        ),
        (
            Method::POST,
            messages,
            json,
            r#"{"messages": [{"role": "robot", "content": []}]}"#.into(),
            400,
            "bad_request",
        ),
        (
            Method::POST,
            "/v1/sessions",
            json,
            r#"{"id": "w1", "window": 1}"#.into(),
            400,
            "bad_request",
        ),
        (
            Method::POST,
            "/v1/sessions",
            json,
            r#"{"id": "w2", "window": 18446744073709551615}"#.into(),
            400,
            "bad_request",
        ),
        (
            Method::POST,
            "/v1/sessions/s/recall",
            json,
            r#"{"nope": 1}"#.into(),
            400,
            "bad_request",
        ),
        (
            Method::POST,
            "/v1/sessions/s/recall",
            json,
            r#"{"ref": "recall://1", "query": "x"}"#.into(),
            400,
            "bad_request",
        ),
        (
            Method::POST,
            "/v1/sessions/s/recall",
            json,
            r#"{}"#.into(),
            400,
            "bad_request",
        ),
        (
            Method::GET,
            "/v1/sessions/s/request?provider=nope",
            None,
            String::new(),
            400,
            "bad_request",
        ),
        (
            Method::GET,
            "/v1/sessions/s/request?provder=anthropic",
            None,
            String::new(),
            400,
            "bad_request",
        ),
        (
            Method::POST,
            "/v1/sessions/s/on-error",
            json,
            r#"{"error": "flood"}"#.into(),
            400,
            "bad_request",
        ),
        (
            Method::GET,
            "/v1/nowhere",
            None,
            String::new(),
            404,
            "not_found",
        ),
        (
            Method::DELETE,
            "/v1/sessions",
            None,
            String::new(),
            405,
            "method_not_allowed",
        ),
        (
            Method::GET,
            "/v1/sessions/%FF%FE/stats",
            None,
            String::new(),
            400,
            "bad_request",
        ),
        (
            Method::GET,
            "/v1/sessions/nobody/stats",
            None,
            String::new(),
            404,
            "not_found",
        ),
    ];
    // Every case is tried, and every wrong answer listed.
    let mut wrong = Vec::new();
    for (method, path, content_type, body, status, expected) in cases {
        let label = format!("{method} {path} {body:.40}");
        let (got, kind, answer) = raw(&server.base, method, path, content_type, &body).await;
        let shaped = kind.starts_with("application/json")
            && answer["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
            && answer["error"]["code"] == expected;
        if got != status || !shaped {
            wrong.push(format!("{label}: {got} {kind} {answer}"));
        }
    }
    assert!(
        wrong.is_empty(),
        "answers without the error body or status:\n{}",
        wrong.join("\n")
    );
    let (status, body) = crate::common::Api::new(&server.base, None)
        .get("/v1/sessions")
        .await;
    assert_eq!(
        (status, code(status, &body)),
        (401, "unauthorized".to_string())
    );
    let (_, context) = api.get("/v1/sessions/s/context").await;
    assert_eq!(
        context["messages"],
        json!([]),
        "nothing refused was written"
    );
    server.shutdown().await;
}
