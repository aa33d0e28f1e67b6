//! What each provider accepts (issue 29): every case is built from the
//! provider's documented shape, not from our encoder's output.

use std::time::Duration;

use abridge_llm::Block;
use abridge_llm::LlmClient;
use abridge_llm::LlmError;
use abridge_llm::Message;
use abridge_llm::Purpose;
use abridge_llm::Request;
use abridge_llm::StreamEvent;
use abridge_providers::ANTHROPIC_COMPACTION_BETA;
use abridge_providers::AnthropicClient;
use abridge_providers::AnthropicOptions;
use abridge_providers::CountTokensClient;
use abridge_providers::OpenAiResponsesClient;
use abridge_providers::ProviderConfig;
use abridge_providers::ResponsesOptions;
use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;
use wiremock::Mock;
use wiremock::MockServer;
use wiremock::ResponseTemplate;
use wiremock::matchers::method;
use wiremock::matchers::path;

use super::support::Kind;

/// A compaction block as the Messages API returns it (compaction docs and
/// the SDK's `BetaCompactionBlock`): summary, opaque metadata, signature.
fn returned_compaction_block() -> Value {
    json!({
        "type": "compaction",
        "content": "The user is fixing the parser; tests pass.",
        "encrypted_content": "EqQBCkYIARgCKkD...",
        "signature": "sig-1"
    })
}

/// The conversation after a native compaction: the block as the
/// assistant's content, then the next user turn.
fn after_compaction(model: &str) -> Request {
    let mut checkpoint = Message::assistant("");
    checkpoint.content = vec![Block::Native {
        provider: AnthropicClient::NAME.to_string(),
        item: returned_compaction_block(),
    }];
    Request::new(
        model,
        vec![checkpoint, Message::user("carry on")],
        Purpose::Turn,
    )
}

async fn answering(route: &str, answer: Value) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(route))
        .respond_with(ResponseTemplate::new(200).set_body_json(answer))
        .mount(&server)
        .await;
    server
}

fn beta_of(server_request: &wiremock::Request) -> String {
    server_request
        .headers
        .get("anthropic-beta")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

/// Issue 29, item 1: a request that replays a compaction block is read
/// only under the compaction beta; a caller's own beta flags join it
/// instead of replacing it, on turns and on token counts alike.
#[tokio::test]
async fn a_replayed_compaction_block_is_sent_under_the_compaction_beta() {
    let server = answering("/v1/messages", Kind::Anthropic.ok_json("ok")).await;
    let config = Kind::Anthropic
        .config(&server.uri())
        .with_header("anthropic-beta", "files-api-2025-04-14");
    let client = AnthropicClient::new(config.clone(), AnthropicOptions::default()).unwrap();
    client
        .complete(&after_compaction("claude-opus-4-7"))
        .await
        .unwrap();
    client
        .complete(&Request::new(
            "claude-opus-4-7",
            vec![Message::user("hi")],
            Purpose::Turn,
        ))
        .await
        .unwrap();
    let sent = server.received_requests().await.unwrap();
    let flags: Vec<String> = beta_of(&sent[0]).split(',').map(str::to_string).collect();
    assert_eq!(
        flags,
        vec![
            "files-api-2025-04-14".to_string(),
            ANTHROPIC_COMPACTION_BETA.to_string()
        ]
    );
    // A request without a compaction block carries only the caller's.
    assert_eq!(beta_of(&sent[1]), "files-api-2025-04-14");

    let counting = answering(CountTokensClient::PATH, json!({"input_tokens": 12})).await;
    let counter = CountTokensClient::new(ProviderConfig {
        base_url: Some(counting.uri()),
        ..config
    })
    .unwrap();
    counter
        .count(&after_compaction("claude-opus-4-7"))
        .await
        .unwrap();
    let counted = counting.received_requests().await.unwrap();
    assert!(
        beta_of(&counted[0]).contains(ANTHROPIC_COMPACTION_BETA),
        "{}",
        beta_of(&counted[0])
    );
}

/// Issue 29, item 2: the block goes back with the keys the Messages API
/// reads on input; `encrypted_content`, which it rejects there ("Extra
/// inputs are not permitted"), is left out.
#[test]
fn a_compaction_block_goes_back_with_only_its_input_keys() {
    let client = AnthropicClient::new(
        ProviderConfig::new("http://127.0.0.1:1"),
        AnthropicOptions {
            prompt_cache: false,
            ..AnthropicOptions::default()
        },
    )
    .unwrap();
    let body = client
        .build_body(&after_compaction("claude-opus-4-7"), false)
        .unwrap();
    assert_eq!(
        body["messages"][0]["content"][0],
        json!({
            "type": "compaction",
            "content": "The user is fixing the parser; tests pass.",
            "signature": "sig-1"
        })
    );
}

/// A thinking block written by the Responses client: the whole
/// `reasoning` output item as its signature.
fn reasoning(item: &Value) -> Message {
    let mut message = Message::assistant("");
    message.content = vec![
        Block::Thinking {
            thinking: "plan".into(),
            signature: Some(item.to_string()),
        },
        Block::text("done"),
    ];
    message
}

/// Issue 29, item 4: under `store: false` a reasoning item without its
/// `encrypted_content` is looked up by id among stored responses and the
/// request fails ("Item with id 'rs_...' not found"); it is not replayed.
#[test]
fn reasoning_without_encrypted_content_is_not_replayed_without_store() {
    let bare = json!({"type": "reasoning", "id": "rs_1", "summary": []});
    let sealed =
        json!({"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gAAAA"});
    let request = Request::new(
        "codex-mini-latest",
        vec![Message::user("q"), reasoning(&bare), reasoning(&sealed)],
        Purpose::Turn,
    );
    let input = |store: bool| {
        let client = OpenAiResponsesClient::new(
            ProviderConfig::new("http://127.0.0.1:1/v1"),
            ResponsesOptions {
                store,
                include_encrypted_reasoning: None,
            },
        )
        .unwrap();
        let body = client.build_body(&request, false).unwrap();
        body["input"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|item| item["type"] == "reasoning")
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(input(false), vec![sealed.clone()]);
    assert_eq!(input(true), vec![bare, sealed]);
}

/// Issue 29, item 4: `codex-mini-latest` reasons, so its requests ask for
/// encrypted reasoning.
#[test]
fn codex_mini_asks_for_encrypted_reasoning() {
    let client = OpenAiResponsesClient::new(
        ProviderConfig::new("http://127.0.0.1:1/v1"),
        ResponsesOptions::default(),
    )
    .unwrap();
    let body = client
        .build_body(
            &Request::new("codex-mini-latest", vec![Message::user("q")], Purpose::Turn),
            false,
        )
        .unwrap();
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
}

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|event| format!("data: {event}\n\n"))
        .collect::<String>()
        + "data: [DONE]\n\n"
}

/// Issue 29, item 12: a Chat stream carries a refusal in `delta.refusal`
/// (Chat Completions streaming docs); it is the answer's text, as it is
/// in a whole answer.
#[tokio::test]
async fn a_streamed_refusal_is_the_answers_text() {
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "c", "object": "chat.completion.chunk", "model": "gpt-4o",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let body = sse(&[
        chunk(
            json!({"role": "assistant", "content": null, "refusal": ""}),
            Value::Null,
        ),
        chunk(json!({"refusal": "I can't help "}), Value::Null),
        chunk(json!({"refusal": "with that."}), Value::Null),
        chunk(json!({}), json!("stop")),
    ]);
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(Kind::Chat.path()))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
        .mount(&server)
        .await;
    let client = Kind::Chat.client(&server.uri());
    let mut stream = client
        .stream(&Request::new(
            "gpt-4o",
            vec![Message::user("q")],
            Purpose::Turn,
        ))
        .await
        .unwrap();
    let mut deltas = String::new();
    let mut done = None;
    while let Some(event) = stream.next().await {
        match event.unwrap() {
            StreamEvent::TextDelta(text) => deltas.push_str(&text),
            StreamEvent::Done(response) => done = Some(response),
            _ => {}
        }
    }
    assert_eq!(deltas, "I can't help with that.");
    assert_eq!(
        done.unwrap().message.plain_text(),
        "I can't help with that."
    );
}

/// Issue 29, item 12: a `response.failed` event for a rate limit carries
/// no Retry-After header; its message says how long to wait, and the
/// error says it too.
#[tokio::test]
async fn a_failed_response_for_a_rate_limit_waits_as_its_message_says() {
    let failed = json!({"type": "response.failed", "sequence_number": 3, "response": {
        "id": "resp_1", "object": "response", "status": "failed", "output": [],
        "error": {"code": "rate_limit_exceeded",
                  "message": "Rate limit reached for gpt-5 in organization org-1 on tokens per min (TPM): Limit 500000, Used 499000, Requested 2400. Please try again in 168ms."}}});
    let body = format!("event: response.failed\ndata: {failed}\n\n");
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(Kind::Responses.path()))
        .respond_with(ResponseTemplate::new(200).set_body_raw(body, "text/event-stream"))
        .mount(&server)
        .await;
    let client = Kind::Responses.client(&server.uri());
    let mut stream = client
        .stream(&Request::new(
            "gpt-5",
            vec![Message::user("q")],
            Purpose::Turn,
        ))
        .await
        .unwrap();
    let mut error = None;
    while let Some(event) = stream.next().await {
        if let Err(e) = event {
            error = Some(e);
            break;
        }
    }
    match error {
        Some(LlmError::RateLimited { retry_after, .. }) => {
            assert_eq!(retry_after, Some(Duration::from_millis(168)));
        }
        other => panic!("expected a rate limit, got {other:?}"),
    }
}

fn with_image() -> Request {
    let mut message = Message::user("what is this?");
    message.content.push(Block::Image {
        source: abridge_llm::ImageSource::Base64 {
            media_type: "image/png".into(),
            data: abridge_llm::png_header_base64(2048, 2048),
        },
        width: Some(2048),
        height: Some(2048),
    });
    Request::new("gpt-5", vec![message], Purpose::Turn)
}

/// Issue 29, item 11: a GPT-5.x image is billed at `detail: "original"`
/// (the catalog's rule, under which a 2048 px frame is read whole), so the
/// request asks for that detail; a line billed at `auto` sends `auto` on
/// Responses and no detail on Chat. The same client, switched between
/// models, does not reuse an image encoded for the other.
#[test]
fn images_are_sent_at_the_detail_they_are_billed_at() {
    let responses = OpenAiResponsesClient::new(
        ProviderConfig::new("http://127.0.0.1:1/v1"),
        ResponsesOptions::default(),
    )
    .unwrap();
    let chat = abridge_providers::OpenAiChatClient::new(
        ProviderConfig::new("http://127.0.0.1:1/v1"),
        abridge_providers::ChatOptions::openai(),
    )
    .unwrap();
    let gpt5 = with_image();
    let mut gpt4o = gpt5.clone();
    gpt4o.model = "gpt-4o".into();
    let sent = |body: Vec<u8>| serde_json::from_slice::<Value>(&body).unwrap();
    for (request, detail) in [(&gpt4o, "auto"), (&gpt5, "original"), (&gpt4o, "auto")] {
        let body = sent(responses.encode_body(request, false).unwrap());
        assert_eq!(
            body["input"][0]["content"][1]["detail"], detail,
            "{}",
            request.model
        );
        let body = sent(chat.encode_body(request, false).unwrap());
        let part = &body["messages"][0]["content"][1]["image_url"];
        match detail {
            "auto" => assert!(part.get("detail").is_none(), "{part}"),
            _ => assert_eq!(part["detail"], detail),
        }
    }
}
