//! The harness on an executor that is not tokio (`futures::executor::block_on`,
//! the README's own): a model-backed method retries and times out without
//! a panic, and speculation, which needs a tokio runtime, says once that it
//! is off instead of switching itself off silently.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use abridge::Harness;
use abridge::MaintenanceEvent;
use abridge::MethodSources;
use abridge::PassStatus;
use abridge::Settings;
use abridge::SummarizerModel;
use abridge::llm::Message;
use abridge::llm::RetryPolicy;
use abridge::session::Session;
use abridge_test_support::scripted::ScriptedClient;
use abridge_test_support::scripted::Step;
use abridge_test_support::scripted::server_error;
use abridge_test_support::scripted::text_reply;

const SUMMARY: &str = "## Goal\nKeep stepping.\n\n## Progress\nSteps done.";

fn summarizer(steps: Vec<Step>) -> (Arc<ScriptedClient>, SummarizerModel) {
    let client = ScriptedClient::new(steps).fallback(SUMMARY).shared();
    let model = SummarizerModel {
        client: client.clone(),
        model: "summarizer".to_string(),
        retry: RetryPolicy {
            initial_backoff: Duration::from_millis(1),
            timeout: Some(Duration::from_millis(50)),
            ..RetryPolicy::deterministic()
        },
        soft: abridge::basic::SoftConfig::default(),
        handoff_file: None,
        handoff_max_tokens: None,
    };
    (client, model)
}

fn harness(
    settings: &str,
    summarizer: SummarizerModel,
    events: Arc<Mutex<Vec<MaintenanceEvent>>>,
) -> Harness {
    Harness::builder(Session::in_memory("executor"), "gpt-4o")
        .settings(Settings::from_toml(settings, "abridge.toml").unwrap())
        .sources(MethodSources {
            summarizer: Some(summarizer),
            ..MethodSources::offline("gpt-4o")
        })
        .observer(Arc::new(move |event: &MaintenanceEvent| {
            events.lock().unwrap().push(event.clone());
        }))
        .window(8_000)
        .build()
        .unwrap()
}

fn turn(harness: &Harness, i: usize) {
    harness
        .append(Message::user(format!(
            "step {i}: {}",
            "context ".repeat(80)
        )))
        .unwrap();
    harness
        .append(Message::assistant(format!("did step {i}")))
        .unwrap();
}

/// Regression: `soft` panicked at the retry wrapper's tokio timer ("there
/// is no reactor running") under block_on. A failed attempt and a hung one
/// are retried, then the checkpoint lands.
#[test]
fn soft_retries_and_times_out_under_block_on() {
    let (client, model) = summarizer(vec![
        Step::Fail(server_error()),
        Step::Hang,
        Step::Reply(Box::new(text_reply(SUMMARY))),
    ]);
    let events = Arc::default();
    let harness = harness(
        "method_order = [\"soft\"]\nkeep_recent_tokens = 400\n",
        model,
        events,
    );
    for i in 0..12 {
        turn(&harness, i);
    }
    let pass = futures::executor::block_on(harness.compact(&[], None)).unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
    assert!(pass.landed());
    // The failure and the hang were each retried (soft may call again
    // for a split turn).
    assert!(client.requests().len() >= 3, "{}", client.requests().len());
}

/// Speculation cannot start without a tokio runtime; the first time it
/// would have, the observer hears why, and only that once.
#[test]
fn speculation_off_without_tokio_is_reported_once() {
    let (_, model) = summarizer(Vec::new());
    let events: Arc<Mutex<Vec<MaintenanceEvent>>> = Arc::default();
    let harness = harness(
        "method_order = [\"soft\"]\nspeculative_percent = 40\n",
        model,
        events.clone(),
    );
    // Through the band and past the threshold: the pass that compacts
    // ends the loop.
    for i in 0..200 {
        turn(&harness, i);
        if futures::executor::block_on(harness.after_turn())
            .unwrap()
            .landed()
        {
            break;
        }
    }
    let unavailable: Vec<String> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            MaintenanceEvent::SpeculationUnavailable { method, reason } => {
                Some(format!("{method}: {reason}"))
            }
            _ => None,
        })
        .collect();
    // Built without the feature, the reason is the build; with it, the
    // missing runtime.
    let reason = if cfg!(feature = "tokio") {
        "soft: no tokio runtime is running on this thread"
    } else {
        "soft: abridge was built without its `tokio` feature"
    };
    assert_eq!(unavailable, [reason], "{:?}", events.lock().unwrap());
}
