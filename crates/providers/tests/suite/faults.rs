//! Fault injection for each provider: every failure ends in a typed error
//! (or an answer returned faithfully for the caller to judge).

use std::sync::Arc;
use std::time::Duration;

use abridge_llm::Block;
use abridge_llm::LlmClient;
use abridge_llm::LlmError;
use abridge_llm::Purpose;
use abridge_llm::RetryPolicy;
use abridge_llm::RetryingClient;
use abridge_llm::StopReason;
use abridge_llm::StreamEvent;
use futures::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::json;
use wiremock::Mock;
use wiremock::MockServer;
use wiremock::ResponseTemplate;
use wiremock::matchers::method;
use wiremock::matchers::path;

use super::support::KINDS;
use super::support::Kind;
use super::support::request;

/// A mock answering `kind`'s path with `template`, and a client for it.
pub(crate) async fn serve(
    kind: Kind,
    template: ResponseTemplate,
) -> (MockServer, Arc<dyn LlmClient>) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(kind.path()))
        .respond_with(template)
        .mount(&server)
        .await;
    let client = kind.client(&server.uri());
    (server, client)
}

fn sse(body: String) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body, "text/event-stream")
}

/// Collects a stream: the events before the end, and how it ended.
async fn drain(
    client: &Arc<dyn LlmClient>,
    purpose: Purpose,
) -> Result<(Vec<StreamEvent>, abridge_llm::Response), LlmError> {
    let mut stream = client.stream(&request(purpose)).await?;
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item? {
            StreamEvent::Done(response) => {
                assert!(stream.next().await.is_none(), "events after Done");
                return Ok((events, *response));
            }
            event => events.push(event),
        }
    }
    panic!("stream ended without Done or error");
}

#[tokio::test]
async fn rate_limit_carries_retry_after_seconds() {
    for kind in KINDS {
        let template = ResponseTemplate::new(429)
            .insert_header("retry-after", "3")
            .set_body_json(kind.rate_limit_body());
        let (_server, client) = serve(kind, template).await;
        let error = client.complete(&request(Purpose::Turn)).await.unwrap_err();
        assert!(
            matches!(error, LlmError::RateLimited { .. }),
            "{}: {error:?}",
            kind.name()
        );
        assert_eq!(
            error.retry_after(),
            Some(Duration::from_secs(3)),
            "{}",
            kind.name()
        );
        let error = drain(&client, Purpose::Turn).await.unwrap_err();
        assert_eq!(
            error.retry_after(),
            Some(Duration::from_secs(3)),
            "{}",
            kind.name()
        );
    }
}

#[tokio::test]
async fn rate_limit_carries_retry_after_http_date() {
    let kind = Kind::Anthropic;
    let template = ResponseTemplate::new(429)
        .insert_header("retry-after", "Fri, 01 Jan 2100 00:00:00 GMT")
        .set_body_json(kind.rate_limit_body());
    let (_server, client) = serve(kind, template).await;
    let error = client.complete(&request(Purpose::Turn)).await.unwrap_err();
    let wait = error.retry_after().unwrap();
    assert!(wait > Duration::from_secs(365 * 24 * 3600), "{wait:?}");
}

#[tokio::test]
async fn server_errors_are_transient() {
    for kind in KINDS {
        let (_server, client) = serve(
            kind,
            ResponseTemplate::new(500).set_body_string("upstream exploded"),
        )
        .await;
        let error = client
            .complete(&request(Purpose::Compaction))
            .await
            .unwrap_err();
        assert_eq!(
            error,
            LlmError::Server {
                provider: client.provider().to_string(),
                status: 500,
                retry_after: None,
                message: "upstream exploded".into()
            }
        );
        assert!(error.is_retryable());
        assert!(matches!(
            drain(&client, Purpose::Compaction).await.unwrap_err(),
            LlmError::Server { status: 500, .. }
        ));
    }
}

#[tokio::test]
async fn anthropic_overloaded_529_is_a_server_error() {
    let body =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let (_server, client) = serve(
        Kind::Anthropic,
        ResponseTemplate::new(529).set_body_json(body),
    )
    .await;
    let error = client.complete(&request(Purpose::Turn)).await.unwrap_err();
    assert_eq!(error.to_string(), "anthropic: server error 529: Overloaded");
}

#[tokio::test]
async fn slow_answers_time_out() {
    for kind in KINDS {
        let template = ResponseTemplate::new(200)
            .set_body_json(kind.ok_json("late"))
            .set_delay(Duration::from_secs(30));
        let (_server, inner) = serve(kind, template).await;
        let policy = RetryPolicy {
            max_attempts: 1,
            timeout: Some(Duration::from_millis(100)),
            ..RetryPolicy::deterministic()
        };
        let client: Arc<dyn LlmClient> = Arc::new(RetryingClient::new(inner, policy));
        let error = client.complete(&request(Purpose::Turn)).await.unwrap_err();
        assert_eq!(
            error,
            LlmError::Timeout {
                provider: client.provider().to_string(),
                after: Duration::from_millis(100)
            }
        );
        assert!(matches!(
            drain(&client, Purpose::Turn).await.unwrap_err(),
            LlmError::Timeout { .. }
        ));
    }
}

#[tokio::test]
async fn malformed_streams_are_transport_errors() {
    for kind in KINDS {
        let (_server, client) = serve(kind, sse(kind.sse_malformed())).await;
        let error = drain(&client, Purpose::Turn).await.unwrap_err();
        let LlmError::Transport { message, .. } = &error else {
            panic!("{}: {error:?}", kind.name())
        };
        assert!(
            message.starts_with("malformed stream event"),
            "{}: {message}",
            kind.name()
        );
        assert!(error.is_retryable());
    }
}

#[tokio::test]
async fn cut_streams_are_transport_errors() {
    for kind in KINDS {
        let (_server, client) = serve(kind, sse(kind.sse_cut())).await;
        let error = drain(&client, Purpose::Turn).await.unwrap_err();
        assert_eq!(
            error,
            LlmError::Transport {
                provider: client.provider().to_string(),
                message: "the stream ended before its terminal event".into()
            },
            "{}",
            kind.name()
        );
    }
}

#[tokio::test]
async fn a_non_json_answer_is_a_transport_error() {
    for kind in KINDS {
        let (_server, client) = serve(
            kind,
            ResponseTemplate::new(200).set_body_string("<html>gateway</html>"),
        )
        .await;
        let error = client.complete(&request(Purpose::Turn)).await.unwrap_err();
        assert!(
            matches!(error, LlmError::Transport { .. }),
            "{}: {error:?}",
            kind.name()
        );
    }
}

#[tokio::test]
async fn overflow_in_each_providers_own_words() {
    for kind in KINDS {
        for (status, body) in kind.overflow_bodies() {
            let (_server, client) = serve(
                kind,
                ResponseTemplate::new(status).set_body_json(body.clone()),
            )
            .await;
            let error = client
                .complete(&request(Purpose::Compaction))
                .await
                .unwrap_err();
            assert!(
                error.is_context_overflow(),
                "{}: {body} -> {error:?}",
                kind.name()
            );
            assert!(!error.is_retryable());
            assert!(
                drain(&client, Purpose::Compaction)
                    .await
                    .unwrap_err()
                    .is_context_overflow()
            );
        }
    }
}

#[tokio::test]
async fn errors_inside_a_stream_are_classified() {
    let cases = [
        (Kind::Chat, "data: {\"error\":{\"message\":\"the request exceeds the available context size, try increasing it\",\"type\":\"exceed_context_size_error\",\"code\":400}}\n\n".to_string(), "overflow"),
        (Kind::Responses, format!("event: response.failed\ndata: {}\n\n", json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": "context_length_exceeded", "message": "Your input exceeds the context window of this model."}}})), "overflow"),
        (Kind::Responses, format!("event: error\ndata: {}\n\n", json!({"type": "error", "code": "server_error", "message": "The server had an error."})), "server"),
        (Kind::Anthropic, format!("event: error\ndata: {}\n\n", json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})), "server"),
    ];
    for (kind, body, class) in cases {
        let (_server, client) = serve(kind, sse(body)).await;
        let error = drain(&client, Purpose::Turn).await.unwrap_err();
        match class {
            "overflow" => assert!(error.is_context_overflow(), "{}: {error:?}", kind.name()),
            _ => assert!(
                matches!(error, LlmError::Server { .. }),
                "{}: {error:?}",
                kind.name()
            ),
        }
    }
}

/// The client returns a tool call to a summary request faithfully; the
/// summarizer is the one that rejects it.
#[tokio::test]
async fn a_summary_answered_with_a_tool_call_is_returned_as_is() {
    let call = Block::ToolCall {
        id: "call_9".into(),
        name: "bash".into(),
        arguments: json!({"cmd": "ls"}),
    };
    for kind in KINDS {
        let (_server, client) = serve(
            kind,
            ResponseTemplate::new(200).set_body_json(kind.tool_call_json()),
        )
        .await;
        let response = client
            .complete(&request(Purpose::Compaction))
            .await
            .unwrap();
        assert_eq!(
            response.message.content,
            vec![call.clone()],
            "{}",
            kind.name()
        );
        assert_eq!(response.stop_reason, StopReason::ToolUse, "{}", kind.name());

        let (_server, client) = serve(kind, sse(kind.sse_tool_call())).await;
        let (events, response) = drain(&client, Purpose::Compaction).await.unwrap();
        assert_eq!(
            response.message.content,
            vec![call.clone()],
            "{}",
            kind.name()
        );
        assert_eq!(response.stop_reason, StopReason::ToolUse, "{}", kind.name());
        assert_eq!(
            events,
            vec![
                StreamEvent::ToolCallStart {
                    id: "call_9".into(),
                    name: "bash".into()
                },
                StreamEvent::ToolCallDelta("{\"cmd\":".into()),
                StreamEvent::ToolCallDelta("\"ls\"}".into()),
            ],
            "{}",
            kind.name()
        );
    }
}

#[tokio::test]
async fn empty_text_is_an_empty_answer_not_an_error() {
    for kind in KINDS {
        let (_server, client) = serve(
            kind,
            ResponseTemplate::new(200).set_body_json(kind.ok_json("")),
        )
        .await;
        let response = client
            .complete(&request(Purpose::Compaction))
            .await
            .unwrap();
        assert_eq!(response.message.content, Vec::new(), "{}", kind.name());
        assert_eq!(response.message.plain_text(), "");
        assert_eq!(response.stop_reason, StopReason::EndTurn);
    }
}

#[tokio::test]
async fn output_cut_by_max_tokens_is_reported() {
    for kind in KINDS {
        let (_server, client) = serve(
            kind,
            ResponseTemplate::new(200).set_body_json(kind.max_tokens_json()),
        )
        .await;
        let response = client
            .complete(&request(Purpose::Compaction))
            .await
            .unwrap();
        assert_eq!(
            response.stop_reason,
            StopReason::MaxTokens,
            "{}",
            kind.name()
        );
        assert_eq!(
            response.message.meta.stop_reason,
            Some(StopReason::MaxTokens)
        );

        let (_server, client) = serve(kind, sse(kind.sse_max_tokens())).await;
        let (_, response) = drain(&client, Purpose::Compaction).await.unwrap();
        assert_eq!(
            response.stop_reason,
            StopReason::MaxTokens,
            "{}",
            kind.name()
        );
    }
}

/// A 429 that asks for no wait, then a 500, then success: the retrying
/// wrapper gets through with three requests.
#[tokio::test]
async fn retrying_client_gets_through_429_and_500() {
    for kind in KINDS {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(kind.path()))
            .respond_with(
                ResponseTemplate::new(429)
                    .insert_header("retry-after", "0")
                    .set_body_json(kind.rate_limit_body()),
            )
            .up_to_n_times(1)
            .with_priority(1)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path(kind.path()))
            .respond_with(ResponseTemplate::new(500))
            .up_to_n_times(1)
            .with_priority(2)
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path(kind.path()))
            .respond_with(ResponseTemplate::new(200).set_body_json(kind.ok_json("finally")))
            .with_priority(3)
            .mount(&server)
            .await;
        let policy = RetryPolicy {
            initial_backoff: Duration::from_millis(1),
            ..RetryPolicy::deterministic()
        };
        let client = RetryingClient::new(kind.client(&server.uri()), policy);
        let response = client
            .complete(&request(Purpose::Compaction))
            .await
            .unwrap();
        assert_eq!(response.message.plain_text(), "finally");
        assert_eq!(
            server.received_requests().await.unwrap().len(),
            3,
            "{}",
            kind.name()
        );
    }
}

/// A Retry-After longer than `max_wait` ends the call at once so a
/// candidate list can move on.
#[tokio::test]
async fn retrying_client_gives_up_on_a_long_retry_after() {
    for kind in KINDS {
        let template = ResponseTemplate::new(429)
            .insert_header("retry-after", "3600")
            .set_body_json(kind.rate_limit_body());
        let (server, inner) = serve(kind, template).await;
        let policy = RetryPolicy {
            max_wait: Some(Duration::from_secs(10)),
            ..RetryPolicy::deterministic()
        };
        let client = RetryingClient::new(inner, policy);
        let error = client
            .complete(&request(Purpose::Compaction))
            .await
            .unwrap_err();
        assert_eq!(error.retry_after(), Some(Duration::from_secs(3600)));
        assert_eq!(
            server.received_requests().await.unwrap().len(),
            1,
            "{}",
            kind.name()
        );
    }
}

/// OpenAI answers an exhausted quota with 429 `insufficient_quota`: a
/// bad request, sent once, never waited on and retried.
#[tokio::test]
async fn an_exhausted_quota_is_not_retried() {
    for kind in [Kind::Chat, Kind::Responses] {
        let template = ResponseTemplate::new(429)
            .insert_header("retry-after", "0")
            .set_body_json(json!({"error": {
                "message": "You exceeded your current quota, please check your plan and billing details.",
                "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}));
        let (server, inner) = serve(kind, template).await;
        let policy = RetryPolicy {
            initial_backoff: Duration::from_millis(1),
            ..RetryPolicy::deterministic()
        };
        let error = RetryingClient::new(inner, policy)
            .complete(&request(Purpose::Compaction))
            .await
            .unwrap_err();
        assert!(
            matches!(error, LlmError::BadRequest { status: 429, .. }),
            "{}: {error:?}",
            kind.name()
        );
        assert_eq!(server.received_requests().await.unwrap().len(), 1);
    }
}
