//! Anthropic's token counter: what goes on the wire, the count that comes
//! back, and each failure classified as the Messages client classifies it.

use std::time::Duration;

use abridge_llm::LlmError;
use abridge_llm::Purpose;
use abridge_providers::CountTokensClient;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;
use wiremock::Mock;
use wiremock::MockServer;
use wiremock::ResponseTemplate;
use wiremock::matchers::method;
use wiremock::matchers::path;

use super::support::Kind;
use super::support::TEST_KEY;
use super::support::render;
use super::support::request;

async fn server(answer: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CountTokensClient::PATH))
        .respond_with(answer)
        .mount(&server)
        .await;
    server
}

fn counter(server: &MockServer) -> CountTokensClient {
    CountTokensClient::new(Kind::Anthropic.config(&server.uri())).unwrap()
}

/// The request a turn would send, minus generation fields and cache
/// markers; the key in `x-api-key`, never in the snapshot.
#[tokio::test]
async fn request_shape() {
    let server =
        server(ResponseTemplate::new(200).set_body_json(json!({"input_tokens": 1234}))).await;
    let mut turn = request(Purpose::Turn);
    turn.max_output_tokens = Some(500);
    turn.temperature = Some(0.2);
    assert_eq!(counter(&server).count(&turn).await.unwrap(), 1234);
    let captured = server.received_requests().await.unwrap();
    assert_eq!(captured.len(), 1);
    let sent = &captured[0];
    assert_eq!(
        sent.headers.get("x-api-key").unwrap().to_str().unwrap(),
        TEST_KEY
    );
    let text = String::from_utf8(sent.body.clone()).unwrap();
    assert!(!text.contains(TEST_KEY));
    for absent in ["max_tokens", "stream", "temperature", "cache_control"] {
        assert!(!text.contains(absent), "{absent} was sent");
    }
    insta::assert_snapshot!("count_tokens_request", render(sent));
    let body: Value = serde_json::from_slice(&sent.body).unwrap();
    insta::assert_json_snapshot!("count_tokens_body", body);
}

/// A base written the OpenAI way (`.../v1`) reaches the same path.
#[tokio::test]
async fn a_base_ending_in_v1_is_accepted() {
    let server = server(ResponseTemplate::new(200).set_body_json(json!({"input_tokens": 7}))).await;
    let config = Kind::Anthropic.config(&format!("{}/v1", server.uri()));
    let counter = CountTokensClient::new(config).unwrap();
    assert_eq!(counter.count(&request(Purpose::Turn)).await.unwrap(), 7);
}

async fn failure(answer: ResponseTemplate) -> LlmError {
    let server = server(answer).await;
    counter(&server)
        .count(&request(Purpose::Turn))
        .await
        .unwrap_err()
}

#[tokio::test]
async fn a_rate_limit_carries_the_retry_after() {
    let error = failure(
        ResponseTemplate::new(429)
            .insert_header("retry-after", "12")
            .set_body_json(json!({"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}})),
    )
    .await;
    assert_eq!(
        error,
        LlmError::RateLimited {
            provider: "anthropic".into(),
            retry_after: Some(Duration::from_secs(12)),
            message: "slow down".into(),
        }
    );
    assert!(error.is_retryable());
}

#[tokio::test]
async fn a_server_error_is_transient() {
    let error = failure(ResponseTemplate::new(500).set_body_json(
        json!({"type": "error", "error": {"type": "api_error", "message": "boom"}}),
    ))
    .await;
    assert_eq!(
        error,
        LlmError::Server {
            provider: "anthropic".into(),
            status: 500,
            retry_after: None,
            message: "boom".into(),
        }
    );
}

#[tokio::test]
async fn a_model_it_cannot_count_is_a_bad_request() {
    let error = failure(
        ResponseTemplate::new(400).set_body_json(
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "model not supported"}}),
        ),
    )
    .await;
    assert!(
        matches!(error, LlmError::BadRequest { status: 400, .. }),
        "{error:?}"
    );
    assert!(!error.is_retryable());
}

#[tokio::test]
async fn garbage_is_a_transport_error() {
    let error = failure(ResponseTemplate::new(200).set_body_string("<html>proxy</html>")).await;
    assert!(matches!(error, LlmError::Transport { .. }), "{error:?}");
    let shapeless = failure(ResponseTemplate::new(200).set_body_json(json!({"tokens": 5}))).await;
    assert_eq!(
        shapeless.to_string(),
        "anthropic: transport failure: the answer has no input_tokens count"
    );
}

#[tokio::test]
async fn an_error_inside_a_success_is_classified() {
    let error = failure(ResponseTemplate::new(200).set_body_json(
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}),
    ))
    .await;
    assert!(
        matches!(error, LlmError::Server { status: 529, .. }),
        "{error:?}"
    );
}
