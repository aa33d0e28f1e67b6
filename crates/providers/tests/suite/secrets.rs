//! Keys never appear in `Debug`, errors or logs.

use abridge_llm::LlmClient;
use abridge_llm::LlmError;
use abridge_llm::Purpose;
use abridge_llm::RetryPolicy;
use abridge_llm::RetryingClient;
use abridge_test_support::logs::LogCapture;
use serde_json::json;
use wiremock::Mock;
use wiremock::MockServer;
use wiremock::ResponseTemplate;
use wiremock::matchers::method;

use super::support::KINDS;
use super::support::Kind;
use super::support::TEST_KEY;
use super::support::request;

fn assert_clean(kind: Kind, what: &str, text: &str) {
    assert!(
        !text.contains(TEST_KEY),
        "{}: key leaked in {what}: {text}",
        kind.name()
    );
}

#[tokio::test]
async fn keys_stay_out_of_debug_errors_and_logs() {
    let logs = LogCapture::start();

    for kind in KINDS {
        let server = MockServer::start().await;
        let echo = json!({"error": {"message": format!("Incorrect API key provided: {TEST_KEY}."), "type": "invalid_request_error", "code": "invalid_api_key"}});
        Mock::given(method("POST"))
            .respond_with(ResponseTemplate::new(401).set_body_json(echo))
            .mount(&server)
            .await;
        let client = kind.client(&server.uri());
        assert_clean(kind, "client debug", &format!("{client:?}"));
        let retrying = RetryingClient::new(client.clone(), RetryPolicy::deterministic());
        assert_clean(kind, "wrapper debug", &format!("{retrying:?}"));

        let error = retrying
            .complete(&request(Purpose::Turn))
            .await
            .unwrap_err();
        assert!(
            matches!(error, LlmError::BadRequest { status: 401, .. }),
            "{error:?}"
        );
        assert_clean(kind, "error display", &error.to_string());
        assert_clean(kind, "error debug", &format!("{error:?}"));
        assert!(error.to_string().contains("<redacted>"), "{error}");

        // The key was sent, in the provider's header.
        let sent = &server.received_requests().await.unwrap()[0];
        let auth = match kind {
            Kind::Anthropic => sent
                .headers
                .get("x-api-key")
                .unwrap()
                .to_str()
                .unwrap()
                .to_string(),
            _ => sent
                .headers
                .get("authorization")
                .unwrap()
                .to_str()
                .unwrap()
                .to_string(),
        };
        assert!(auth.ends_with(TEST_KEY));

        // A refused connection.
        let dead = kind.client("http://127.0.0.1:9");
        let error = dead.complete(&request(Purpose::Turn)).await.unwrap_err();
        assert!(matches!(error, LlmError::Transport { .. }), "{error:?}");
        assert_clean(kind, "transport error", &format!("{error} {error:?}"));
    }
    let logs = logs.text();
    assert!(logs.contains("model request failed"), "{logs}");
    assert!(!logs.contains(TEST_KEY), "key leaked in logs: {logs}");
}
