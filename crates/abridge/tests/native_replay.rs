//! A native compaction is paid for once and replayed on every later turn
//! to the provider that wrote it; any other provider gets the checkpoint's
//! text. Both ends are wiremock servers speaking the providers' documented
//! shapes, and the turn goes through the Harness as an agent would send it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use abridge::Harness;
use abridge::PassStatus;
use abridge::Settings;
use abridge::basic::RemoteConfig;
use abridge::basic::RemoteKind;
use abridge::basic::remote_method;
use abridge::llm::Block;
use abridge::llm::LlmClient;
use abridge::llm::Message;
use abridge::llm::OpenAiChatClient;
use abridge::llm::OpenAiResponsesClient;
use abridge::llm::ProviderConfig;
use abridge::session::Session;
use serde_json::Value;
use serde_json::json;

use abridge_test_support::fixtures::COMPACTION_OPAQUE;
use abridge_test_support::fixtures::responses_compact_answer;
use wiremock::Mock;
use wiremock::MockServer;
use wiremock::ResponseTemplate;
use wiremock::matchers::method;
use wiremock::matchers::path;

fn turn_answer() -> Value {
    json!({
        "id": "resp_2",
        "object": "response",
        "status": "completed",
        "model": "gpt-5-codex",
        "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Tests pass."}]}],
        "usage": {"input_tokens": 900, "output_tokens": 4},
    })
}

/// Ten turns of real-looking work, long enough to be worth compacting.
fn session() -> Session {
    let mut s = Session::in_memory("native");
    s.append_message(Message::user("Make the parser accept trailing commas."))
        .unwrap();
    for i in 0..10 {
        s.append_message(Message::assistant(format!(
            "Step {i}: {}",
            "read parse_list and its callers; ".repeat(30)
        )))
        .unwrap();
        s.append_message(Message::user(format!("Continue with step {}.", i + 1)))
            .unwrap();
    }
    s
}

async fn servers() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/responses/compact"))
        .respond_with(ResponseTemplate::new(200).set_body_json(responses_compact_answer()))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/responses"))
        .respond_with(ResponseTemplate::new(200).set_body_json(turn_answer()))
        .mount(&server)
        .await;
    server
}

fn responses_client(server: &MockServer) -> Arc<dyn LlmClient> {
    let config = ProviderConfig::new(format!("{}/v1", server.uri()));
    Arc::new(OpenAiResponsesClient::new(config, Default::default()).unwrap())
}

fn settings() -> Settings {
    Settings::from_toml(
        "method_order = [\"remote\"]\nkeep_recent_tokens = 200\n",
        "t",
    )
    .unwrap()
}

#[tokio::test]
async fn the_responses_provider_gets_its_compaction_back_and_others_get_text() {
    let server = servers().await;
    let mut config = RemoteConfig::new(
        RemoteKind::ResponsesCompact,
        format!("{}/v1", server.uri()),
        "gpt-5-codex",
    );
    config.retry = abridge::llm::RetryPolicy::no_retries();
    let remote = remote_method(config).unwrap();
    let harness = Harness::builder(session(), "gpt-5-codex")
        .client(responses_client(&server))
        .settings(settings())
        .methods(vec![remote])
        .window(8_000)
        .build()
        .unwrap();
    let pass = harness.compact(&[], None).await.unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");

    // What the Harness says it will send, and what reaches the wire.
    let request = harness.request().unwrap();
    let native: Vec<&Value> = request[0]
        .content
        .iter()
        .filter_map(|b| match b {
            Block::Native { item, .. } => Some(item),
            _ => None,
        })
        .collect();
    assert_eq!(native.len(), 2, "{:?}", request[0]);
    harness.complete(Vec::new()).await.unwrap();
    let sent = server.received_requests().await.unwrap();
    let turn = sent
        .iter()
        .find(|r| r.url.path() == "/v1/responses")
        .unwrap();
    let body: Value = serde_json::from_slice(&turn.body).unwrap();
    let input = body["input"].as_array().unwrap();
    assert_eq!(input[0], responses_compact_answer()["output"][0]);
    assert_eq!(input[1]["encrypted_content"], COMPACTION_OPAQUE);
    // The checkpoint's text is not sent beside it: the output stands for
    // the span.
    let stored = {
        let session = abridge::compact::host::lock_session(harness.session());
        session.surface_messages()[0].plain_text()
    };
    let line = stored.lines().find(|l| l.len() > 20).unwrap().to_string();
    assert!(
        !body.to_string().contains(&line),
        "{line:?} was sent: {body}"
    );

    // The same session sent elsewhere carries the text and no opaque item.
    let chat = Arc::new(
        OpenAiChatClient::new(
            ProviderConfig::new(format!("{}/v1", server.uri())),
            Default::default(),
        )
        .unwrap(),
    );
    let elsewhere = abridge::HarnessBuilder::shared(harness.session().clone(), "gpt-4o")
        .client(chat)
        .settings(settings())
        .build()
        .unwrap();
    let request = elsewhere.request().unwrap();
    assert!(
        request[0]
            .content
            .iter()
            .all(|b| !matches!(b, Block::Native { .. })),
        "{:?}",
        request[0]
    );
    assert_eq!(request[0].plain_text(), stored);
    assert!(!format!("{request:?}").contains(COMPACTION_OPAQUE));

    // A Responses client under another name, at the same endpoint with
    // the same credentials, speaks the same dialect for the same account:
    // it gets the output back too.
    let renamed = Arc::new(
        OpenAiResponsesClient::new(
            ProviderConfig::new(format!("{}/v1", server.uri())).with_name("my-gateway"),
            Default::default(),
        )
        .unwrap(),
    );
    let gateway = abridge::HarnessBuilder::shared(harness.session().clone(), "gpt-5-codex")
        .client(renamed)
        .settings(settings())
        .build()
        .unwrap();
    let request = gateway.request().unwrap();
    let replayed = request[0]
        .content
        .iter()
        .filter(|b| matches!(b, Block::Native { .. }))
        .count();
    assert_eq!(replayed, 2, "{:?}", request[0]);

    // Issue 29, item 7: encrypted output works only for the organization
    // and backend that made it. A second account (another key) at the
    // same endpoint gets the checkpoint's text.
    let second_account = Arc::new(
        OpenAiResponsesClient::new(
            ProviderConfig::new(format!("{}/v1", server.uri())).with_api_key("sk-second-account"),
            Default::default(),
        )
        .unwrap(),
    );
    let other = abridge::HarnessBuilder::shared(harness.session().clone(), "gpt-5-codex")
        .client(second_account)
        .settings(settings())
        .build()
        .unwrap();
    let request = other.request().unwrap();
    assert!(
        request[0]
            .content
            .iter()
            .all(|b| !matches!(b, Block::Native { .. })),
        "{:?}",
        request[0]
    );
    assert_eq!(request[0].plain_text(), stored);
}

/// Work whose hidden span is above Anthropic's 50k-token compaction
/// trigger, then a short recent turn.
fn anthropic_session() -> Session {
    let mut s = Session::in_memory("native-anthropic");
    s.append_message(Message::user("Make the parser accept trailing commas."))
        .unwrap();
    s.append_message(Message::tool_call(
        "c1",
        "read",
        json!({"path": "src/big.rs"}),
    ))
    .unwrap();
    s.append_message(Message::tool_result(
        "c1",
        "fn generated() {}\n".repeat(14_000),
        false,
    ))
    .unwrap();
    s.append_message(Message::assistant(
        "big.rs is generated; the parser is elsewhere.",
    ))
    .unwrap();
    s.append_message(Message::user("Continue with parse_list."))
        .unwrap();
    s.append_message(Message::assistant("Changing parse_list now."))
        .unwrap();
    s.append_message(Message::user("Run the tests.")).unwrap();
    s
}

#[tokio::test]
async fn anthropic_gets_its_compaction_block_back_as_the_assistants_own_content() {
    let server = MockServer::start().await;
    let block = json!({"type": "compaction", "content": "<summary>Parser: trailing commas; big.rs is generated.</summary>"});
    // The first call is the compaction (it answers once); the turn that
    // follows gets the plain answer below.
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .and(wiremock::matchers::header(
            "anthropic-beta",
            "compact-2026-01-12",
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
            "content": [block.clone()],
            "stop_reason": "compaction",
            "usage": {"input_tokens": 0, "output_tokens": 0,
                      "iterations": [{"type": "compaction", "input_tokens": 61000, "output_tokens": 500}]},
        })))
        .up_to_n_times(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({
            "id": "msg_2", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
            "content": [{"type": "text", "text": "Tests pass."}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 900, "output_tokens": 4},
        })))
        .mount(&server)
        .await;
    let mut config = RemoteConfig::new(
        RemoteKind::AnthropicCompaction,
        server.uri(),
        "claude-sonnet-4-6",
    );
    config.retry = abridge::llm::RetryPolicy::no_retries();
    let client = Arc::new(
        abridge::llm::AnthropicClient::new(
            ProviderConfig::new(server.uri()),
            abridge::llm::AnthropicOptions::default(),
        )
        .unwrap(),
    );
    let harness = Harness::builder(anthropic_session(), "claude-sonnet-4-6")
        .client(client)
        .settings(settings())
        .methods(vec![remote_method(config).unwrap()])
        .build()
        .unwrap();
    let pass = harness.compact(&[], None).await.unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");

    harness.complete(Vec::new()).await.unwrap();
    let sent = server.received_requests().await.unwrap();
    assert_eq!(sent.len(), 2, "one compaction call, one turn");
    let turn: Value = serde_json::from_slice(&sent[1].body).unwrap();
    let messages = turn["messages"].as_array().unwrap();
    let holding: Vec<&Value> = messages
        .iter()
        .filter(|m| {
            m["content"]
                .as_array()
                .is_some_and(|c| c.iter().any(|b| b["type"] == "compaction"))
        })
        .collect();
    assert_eq!(holding.len(), 1, "{turn}");
    // Anthropic reads the block only as the assistant's own content.
    assert_eq!(holding[0]["role"], "assistant", "{turn}");
    assert!(
        holding[0]["content"].as_array().unwrap().contains(&block),
        "{turn}"
    );
    // What came after the checkpoint follows it, and the hidden history
    // is not sent beside the block.
    let last = messages.last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(
        last["content"].to_string().contains("Run the tests."),
        "{turn}"
    );
    assert!(!turn.to_string().contains("fn generated() {}"), "{turn}");
}
