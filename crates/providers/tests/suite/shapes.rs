//! Request shapes: what each provider client puts on the wire for each
//! purpose, as one line per message, plus the whole JSON of a turn.

use abridge_llm::Block;
use abridge_llm::LlmClient;
use abridge_llm::Purpose;
use abridge_llm::StopReason;
use abridge_llm::StreamEvent;
use abridge_llm::Usage;
use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::Value;
use wiremock::Mock;
use wiremock::MockServer;
use wiremock::ResponseTemplate;
use wiremock::matchers::method;
use wiremock::matchers::path;

use super::support::KINDS;
use super::support::Kind;
use super::support::PURPOSES;
use super::support::purpose_name;
use super::support::render;
use super::support::request;

async fn server_answering(kind: Kind, body: Value) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(kind.path()))
        .respond_with(ResponseTemplate::new(200).set_body_json(body))
        .mount(&server)
        .await;
    server
}

async fn shapes_for(kind: Kind) {
    let server = server_answering(kind, kind.ok_json("Summary.")).await;
    let client = kind.client(&server.uri());
    let mut rendered = String::new();
    for purpose in PURPOSES {
        let response = client.complete(&request(purpose)).await.unwrap();
        assert_eq!(response.message.plain_text(), "Summary.");
    }
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), PURPOSES.len());
    for (purpose, captured) in PURPOSES.iter().zip(&requests) {
        let header = captured.headers.get("x-abridge-purpose").unwrap();
        assert_eq!(header.to_str().unwrap(), purpose_name(*purpose));
        rendered.push_str(&format!(
            "## {}\n{}\n",
            purpose_name(*purpose),
            render(captured)
        ));
    }
    insta::assert_snapshot!(format!("{}_purposes", kind.name()), rendered);
    let turn: Value = serde_json::from_slice(&requests[0].body).unwrap();
    insta::assert_json_snapshot!(format!("{}_turn_body", kind.name()), turn);
}

#[tokio::test]
async fn openai_chat_request_shapes() {
    shapes_for(Kind::Chat).await;
}

#[tokio::test]
async fn openai_responses_request_shapes() {
    shapes_for(Kind::Responses).await;
}

#[tokio::test]
async fn anthropic_request_shapes() {
    shapes_for(Kind::Anthropic).await;
}

/// The cache-aligned summary mode relies on tools staying listed while
/// calls are forbidden.
#[tokio::test]
async fn tool_choice_none_keeps_tools_listed() {
    for kind in KINDS {
        let server = server_answering(kind, kind.ok_json("ok")).await;
        kind.client(&server.uri())
            .complete(&request(Purpose::Compaction))
            .await
            .unwrap();
        let captured = &server.received_requests().await.unwrap()[0];
        let body: Value = serde_json::from_slice(&captured.body).unwrap();
        assert_eq!(
            body["tools"].as_array().unwrap().len(),
            2,
            "{}",
            kind.name()
        );
        let choice = match kind {
            Kind::Anthropic => body["tool_choice"]["type"].clone(),
            _ => body["tool_choice"].clone(),
        };
        assert_eq!(choice, "none", "{}", kind.name());
    }
}

#[tokio::test]
async fn streamed_request_shapes() {
    let mut rendered = String::new();
    for kind in KINDS {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(kind.path()))
            .respond_with(
                ResponseTemplate::new(200).set_body_raw(kind.sse_ok(), "text/event-stream"),
            )
            .mount(&server)
            .await;
        let stream = kind
            .client(&server.uri())
            .stream(&request(Purpose::BranchSummary))
            .await
            .unwrap();
        let events: Vec<_> = stream.collect().await;
        assert!(
            matches!(events.last(), Some(Ok(StreamEvent::Done(_)))),
            "{}",
            kind.name()
        );
        let captured = &server.received_requests().await.unwrap()[0];
        rendered.push_str(&format!("## {}\n{}\n", kind.name(), render(captured)));
    }
    insta::assert_snapshot!("streamed_branch_summary", rendered);
}

/// Whole and streamed answers map to the same message, usage buckets
/// disjoint (200 uncached + 1000 cached input).
#[tokio::test]
async fn answers_map_text_usage_and_origin() {
    let expected_usage = Usage {
        input: 200,
        output: 30,
        cache_read: 1000,
        cache_write: 0,
    };
    for kind in KINDS {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(kind.path()))
            .and(wiremock::matchers::body_partial_json(
                serde_json::json!({"stream": true}),
            ))
            .respond_with(
                ResponseTemplate::new(200).set_body_raw(kind.sse_ok(), "text/event-stream"),
            )
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path(kind.path()))
            .respond_with(ResponseTemplate::new(200).set_body_json(kind.ok_json("Summary.")))
            .mount(&server)
            .await;
        let client = kind.client(&server.uri());
        let whole = client.complete(&request(Purpose::Turn)).await.unwrap();
        let events: Vec<_> = client
            .stream(&request(Purpose::Turn))
            .await
            .unwrap()
            .collect()
            .await;
        let texts: Vec<String> = events
            .iter()
            .filter_map(|e| match e {
                Ok(StreamEvent::TextDelta(t)) => Some(t.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(
            texts,
            vec!["Sum".to_string(), "mary.".to_string()],
            "{}",
            kind.name()
        );
        let Some(Ok(StreamEvent::Done(streamed))) = events.last() else {
            panic!("{}: no Done", kind.name())
        };
        for response in [&whole, streamed.as_ref()] {
            assert_eq!(response.usage, expected_usage, "{}", kind.name());
            assert_eq!(response.stop_reason, StopReason::EndTurn);
            assert_eq!(response.model, "m-served");
            assert_eq!(response.message.content, vec![Block::text("Summary.")]);
            assert_eq!(response.message.meta.usage, Some(expected_usage));
            assert_eq!(
                response.message.meta.origin,
                Some(abridge_llm::Origin::Model {
                    provider: client.provider().to_string(),
                    model: "m-served".into()
                })
            );
        }
    }
}

/// Users often give every provider an OpenAI-style base ending in `/v1`.
#[tokio::test]
async fn anthropic_accepts_a_base_ending_in_v1() {
    let kind = Kind::Anthropic;
    let server = server_answering(kind, kind.ok_json("ok")).await;
    let config = kind.config(&format!("{}/v1/", server.uri()));
    let response = kind
        .client_with(config)
        .complete(&request(Purpose::Turn))
        .await
        .unwrap();
    assert_eq!(response.message.plain_text(), "ok");
}

/// `include: ["reasoning.encrypted_content"]` goes only to models the
/// catalog lists as reasoning models (the others reject it); the option
/// forces it either way.
#[test]
fn encrypted_reasoning_is_asked_of_reasoning_models_only() {
    use abridge_providers::OpenAiResponsesClient;
    use abridge_providers::ProviderConfig;
    use abridge_providers::ResponsesOptions;
    let body = |model: &str, include: Option<bool>| {
        let client = OpenAiResponsesClient::new(
            ProviderConfig::new("http://127.0.0.1:1/v1"),
            ResponsesOptions {
                include_encrypted_reasoning: include,
                ..ResponsesOptions::default()
            },
        )
        .unwrap();
        let mut request = request(Purpose::Turn);
        request.model = model.to_string();
        client.build_body(&request, false).unwrap()
    };
    let asked = serde_json::json!(["reasoning.encrypted_content"]);
    for model in ["gpt-5", "gpt-5.1-codex-max", "o3", "o4-mini-2025-04-16"] {
        assert_eq!(body(model, None)["include"], asked, "{model}");
    }
    for model in ["gpt-4o", "gpt-4.1-mini", "gpt-5-chat-latest", "m-1"] {
        assert!(body(model, None).get("include").is_none(), "{model}");
    }
    assert_eq!(body("gpt-4o", Some(true))["include"], asked);
    assert!(body("gpt-5", Some(false)).get("include").is_none());
}

/// OpenAI's reasoning lines reject `max_tokens`; the field chosen for a
/// model from the catalog is `max_completion_tokens` for them only.
#[test]
fn the_output_cap_field_follows_the_catalog() {
    use abridge_providers::ChatOptions;
    use abridge_providers::MaxTokensField;
    use abridge_providers::OpenAiChatClient;
    use abridge_providers::ProviderConfig;
    let body = |model: &str| {
        let options = ChatOptions {
            max_tokens_field: MaxTokensField::for_model(model),
            ..ChatOptions::default()
        };
        let client =
            OpenAiChatClient::new(ProviderConfig::new("http://127.0.0.1:1/v1"), options).unwrap();
        let mut request = request(Purpose::Compaction);
        request.model = model.to_string();
        request.max_output_tokens = Some(2000);
        client.build_body(&request, false).unwrap()
    };
    for model in ["o3-mini", "o1", "gpt-5-mini", "openai/gpt-5.1"] {
        let sent = body(model);
        assert_eq!(sent["max_completion_tokens"], 2000, "{model}");
        assert!(sent.get("max_tokens").is_none(), "{model}");
    }
    for model in ["gpt-4o-mini", "gpt-oss-20b", "qwen3-8b", "summ-1"] {
        let sent = body(model);
        assert_eq!(sent["max_tokens"], 2000, "{model}");
        assert!(sent.get("max_completion_tokens").is_none(), "{model}");
    }
}

/// A replayed native compaction reaches the provider that wrote it as its
/// own item, unchanged, and no other provider sees it at all.
#[tokio::test]
async fn native_items_reach_only_their_own_provider() {
    let openai = serde_json::json!({"type": "compaction", "id": "cmp_1", "encrypted_content": "gAAAA-opaque"});
    let anthropic =
        serde_json::json!({"type": "compaction", "content": "Earlier: the parser was fixed."});
    for kind in KINDS {
        let server = server_answering(kind, kind.ok_json("ok")).await;
        let client = kind.client(&server.uri());
        let mut replay = abridge_llm::Message::assistant("");
        replay.content = vec![
            Block::Native {
                provider: abridge_providers::OpenAiResponsesClient::NAME.to_string(),
                item: openai.clone(),
            },
            Block::Native {
                provider: abridge_providers::AnthropicClient::NAME.to_string(),
                item: anthropic.clone(),
            },
        ];
        let mut turn = request(Purpose::Turn);
        turn.messages.insert(1, replay.into());
        client.complete(&turn).await.unwrap();
        let sent = &server.received_requests().await.unwrap()[0];
        let body: Value = serde_json::from_slice(&sent.body).unwrap();
        let text = body.to_string();
        let (own, other) = match client.provider() {
            p if p == abridge_providers::OpenAiResponsesClient::NAME => (Some(&openai), &anthropic),
            p if p == abridge_providers::AnthropicClient::NAME => (Some(&anthropic), &openai),
            _ => (None, &openai),
        };
        if let Some(own) = own {
            assert!(text.contains(&own.to_string()), "{}: {text}", kind.name());
        } else {
            assert!(!text.contains("\"compaction\""), "{}: {text}", kind.name());
        }
        assert!(
            !text.contains(&other.to_string()),
            "{}: {text}",
            kind.name()
        );
    }
}
