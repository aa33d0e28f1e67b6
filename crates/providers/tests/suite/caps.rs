//! Faults the e2e fault proxy found: a 503's Retry-After was dropped (the
//! retry loop waited its own backoff instead), and an answer of any size
//! was read whole into memory.

use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use abridge_llm::LlmClient;
use abridge_llm::LlmError;
use abridge_llm::Purpose;
use abridge_llm::RetryEvent;
use abridge_llm::RetryPolicy;
use abridge_llm::RetryingClient;
use abridge_llm::StreamEvent;
use futures::StreamExt;
use wiremock::MockServer;
use wiremock::ResponseTemplate;

use super::support::KINDS;
use super::support::Kind;
use super::support::request;

/// The cap the clients below read answers under.
const CAP: usize = 64 * 1024;

async fn serve(kind: Kind, template: ResponseTemplate) -> MockServer {
    super::faults::serve(kind, template).await.0
}

fn capped(kind: Kind, server: &MockServer) -> Arc<dyn LlmClient> {
    kind.client_with(kind.config(&server.uri()).with_max_response_bytes(CAP))
}

/// A 503 that names its wait is retried after that wait, or given up on
/// at once when the wait is longer than `max_wait`, like a 429.
#[tokio::test]
async fn a_503_retry_after_is_honoured() {
    for kind in KINDS {
        let server = serve(
            kind,
            ResponseTemplate::new(503)
                .insert_header("retry-after", "7")
                .set_body_string("busy"),
        )
        .await;
        let seen: Arc<Mutex<Vec<RetryEvent>>> = Arc::default();
        let sink = Arc::clone(&seen);
        let policy = RetryPolicy {
            initial_backoff: Duration::from_millis(1),
            max_wait: Some(Duration::from_secs(1)),
            ..RetryPolicy::deterministic()
        };
        let client = RetryingClient::new(kind.client(&server.uri()), policy).with_observer(
            Arc::new(move |event| sink.lock().unwrap().push(event.clone())),
        );
        let error = client
            .complete(&request(Purpose::Compaction))
            .await
            .unwrap_err();
        assert!(
            matches!(error, LlmError::Server { status: 503, .. }),
            "{}: {error:?}",
            kind.name()
        );
        assert_eq!(error.retry_after(), Some(Duration::from_secs(7)));
        // Seven seconds is past max_wait: one request, no wait.
        assert_eq!(server.received_requests().await.unwrap().len(), 1);
        let events = seen.lock().unwrap().clone();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].wait, None);
        assert_eq!(
            error.to_string(),
            format!(
                "{}: server error 503 (retry after 7.0s): busy",
                client.provider()
            )
        );
    }
}

/// An answer body past the cap is refused, not read whole; an answer
/// under it still comes through.
#[tokio::test]
async fn an_answer_over_the_cap_is_unusable() {
    for kind in KINDS {
        let big = "x".repeat(4 * CAP);
        let server = serve(
            kind,
            ResponseTemplate::new(200).set_body_json(kind.ok_json(&big)),
        )
        .await;
        let error = capped(kind, &server)
            .complete(&request(Purpose::Compaction))
            .await
            .unwrap_err();
        assert_eq!(
            error,
            LlmError::Unusable {
                provider: capped(kind, &server).provider().to_string(),
                message: format!(
                    "the answer is larger than the {CAP}-byte cap (max_response_bytes)"
                ),
            },
            "{}",
            kind.name()
        );
        assert!(!error.is_retryable());

        let small = serve(
            kind,
            ResponseTemplate::new(200).set_body_json(kind.ok_json("fits")),
        )
        .await;
        capped(kind, &small)
            .complete(&request(Purpose::Compaction))
            .await
            .unwrap();
    }
}

/// A stream that keeps sending past the cap ends with `Unusable` instead
/// of growing without bound; comments count, since they cost memory too.
#[tokio::test]
async fn a_stream_over_the_cap_ends_unusable() {
    for kind in KINDS {
        let padding = format!(": {}\n", "p".repeat(4 * CAP));
        let server = serve(
            kind,
            ResponseTemplate::new(200)
                .set_body_raw(format!("{padding}{}", kind.sse_ok()), "text/event-stream"),
        )
        .await;
        let client = capped(kind, &server);
        let mut stream = client.stream(&request(Purpose::Turn)).await.unwrap();
        let mut ended = None;
        while let Some(item) = stream.next().await {
            match item {
                Ok(StreamEvent::Done(_)) => panic!("{}: the stream finished", kind.name()),
                Ok(_) => {}
                Err(error) => {
                    ended = Some(error);
                    break;
                }
            }
        }
        let error = ended.unwrap();
        assert!(
            matches!(error, LlmError::Unusable { .. }),
            "{}: {error:?}",
            kind.name()
        );
        assert!(stream.next().await.is_none());
    }
}
