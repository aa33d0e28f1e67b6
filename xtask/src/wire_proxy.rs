//! The proxy's outgoing bodies for `cargo xtask wire`: the bundled
//! sessions replayed through `abridge proxy` in each dialect, as an agent
//! sends them (each turn resends the whole history, encoded by
//! abridge-llm's encoder for that dialect), at a window small enough that
//! the proxy compacts. What reaches the (loopback, fake) upstream is
//! checked like every other body: the first request of each replay (below
//! the threshold, the agent's bytes) and the compacted ones (the agent's
//! items around what abridge wrote).

use std::sync::Arc;
use std::sync::Mutex;

use abridge_llm::Message;
use abridge_llm::Purpose;
use abridge_llm::Request;
use abridge_llm::Role;
use abridge_providers::AnthropicClient;
use abridge_providers::AnthropicOptions;
use abridge_providers::ChatOptions;
use abridge_providers::OpenAiChatClient;
use abridge_providers::OpenAiResponsesClient;
use abridge_providers::ProviderConfig;
use abridge_providers::ResponsesOptions;
use anyhow::Context;
use serde_json::Value;
use serde_json::json;
use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;

use crate::wire_case::Case;

/// Turns replayed per session and dialect.
const TURNS: usize = 40;
/// Compacted bodies kept per replay (spread over the replay).
const COMPACTED: usize = 4;
/// The window the proxy keeps requests under: small, so it compacts.
const WINDOW: u64 = 4_096;

/// Bodies the fake upstream received: (path, body).
type Seen = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

/// The reply the fake upstream gives on `path`, in that dialect.
fn reply(path: &str) -> Value {
    match path {
        "/v1/messages" => json!({
            "id": "m", "type": "message", "role": "assistant", "model": "claude-wire",
            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 100, "output_tokens": 1}
        }),
        "/v1/responses" => json!({
            "id": "r", "object": "response", "model": "gpt-wire", "status": "completed",
            "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}],
            "usage": {"input_tokens": 100, "output_tokens": 1}
        }),
        _ => json!({
            "id": "c", "object": "chat.completion", "model": "gpt-wire",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 1}
        }),
    }
}

/// A loopback upstream that keeps every body and answers in its path's
/// dialect.
async fn upstream(seen: Seen) -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let seen = Arc::clone(&seen);
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                let mut chunk = vec![0u8; 1 << 16];
                loop {
                    let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                        }
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
                    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while buffer.len() < end + 4 + length {
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                        }
                    }
                    let body = buffer[end + 4..end + 4 + length].to_vec();
                    buffer.drain(..end + 4 + length);
                    let text = reply(&path).to_string();
                    if let Ok(mut seen) = seen.lock() {
                        seen.push((path, body));
                    }
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{text}",
                        text.len()
                    );
                    if stream.write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    Ok(format!("http://{addr}"))
}

/// Writes the body an agent would send for a history.
type Encode = Box<dyn Fn(&[Message]) -> anyhow::Result<Value>>;

/// One dialect an agent may speak: its path, the endpoint name the check
/// knows, and the body an agent would send for `messages`.
struct Speaker {
    name: &'static str,
    path: &'static str,
    endpoint: &'static str,
    encode: Encode,
}

fn speakers() -> anyhow::Result<Vec<Speaker>> {
    let config = || ProviderConfig::new("http://127.0.0.1:9").with_api_key("sk-wire-check");
    let chat = OpenAiChatClient::new(config(), ChatOptions::openai())?;
    let responses = OpenAiResponsesClient::new(config(), ResponsesOptions::default())?;
    let anthropic = AnthropicClient::new(config(), AnthropicOptions::default())?;
    let request = |model: &str, messages: &[Message]| {
        let mut request = Request::new(model, messages.to_vec(), Purpose::Turn);
        request.max_output_tokens = Some(1024);
        request
    };
    Ok(vec![
        Speaker {
            name: "chat",
            path: "/v1/chat/completions",
            endpoint: "openai-chat",
            encode: Box::new(move |m| Ok(chat.build_body(&request("gpt-4o", m), false)?)),
        },
        Speaker {
            name: "responses",
            path: "/v1/responses",
            endpoint: "openai-responses",
            encode: Box::new(move |m| Ok(responses.build_body(&request("gpt-4o", m), false)?)),
        },
        Speaker {
            name: "messages",
            path: "/v1/messages",
            endpoint: "anthropic-messages",
            encode: Box::new(move |m| {
                Ok(anthropic.build_body(&request("claude-sonnet-4-5", m), false)?)
            }),
        },
    ])
}

/// The points where an agent sends a request: before each assistant turn
/// that follows a non-assistant message.
fn turn_points(messages: &[Message]) -> Vec<usize> {
    messages
        .iter()
        .enumerate()
        .filter(|(i, m)| {
            m.role == Role::Assistant && *i > 0 && messages[*i - 1].role != Role::Assistant
        })
        .map(|(i, _)| i)
        .take(TURNS)
        .collect()
}

/// The proxy's outgoing bodies for each `(name, messages)` history, in
/// each dialect.
pub(crate) fn cases(histories: &[(String, Vec<Message>)]) -> anyhow::Result<Vec<Case>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let store = std::env::temp_dir().join(format!("abridge-wire-proxy-{}", std::process::id()));
    let result = runtime.block_on(replay_all(&store, histories));
    let _ = std::fs::remove_dir_all(&store);
    result
}

async fn replay_all(
    store: &std::path::Path,
    histories: &[(String, Vec<Message>)],
) -> anyhow::Result<Vec<Case>> {
    let seen: Seen = Arc::default();
    let base = upstream(Arc::clone(&seen)).await?;
    let settings =
        abridge::Settings::from_toml("method_order = [\"trim\", \"digest\"]\n", "wire.toml")?;
    let config = abridge_proxy::ProxyConfig {
        settings,
        window: Some(WINDOW),
        model: Some("wire-check-model".into()),
        ..abridge_proxy::ProxyConfig::new(
            abridge_proxy::open_stores(store.to_str().context("temp dir is not UTF-8")?)?,
            abridge_proxy::Upstreams::parse(&[
                format!("anthropic={base}"),
                format!("openai={base}"),
            ])?,
        )
    };
    let proxy = abridge_proxy::Proxy::new(config)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(proxy.run(listener, std::future::pending()));
    let client = reqwest::Client::new();
    let mut cases = Vec::new();
    for speaker in speakers()? {
        for (name, messages) in histories {
            let mut sent = Vec::new();
            for point in turn_points(messages) {
                let body = (speaker.encode)(&messages[..point])?;
                let response = client
                    .post(format!("{url}{}", speaker.path))
                    .header("content-type", "application/json")
                    .body(body.to_string())
                    .send()
                    .await?;
                anyhow::ensure!(
                    response.status().is_success(),
                    "{name} {}: the proxy answered {}",
                    speaker.name,
                    response.status()
                );
                response.bytes().await?;
                sent.push(body);
            }
            let got: Vec<Value> =
                std::mem::take(&mut *seen.lock().map_err(|_| anyhow::anyhow!("poisoned"))?)
                    .into_iter()
                    .map(|(_, body)| serde_json::from_slice(&body))
                    .collect::<Result<_, _>>()?;
            anyhow::ensure!(
                got.len() == sent.len(),
                "{name} {}: {} requests sent, {} reached the upstream",
                speaker.name,
                sent.len(),
                got.len()
            );
            let compacted: Vec<usize> = (0..got.len()).filter(|i| got[*i] != sent[*i]).collect();
            anyhow::ensure!(
                !compacted.is_empty(),
                "{name} {}: the proxy never compacted at a {WINDOW}-token window; the check shows nothing",
                speaker.name
            );
            let step = compacted.len().div_ceil(COMPACTED);
            let picked = std::iter::once((0, "as-sent"))
                .chain(compacted.iter().step_by(step).map(|i| (*i, "compacted")));
            for (turn, kind) in picked {
                cases.push(Case {
                    name: format!("proxy-{name}-{}-turn{turn}-{kind}", speaker.name),
                    endpoint: speaker.endpoint,
                    streaming: false,
                    beta: String::new(),
                    body: got[turn].clone(),
                });
            }
        }
    }
    Ok(cases)
}
