//! A harness given Anthropic's token counter prices new messages with the
//! provider's count (issue 16, point 3), over a wiremock server that counts
//! 1000 tokens per message.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use abridge::Harness;
use abridge::Settings;
use abridge::llm::CountTokensClient;
use abridge::llm::Message;
use abridge::llm::ProviderConfig;
use abridge::session::Session;
use serde_json::Value;
use serde_json::json;
use wiremock::Mock;
use wiremock::MockServer;
use wiremock::Request;
use wiremock::Respond;
use wiremock::ResponseTemplate;
use wiremock::matchers::method;
use wiremock::matchers::path;

/// 1000 input tokens per message sent.
struct PerMessage;

impl Respond for PerMessage {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let messages = body["messages"].as_array().map_or(0, Vec::len) as u64;
        ResponseTemplate::new(200).set_body_json(json!({"input_tokens": 1000 * messages}))
    }
}

async fn counter() -> (MockServer, Arc<CountTokensClient>) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(CountTokensClient::PATH))
        .respond_with(PerMessage)
        .mount(&server)
        .await;
    let config = ProviderConfig::new(server.uri()).with_api_key("sk-test");
    (server, Arc::new(CountTokensClient::new(config).unwrap()))
}

/// A Claude harness with `client` as its count endpoint and one user
/// message.
fn harness(settings: Settings, client: Arc<CountTokensClient>) -> Harness {
    let harness = Harness::builder(Session::in_memory("s"), "claude-sonnet-4-5")
        .settings(settings)
        .count_endpoint(client)
        .build()
        .unwrap();
    harness
        .append(Message::user("fix the failing test"))
        .unwrap();
    harness
}

#[tokio::test]
async fn new_messages_are_priced_by_the_endpoint() {
    let (server, client) = counter().await;
    let harness = harness(Settings::default(), client);
    let report = harness.prime_counts().await.unwrap();
    assert_eq!((report.calls, report.counted), (1, 1));
    assert_eq!(harness.measure().estimate, 1000);
    // A reply, then a user message: one call for the new boundary; the
    // reply keeps our estimate and the user message takes the rest, so the
    // surface total is the provider's count of the whole request.
    harness
        .append(Message::assistant("Looking at it."))
        .unwrap();
    harness.append(Message::user("and the second one")).unwrap();
    harness.after_turn().await.unwrap();
    assert_eq!(harness.measure().estimate, 3000);
    assert_eq!(server.received_requests().await.unwrap().len(), 2);
}

#[tokio::test]
async fn the_setting_turns_it_off() {
    let (server, client) = counter().await;
    let settings = Settings {
        count_with_endpoint: false,
        ..Settings::default()
    };
    let harness = harness(settings, client);
    assert!(harness.prime_counts().await.is_none());
    assert!(harness.measure().estimate < 1000);
    assert!(server.received_requests().await.unwrap().is_empty());
}
