//! The trip upstream: the request with the agent's headers (its keys
//! included; they are never stored or logged), and the answer streamed
//! back as it arrives while a copy is kept to record the reply.

use axum::body::Body;
use axum::http::HeaderMap;
use axum::http::HeaderName;
use axum::http::request::Parts;
use axum::response::IntoResponse;
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use tokio::sync::OwnedMutexGuard;

use crate::conversation::Conversation;
use crate::dialect::Dialect;
use crate::reply::reply_message;

/// A compacted route's request on its way: the conversation stays locked
/// until its reply is recorded, so the agent's next request finds it.
#[derive(Debug)]
pub(crate) struct Turn {
    pub(crate) conversation: OwnedMutexGuard<Conversation>,
    pub(crate) dialect: Dialect,
}

impl Turn {
    fn record(mut self, body: &[u8], streamed: bool) {
        let Some(reply) = reply_message(self.dialect, streamed, body) else {
            tracing::debug!(session = %self.conversation.id, "the answer held no reply to record");
            return;
        };
        if let Err(error) = self.conversation.record(reply) {
            tracing::warn!(session = %self.conversation.id, %error, "the reply could not be logged");
        }
    }
}

/// Headers that belong to one connection, never forwarded.
fn hop_by_hop(name: &HeaderName) -> bool {
    matches!(
        name.as_str(),
        "connection"
            | "keep-alive"
            | "proxy-connection"
            | "proxy-authorization"
            | "transfer-encoding"
            | "te"
            | "trailer"
            | "upgrade"
            | "host"
            | "content-length"
    )
}

/// Sends the request to `base` + its path and query, and answers with
/// what came back. On a compacted route (`turn` set) the agent's
/// `accept-encoding` is left out so the reply can be read to be logged.
pub(crate) async fn forward(
    client: &reqwest::Client,
    base: &str,
    parts: &Parts,
    body: Bytes,
    turn: Option<Turn>,
) -> Response {
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let url = format!("{}{path}", base.trim_end_matches('/'));
    let mut request = client.request(parts.method.clone(), &url).body(body);
    for (name, value) in &parts.headers {
        if hop_by_hop(name) || (turn.is_some() && name == "accept-encoding") {
            continue;
        }
        request = request.header(name, value);
    }
    let upstream = match request.send().await {
        Ok(upstream) => upstream,
        Err(error) => {
            // The URL is ours; the error never carries the agent's headers.
            tracing::warn!(%url, error = %error.without_url(), "the upstream cannot be reached");
            return unreachable(base);
        }
    };
    let status = upstream.status();
    let mut headers = HeaderMap::new();
    for (name, value) in upstream.headers() {
        if !hop_by_hop(name) {
            headers.append(name.clone(), value.clone());
        }
    }
    let streamed = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(64);
    tokio::spawn(async move {
        let mut chunks = upstream.bytes_stream();
        let mut seen = Vec::new();
        let mut whole = true;
        while let Some(chunk) = chunks.next().await {
            match chunk {
                Ok(chunk) => {
                    if turn.is_some() {
                        seen.extend_from_slice(&chunk);
                    }
                    // A client gone away still lets the reply be recorded.
                    let _ = sender.send(Ok(chunk)).await;
                }
                Err(error) => {
                    whole = false;
                    let _ = sender
                        .send(Err(std::io::Error::other(error.without_url())))
                        .await;
                    break;
                }
            }
        }
        // The agent has the whole answer once the stream ends: recording
        // (and syncing the log) happens after, off its path. The
        // conversation stays locked until then, so its next request still
        // finds the reply logged.
        drop(sender);
        if let Some(turn) = turn
            && whole
            && status.is_success()
        {
            turn.record(&seen, streamed);
        }
    });
    let stream = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|chunk| (chunk, receiver))
    });
    let mut response = Response::new(Body::from_stream(stream));
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// 502 with the error body every refusal of abridge's services has.
fn unreachable(base: &str) -> Response {
    let body = serde_json::json!({"error": {
        "code": "upstream_unreachable",
        "message": format!("the upstream {base} did not answer; check --upstream and that it is running"),
    }});
    (axum::http::StatusCode::BAD_GATEWAY, axum::Json(body)).into_response()
}
