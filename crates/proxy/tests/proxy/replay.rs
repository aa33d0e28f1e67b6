//! The bundled sessions replayed as an agent would send them: each turn
//! resends the whole history so far (encoded by abridge-llm's Anthropic
//! encoder), at a small window. What the proxy sends upstream never
//! exceeds the window.

use std::path::Path;

use abridge::llm::AnthropicClient;
use abridge::llm::AnthropicOptions;
use abridge::llm::Message;
use abridge::llm::ProviderConfig;
use abridge::llm::Purpose;
use abridge::llm::Request;
use abridge::llm::Role;
use abridge::session::MemoryStore;
use abridge_proxy::Dialect;
use abridge_proxy::request_tokens;
use serde_json::Value;

use crate::common::*;

/// Turns replayed per session: each resends everything before it, so the
/// bytes grow with the square of this.
const TURNS: usize = 80;

fn bundled(name: &str) -> Vec<Message> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../assets/sessions")
        .join(name);
    let imported = abridge::import::read(&path, None).unwrap();
    let (session, _) = imported.into_session(Box::new(MemoryStore::new())).unwrap();
    session
        .surface_messages()
        .iter()
        .map(|m| (**m).clone())
        .collect()
}

/// The request bodies an agent sends: one per assistant turn, carrying
/// everything before that turn.
fn requests(messages: &[Message]) -> Vec<Value> {
    let encoder = AnthropicClient::new(
        ProviderConfig::new("http://127.0.0.1:9").with_default_model("claude-x"),
        AnthropicOptions::default(),
    )
    .unwrap();
    messages
        .iter()
        .enumerate()
        .filter(|(i, m)| {
            m.role == Role::Assistant && *i > 0 && messages[*i - 1].role != Role::Assistant
        })
        .take(TURNS)
        .map(|(i, _)| {
            let request = Request::new("claude-x", messages[..i].to_vec(), Purpose::Turn);
            encoder.build_body(&request, false).unwrap()
        })
        .collect()
}

/// Trim first: a single tool result larger than the window is the
/// newest message, and no checkpoint shrinks the newest message. The
/// Claude Code and pi sessions replay at 16k: each holds a tool result
/// that trim cannot bring under 8k, and a turn no method can bring under
/// the window goes out as the agent sent it (the provider answers it).
fn trim_then_digest() -> abridge::Settings {
    abridge::Settings::from_toml("method_order = [\"trim\", \"digest\"]\n", "replay.toml").unwrap()
}

async fn replay(name: &str, window: u64) {
    // RUST_LOG=abridge_proxy=debug shows why a turn went out as sent.
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .try_init();
    let store = tempfile::tempdir().unwrap();
    let setup = Setup {
        window: Some(window),
        settings: trim_then_digest(),
        ..Setup::default()
    };
    let (url, upstream) = proxy(store.path(), setup).await;
    let bodies = requests(&bundled(name));
    assert!(bodies.len() >= 10, "{name}: only {} turns", bodies.len());
    let mut over = 0;
    for body in &bodies {
        let (status, _) = post(&url, "/v1/messages", &[], body.to_string()).await;
        assert_eq!(status, 200);
        let tokens = request_tokens(Dialect::Anthropic, body).unwrap();
        if tokens > window {
            over += 1;
        }
    }
    assert!(
        over > 0,
        "{name}: the agent's history never outgrew the window; the test shows nothing"
    );
    for (turn, got) in upstream.all().iter().enumerate() {
        let tokens = request_tokens(Dialect::Anthropic, &got.json()).unwrap();
        assert!(
            tokens <= window,
            "{name} turn {turn}: {tokens} tokens sent over a {window} window"
        );
    }
    // A history the agent rewrote goes on in the same session, on a
    // branch; one that shares nothing (the encoder drops an empty
    // assistant turn at the start of pi's and merges the user messages
    // around it, once) starts a session naming the one before it. Every
    // log passes the checker: replies the replay does not send back (it
    // resends the recorded turns) are left on branches of their own, so
    // their tool calls do not wait on the surface.
    let logs = session_logs(store.path());
    assert!(
        !logs.is_empty() && logs.len() <= 2,
        "{name}: {} sessions",
        logs.len()
    );
    let mut linked = 0;
    for (path, bytes) in &logs {
        let header = String::from_utf8_lossy(bytes);
        linked += usize::from(
            header
                .lines()
                .next()
                .unwrap()
                .contains("\"parent_session\""),
        );
        let session = open_log(Path::new(path));
        let report = abridge::compact::check::check_invariants(&session);
        assert!(report.is_ok(), "{name}: {:?}", report.violations);
    }
    assert_eq!(
        linked,
        logs.len() - 1,
        "{name}: every later session names its parent"
    );
}

#[tokio::test]
async fn replayed_claude_code_session_stays_under_the_window() {
    replay("claude-code__spotter__4d5611e5.jsonl", 16_384).await;
}

#[tokio::test]
async fn replayed_codex_session_stays_under_the_window() {
    replay(
        "codex__localpush__rollout-2026-02-23T12-54-34-redacted.jsonl",
        4_096,
    )
    .await;
}

#[tokio::test]
async fn replayed_pi_session_stays_under_the_window() {
    replay("pi-mono__large-session.jsonl", 16_384).await;
}

#[tokio::test]
async fn replayed_swe_agent_session_stays_under_the_window() {
    replay(
        "swe-agent__marshmallow-1867__function_calling_replace_from_source.traj",
        4_096,
    )
    .await;
}
