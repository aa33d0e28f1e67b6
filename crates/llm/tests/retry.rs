//! The retry and fallback wrappers, driven by a scripted client on tokio's
//! paused clock, so waits are checked exactly without real sleeping.
#![cfg(feature = "retry")]
// Helpers outside `#[test]` functions are test code too; clippy.toml's
// test allowance does not reach them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use abridge_llm::LlmClient;
use abridge_llm::LlmError;
use abridge_llm::Message;
use abridge_llm::Purpose;
use abridge_llm::Request;
use abridge_llm::RetryEvent;
use abridge_llm::RetryPolicy;
use abridge_llm::RetryingClient;
use abridge_llm::StreamEvent;
use abridge_test_support::scripted::ScriptedClient;
use abridge_test_support::scripted::Step;
use abridge_test_support::scripted::server_error;
use abridge_test_support::scripted::text_reply;
use futures::StreamExt;
use pretty_assertions::assert_eq;
use tokio::time::Instant;

fn scripted(steps: Vec<Step>) -> Arc<ScriptedClient> {
    ScriptedClient::new(steps).shared()
}

/// A scripted answer of `text`, from whatever model was asked for.
fn answer(text: &str) -> Step {
    Step::Reply(Box::new(text_reply(text)))
}

fn rate_limited(secs: u64) -> LlmError {
    LlmError::RateLimited {
        provider: "scripted".into(),
        retry_after: Some(Duration::from_secs(secs)),
        message: "slow down".into(),
    }
}

fn overflow() -> LlmError {
    LlmError::ContextOverflow {
        provider: "scripted".into(),
        message: "prompt is too long".into(),
    }
}

fn request() -> Request {
    Request::new("m-0", vec![Message::user("hi")], Purpose::Compaction)
}

#[tokio::test(start_paused = true)]
async fn honours_retry_after_then_backs_off_exponentially() {
    let inner = scripted(vec![
        Step::Fail(rate_limited(7)),
        Step::Fail(server_error()),
        Step::Fail(server_error()),
        answer("ok"),
    ]);
    let client = RetryingClient::new(inner.clone(), RetryPolicy::deterministic());
    let response = client.complete(&request()).await.unwrap();
    assert_eq!(response.message.plain_text(), "ok");
    assert_eq!(
        inner.gaps(),
        vec![
            Duration::from_secs(7),
            Duration::from_secs(2),
            Duration::from_secs(4)
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn stops_after_max_attempts_and_reports_each_failure() {
    let inner = scripted((0..5).map(|_| Step::Fail(server_error())).collect());
    let seen: Arc<Mutex<Vec<RetryEvent>>> = Arc::default();
    let record = seen.clone();
    let policy = RetryPolicy {
        max_attempts: 3,
        ..RetryPolicy::deterministic()
    };
    let client = RetryingClient::new(inner.clone(), policy).with_observer(Arc::new(
        move |event: &RetryEvent| record.lock().unwrap().push(event.clone()),
    ));
    assert_eq!(
        client.complete(&request()).await.unwrap_err(),
        server_error()
    );
    assert_eq!(inner.requests().len(), 3);
    let waits: Vec<Option<Duration>> = seen.lock().unwrap().iter().map(|e| e.wait).collect();
    assert_eq!(
        waits,
        vec![
            Some(Duration::from_secs(1)),
            Some(Duration::from_secs(2)),
            None
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn non_retryable_errors_are_returned_at_once() {
    let bad = LlmError::BadRequest {
        provider: "scripted".into(),
        status: 401,
        message: "no key".into(),
    };
    for error in [overflow(), bad, LlmError::Cancelled] {
        let inner = scripted(vec![Step::Fail(error.clone()), answer("never")]);
        let client = RetryingClient::new(inner.clone(), RetryPolicy::deterministic());
        assert_eq!(client.complete(&request()).await.unwrap_err(), error);
        assert_eq!(inner.requests().len(), 1);
    }
}

#[tokio::test(start_paused = true)]
async fn gives_up_when_the_next_wait_exceeds_max_wait() {
    let inner = scripted(vec![Step::Fail(rate_limited(120)), answer("too late")]);
    let policy = RetryPolicy {
        max_wait: Some(Duration::from_secs(60)),
        ..RetryPolicy::deterministic()
    };
    let client = RetryingClient::new(inner.clone(), policy);
    let started = Instant::now();
    assert_eq!(
        client.complete(&request()).await.unwrap_err(),
        rate_limited(120)
    );
    assert_eq!(inner.requests().len(), 1);
    assert_eq!(started.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn a_hung_attempt_times_out_and_is_retried() {
    let inner = scripted(vec![Step::Hang, answer("second try")]);
    let policy = RetryPolicy {
        timeout: Some(Duration::from_secs(5)),
        ..RetryPolicy::deterministic()
    };
    let client = RetryingClient::new(inner.clone(), policy);
    assert_eq!(
        client
            .complete(&request())
            .await
            .unwrap()
            .message
            .plain_text(),
        "second try"
    );
    // 5 s timeout, then the 1 s backoff.
    assert_eq!(inner.gaps(), vec![Duration::from_secs(6)]);
}

#[tokio::test(start_paused = true)]
async fn the_timeout_covers_the_whole_stream() {
    let inner = scripted(vec![Step::Stall]);
    let policy = RetryPolicy {
        timeout: Some(Duration::from_secs(5)),
        ..RetryPolicy::deterministic()
    };
    let client = RetryingClient::new(inner, policy);
    let items: Vec<_> = client.stream(&request()).await.unwrap().collect().await;
    assert_eq!(
        items,
        vec![
            Ok(StreamEvent::TextDelta("Hi".into())),
            Err(LlmError::Timeout {
                provider: "scripted".into(),
                after: Duration::from_secs(5)
            })
        ]
    );
}

/// Regression: the waits and timeouts were tokio's, so any model-backed
/// method panicked ("no reactor running") under another executor. A retry,
/// a timed-out attempt and a stalled stream, all under `block_on`.
#[test]
fn retries_and_timeouts_work_without_a_tokio_runtime() {
    let policy = RetryPolicy {
        initial_backoff: Duration::from_millis(1),
        timeout: Some(Duration::from_millis(20)),
        ..RetryPolicy::deterministic()
    };
    let inner = scripted(vec![
        Step::Fail(server_error()),
        Step::Hang,
        answer("third try"),
    ]);
    let client = RetryingClient::new(inner.clone(), policy.clone());
    let response = futures::executor::block_on(client.complete(&request())).unwrap();
    assert_eq!(response.message.plain_text(), "third try");
    assert_eq!(inner.requests().len(), 3);

    let stalled = RetryingClient::new(scripted(vec![Step::Stall]), policy);
    let items: Vec<_> = futures::executor::block_on(async {
        stalled.stream(&request()).await.unwrap().collect().await
    });
    assert_eq!(
        items.last(),
        Some(&Err(LlmError::Timeout {
            provider: "scripted".into(),
            after: Duration::from_millis(20)
        }))
    );
}
