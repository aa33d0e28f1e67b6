//! A fake upstream per dialect on loopback that keeps every request it
//! gets, and a proxy in front of it.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;

use abridge::Settings;
use abridge_proxy::Proxy;
use abridge_proxy::ProxyConfig;
use abridge_proxy::Upstreams;
use abridge_serve::ServiceLimits;
use axum::extract::Request;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::IntoResponse;
use axum::response::Response;
use bytes::Bytes;
use serde_json::Value;
use serde_json::json;

/// One request the upstream received.
#[derive(Debug, Clone)]
pub(crate) struct Captured {
    pub(crate) path_and_query: String,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
}

impl Captured {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

#[derive(Debug, Default)]
pub(crate) struct Upstream {
    pub(crate) captured: Mutex<Vec<Captured>>,
    turns: AtomicUsize,
}

impl Upstream {
    pub(crate) fn all(&self) -> Vec<Captured> {
        self.captured.lock().unwrap().clone()
    }

    pub(crate) fn last(&self) -> Captured {
        self.all().pop().unwrap()
    }
}

/// The text every fake reply carries, numbered by turn.
pub(crate) fn reply_text(turn: usize) -> String {
    format!("working on step {turn}")
}

/// The Anthropic reply the fake streams: a text block and a tool call.
pub(crate) fn anthropic_sse(turn: usize, input_tokens: usize) -> String {
    let events = [
        json!({"type": "message_start", "message": {"id": "msg", "type": "message", "role": "assistant", "model": "claude-fake", "content": [], "usage": {"input_tokens": input_tokens, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": reply_text(turn)}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}),
        json!({"type": "message_stop"}),
    ];
    events
        .iter()
        .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
        .collect()
}

/// The Chat reply the fake streams: the text in two pieces, then usage.
pub(crate) fn chat_sse(turn: usize) -> String {
    let text = reply_text(turn);
    let (a, b) = text.split_at(text.len() / 2);
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        json!({"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "gpt-fake",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let events = [
        chunk(json!({"role": "assistant", "content": a}), Value::Null),
        chunk(json!({"content": b}), Value::Null),
        chunk(json!({}), json!("stop")),
    ];
    let mut out: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    out.push_str("data: [DONE]\n\n");
    out
}

async fn answer(State(upstream): State<Arc<Upstream>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = axum::body::to_bytes(body, usize::MAX).await.unwrap();
    let path = parts.uri.path().to_string();
    upstream.captured.lock().unwrap().push(Captured {
        path_and_query: parts.uri.path_and_query().unwrap().to_string(),
        headers: parts.headers.clone(),
        body: body.clone(),
    });
    let turn = upstream.turns.fetch_add(1, Ordering::SeqCst);
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let streamed = request["stream"] == json!(true);
    // Usage as a provider would count it, roughly: the body's bytes / 4.
    let input = body.len() / 4;
    let text = reply_text(turn);
    let tool = format!("toolu_{turn}");
    match path.as_str() {
        "/v1/messages" if streamed => (
            [("content-type", "text/event-stream")],
            anthropic_sse(turn, input),
        )
            .into_response(),
        "/v1/messages" => axum::Json(json!({
            "id": "msg", "type": "message", "role": "assistant", "model": "claude-fake",
            "content": [
                {"type": "text", "text": text},
                {"type": "tool_use", "id": tool, "name": "read", "input": {"path": format!("src/{turn}.rs")}}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": input, "output_tokens": 20}
        }))
        .into_response(),
        "/v1/chat/completions" if streamed => (
            [("content-type", "text/event-stream")],
            chat_sse(turn),
        )
            .into_response(),
        "/v1/chat/completions" => axum::Json(json!({
            "id": "c", "object": "chat.completion", "model": "gpt-fake",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": text,
                "tool_calls": [{"id": tool, "type": "function", "function": {"name": "read", "arguments": format!("{{\"path\":\"src/{turn}.rs\"}}")}}]
            }}],
            "usage": {"prompt_tokens": input, "completion_tokens": 20}
        }))
        .into_response(),
        "/v1/responses" => axum::Json(json!({
            "id": "r", "object": "response", "model": "gpt-fake", "status": "completed",
            "output": [
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]},
                {"type": "function_call", "call_id": tool, "name": "read", "arguments": format!("{{\"path\":\"src/{turn}.rs\"}}")}
            ],
            "usage": {"input_tokens": input, "output_tokens": 20}
        }))
        .into_response(),
        _ => (
            [("x-upstream", "fake")],
            format!("{{\"path\":{:?},\"method\":{:?}}}", parts.uri.to_string(), parts.method.as_str()),
        )
            .into_response(),
    }
}

/// Starts the fake upstream on a free loopback port.
pub(crate) async fn upstream() -> (Arc<Upstream>, SocketAddr) {
    let state = Arc::new(Upstream::default());
    let router = axum::Router::new()
        .fallback(answer)
        .with_state(Arc::clone(&state));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (state, addr)
}

/// What a test proxy is built with.
#[derive(Default)]
pub(crate) struct Setup {
    pub(crate) window: Option<u64>,
    pub(crate) settings: Settings,
    pub(crate) limits: ServiceLimits,
}

/// The digest method only, so compaction needs no model.
pub(crate) fn digest_settings() -> Settings {
    Settings::from_toml("method_order = [\"digest\"]\n", "test.toml").unwrap()
}

/// A fake upstream and a proxy in front of it, logging under `store`.
pub(crate) async fn proxy(store: &Path, setup: Setup) -> (String, Arc<Upstream>) {
    let (upstream, addr) = upstream().await;
    let base = format!("http://{addr}");
    let upstreams =
        Upstreams::parse(&[format!("anthropic={base}"), format!("openai={base}")]).unwrap();
    let config = ProxyConfig {
        settings: setup.settings,
        window: setup.window,
        limits: setup.limits,
        model: Some("unknown-test-model".into()),
        ..ProxyConfig::new(
            abridge_proxy::open_stores(store.to_str().unwrap()).unwrap(),
            upstreams,
        )
    };
    let proxy = Proxy::new(config).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(proxy.run(listener, std::future::pending()));
    (url, upstream)
}

/// POSTs `body` to the proxy with the given headers.
pub(crate) async fn post(
    url: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<Bytes>,
) -> (u16, Bytes) {
    let mut request = reqwest::Client::new()
        .post(format!("{url}{path}"))
        .header("content-type", "application/json")
        .body(body.into());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.bytes().await.unwrap())
}

/// Every file under `dir`, read whole.
pub(crate) fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(files_under(&path));
        } else {
            out.push((path.display().to_string(), std::fs::read(&path).unwrap()));
        }
    }
    out
}

/// The proxy's session logs under `store`.
pub(crate) fn session_logs(store: &Path) -> Vec<(String, Vec<u8>)> {
    let dir = store.join(abridge_proxy::PROXY_TENANT);
    if !dir.exists() {
        return Vec::new();
    }
    files_under(&dir)
        .into_iter()
        .filter(|(name, _)| name.ends_with(".jsonl"))
        .collect()
}

/// Every tool call in an Anthropic message list is answered in the next
/// message, and every result answers a call of the message before it.
pub(crate) fn anthropic_pairing_errors(messages: &[Value]) -> Vec<String> {
    let ids = |message: &Value, kind: &str, key: &str| -> Vec<String> {
        message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["type"] == kind)
            .map(|b| b[key].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let mut errors = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let calls = ids(message, "tool_use", "id");
        let next = messages
            .get(i + 1)
            .map(|m| ids(m, "tool_result", "tool_use_id"))
            .unwrap_or_default();
        for call in &calls {
            if !next.contains(call) {
                errors.push(format!(
                    "message {i}: call {call} has no result in the next message"
                ));
            }
        }
        let results = ids(message, "tool_result", "tool_use_id");
        let before = if i == 0 {
            Vec::new()
        } else {
            ids(&messages[i - 1], "tool_use", "id")
        };
        for result in &results {
            if !before.contains(result) {
                errors.push(format!(
                    "message {i}: result for {result} has no call in the message before"
                ));
            }
        }
    }
    errors
}

/// The one session the proxy logged under `store`.
pub(crate) fn only_session(store: &Path) -> abridge_session::Session {
    let logs = session_logs(store);
    let names: Vec<&str> = logs.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(logs.len(), 1, "sessions: {names:?}");
    open_log(Path::new(&logs[0].0))
}

/// A session log, opened read-only.
pub(crate) fn open_log(path: &Path) -> abridge_session::Session {
    let options = abridge_session::JsonlOptions {
        read_only: true,
        ..abridge_session::JsonlOptions::default()
    };
    let store = abridge_session::JsonlStore::open(path, options).unwrap();
    abridge_session::Session::open(Box::new(store)).unwrap().0
}
