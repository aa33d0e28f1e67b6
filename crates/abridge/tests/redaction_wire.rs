//! Secrets never reach a summarizer (issue 11, point 1): the shared
//! redaction session compacted through the Harness by `soft`, `remote` and
//! `handoff` against a wiremock server on 127.0.0.1. Every request body the
//! server received (retries and halved windows included) holds the
//! placeholders and none of the secrets; so do the checkpoint and the
//! handoff file, even when the model echoes a secret back; the log keeps
//! the originals.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use abridge::Harness;
use abridge::MethodSources;
use abridge::PassStatus;
use abridge::Settings;
use abridge::SummarizerModel;
use abridge::basic::RemoteConfig;
use abridge::basic::RemoteKind;
use abridge::basic::SoftConfig;
use abridge::basic::remote_method;
use abridge::llm::LlmClient;
use abridge::llm::RetryPolicy;
use abridge_test_support::secrets;
use serde_json::Value;
use serde_json::json;
use wiremock::Mock;
use wiremock::MockServer;
use wiremock::ResponseTemplate;
use wiremock::matchers::method;

/// An answer that echoes a secret, as a model quoting its input would:
/// the commit must redact it again.
fn echoing_summary() -> String {
    format!(
        "## Goal\nDeploy with the key {}.\n\n## State\nCredentials read.\n\n## Files\nnone\n\n\
         ## Next steps\nDeploy.\n\n## Pitfalls\nnone\n\n## In short\nDeploy next.",
        secrets::secret("openai-key")
    )
}

fn chat_answer(content: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "summ-1",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 40},
    }))
}

/// A server that first says the input is too long (a halving), then is
/// busy (a retry), then answers `content`.
async fn server(content: &str) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({"error": {
            "message": "This model's maximum context length is 4096 tokens.",
            "type": "invalid_request_error", "code": "context_length_exceeded"}})))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(503).set_body_string("busy"))
        .up_to_n_times(1)
        .with_priority(2)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .respond_with(chat_answer(content))
        .with_priority(3)
        .mount(&server)
        .await;
    server
}

fn client(server: &MockServer) -> Arc<dyn LlmClient> {
    Arc::new(
        abridge::llm::openai_compatible(format!("{}/v1", server.uri()), "summ-1", None).unwrap(),
    )
}

fn quick_retry() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 3,
        initial_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(20),
        timeout: Some(Duration::from_secs(20)),
        ..RetryPolicy::deterministic()
    }
}

fn settings(methods: &str) -> Settings {
    Settings::from_toml(
        &format!(
            "method_order = [\"{methods}\"]\nkeep_recent_tokens = 400\n{}",
            secrets::settings_toml()
        ),
        "abridge.toml",
    )
    .unwrap()
}

fn summarizer(server: &MockServer, handoff_file: Option<PathBuf>) -> SummarizerModel {
    SummarizerModel {
        client: client(server),
        model: "summ-1".into(),
        retry: quick_retry(),
        soft: SoftConfig::default(),
        handoff_file,
        handoff_max_tokens: None,
    }
}

fn harness(methods: &str, sources: MethodSources) -> Harness {
    Harness::builder(secrets::session(), "claude-sonnet-4-5")
        .settings(settings(methods))
        .sources(sources)
        .window(200_000)
        .build()
        .unwrap()
}

async fn bodies(server: &MockServer) -> Vec<String> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .map(|r| String::from_utf8(r.body.clone()).unwrap())
        .collect()
}

/// Every body is clean; together they carry every placeholder (the
/// history was sent, redacted).
fn assert_bodies_clean(what: &str, bodies: &[String]) {
    for (i, body) in bodies.iter().enumerate() {
        serde_json::from_str::<Value>(body).unwrap();
        secrets::assert_no_secret(&format!("{what} request {i}"), body);
    }
    secrets::assert_placeholders(what, &bodies.concat(), &secrets::all_kinds());
}

/// The checkpoint on the surface, and the fixture's originals in the log.
fn assert_checkpoint_clean_and_log_intact(harness: &Harness) {
    let session = abridge::compact::host::lock_session(harness.session());
    let checkpoint = session
        .surface_messages()
        .into_iter()
        .find(|m| abridge::compact::host::is_checkpoint(m))
        .expect("a checkpoint on the surface");
    let text = format!("{checkpoint:?}");
    secrets::assert_no_secret("the checkpoint", &text);
    secrets::assert_placeholders("the checkpoint", &text, &["openai-key"]);
    let logged: String = (0..4)
        .filter_map(|seq| session.message(seq))
        .map(|m| format!("{m:?}"))
        .collect();
    secrets::assert_originals("the log", &logged);
}

#[tokio::test]
async fn soft_sends_no_secret_in_any_request_even_retried_or_halved() {
    let server = server(&echoing_summary()).await;
    let sources = MethodSources {
        summarizer: Some(summarizer(&server, None)),
        ..MethodSources::offline("claude-sonnet-4-5")
    };
    let harness = harness("soft", sources);
    let pass = harness.compact(&[], None).await.unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
    let bodies = bodies(&server).await;
    assert!(bodies.len() >= 3, "a halving and a retry: {}", bodies.len());
    assert_bodies_clean("soft", &bodies);
    assert_checkpoint_clean_and_log_intact(&harness);
}

#[tokio::test]
async fn remote_sends_no_secret_and_lands_a_clean_checkpoint() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(chat_answer(&echoing_summary()))
        .mount(&server)
        .await;
    let mut config = RemoteConfig::new(
        RemoteKind::ChatCompletions,
        format!("{}/v1", server.uri()),
        "summ-1",
    );
    config.retry = RetryPolicy::no_retries();
    let sources = MethodSources {
        remote: Some(remote_method(config).unwrap()),
        ..MethodSources::offline("claude-sonnet-4-5")
    };
    let harness = harness("remote", sources);
    let pass = harness.compact(&[], None).await.unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
    let bodies = bodies(&server).await;
    assert!(!bodies.is_empty());
    assert_bodies_clean("remote", &bodies);
    assert_checkpoint_clean_and_log_intact(&harness);
}

#[tokio::test]
async fn handoff_sends_no_secret_and_saves_a_clean_private_file() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(chat_answer(&echoing_summary()))
        .mount(&server)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("HANDOFF.md");
    // A looser file already there is replaced by a private one.
    std::fs::write(&file, "old").unwrap();
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let sources = MethodSources {
        summarizer: Some(summarizer(&server, Some(file.clone()))),
        ..MethodSources::offline("claude-sonnet-4-5")
    };
    let harness = harness("handoff", sources);
    let pass = harness.compact(&[], None).await.unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
    assert_bodies_clean("handoff", &bodies(&server).await);
    assert_checkpoint_clean_and_log_intact(&harness);

    let saved = std::fs::read_to_string(&file).unwrap();
    secrets::assert_no_secret("the handoff file", &saved);
    secrets::assert_placeholders("the handoff file", &saved, &["openai-key"]);
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the handoff file is {mode:o}");
}
