//! Issue 33: a model-backed method whose background runs keep failing is
//! not started again on every turn. Its failed speculations count
//! against its breaker; once open, no speculation of it starts until the
//! breaker's cool-down (passes that ran) lets one trial through, while
//! the model-free method keeps landing. Checked on Maintenance with
//! scripted methods and on a Harness with the real `soft` over a
//! scripted client that fails every call.

// Speculation needs the `tokio` feature.
#![cfg(feature = "tokio")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;

use abridge::Limits;
use abridge::Maintenance;
use abridge::MaintenanceEvent;
use abridge::compact::check::check_invariants;
use abridge::compact::host::*;
use abridge::compact::*;
use abridge::llm::Message;
use abridge::session::Session;
use async_trait::async_trait;

/// The breaker's setting in these tests.
const BREAKER: u32 = 3;

/// A model-backed method whose model call always fails; counts calls.
#[derive(Debug, Default)]
struct Broken {
    calls: AtomicUsize,
}

impl Broken {
    fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl CompactionMethod for Broken {
    fn name(&self) -> &str {
        "soft"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::model_backed()
    }

    async fn run(&self, _plan: &Plan) -> Result<MethodOutput, MethodError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Err(MethodError::Summary {
            method: "soft".to_string(),
            reason: "the summarizer answered 500".to_string(),
        })
    }
}

/// A model-free method that always lands a small checkpoint.
#[derive(Debug)]
struct Digest;

#[async_trait]
impl CompactionMethod for Digest {
    fn name(&self) -> &str {
        "digest"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    async fn run(&self, _plan: &Plan) -> Result<MethodOutput, MethodError> {
        Ok(MethodOutput::Checkpoint(
            Checkpoint::new("digest").with_short_summary("digest"),
        ))
    }
}

fn append_turn(session: &SharedSession, i: usize) {
    let mut session = lock_session(session);
    session
        .append_message(Message::user(format!("request {i}")))
        .unwrap();
    session
        .append_message(Message::assistant(format!("{i} {}", "x".repeat(800))))
        .unwrap();
}

fn limits() -> Limits {
    Limits {
        window: 2_000,
        threshold: 1_000,
        reserve: 1_000,
        keep: 300,
        target: 800,
        min_reclaim: 0,
    }
}

/// What the test reads from the events.
#[derive(Default)]
struct Seen {
    /// Passes that ran (each ends with `PassEnded`).
    passes: usize,
    /// `SpeculationFailed` events, as (failures in a row, breaker open).
    failed: Vec<(u32, bool)>,
    landed_digest: usize,
}

/// The proxy's arrangement: models only in the background, a summary
/// started after each reply, the threshold pass before each request.
struct Host {
    m: Maintenance,
    session: SharedSession,
    seen: Arc<Mutex<Seen>>,
    turn: usize,
}

impl Host {
    fn new(broken: Arc<Broken>) -> Self {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let sink = seen.clone();
        let m = Maintenance::new(vec![broken, Arc::new(Digest)], Policy::default(), limits())
            .with_breaker(BREAKER)
            .with_speculation(300)
            .with_background_models(true)
            .with_observer(Arc::new(move |e: &MaintenanceEvent| {
                let mut seen = sink.lock().unwrap();
                match e {
                    MaintenanceEvent::PassEnded { .. } => seen.passes += 1,
                    MaintenanceEvent::SpeculationFailed {
                        failures,
                        breaker_open,
                        ..
                    } => seen.failed.push((*failures, *breaker_open)),
                    MaintenanceEvent::AttemptLanded { method, .. } if method == "digest" => {
                        seen.landed_digest += 1;
                    }
                    _ => {}
                }
            }));
        let session = Arc::new(Mutex::new(Session::in_memory("m")));
        Host {
            m,
            session,
            seen,
            turn: 0,
        }
    }

    /// One turn: the request (logged, then the threshold pass), the reply
    /// (then a summary started in the background, left to finish).
    async fn turn(&mut self) {
        append_turn(&self.session, self.turn);
        self.turn += 1;
        self.m.run(&self.session, Trigger::Threshold).await.unwrap();
        self.m.speculate(&self.session);
        for _ in 0..1000 {
            if !self.m.speculation_running() {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(!self.m.speculation_running(), "the summary never finished");
        assert!(check_invariants(&lock_session(&self.session)).is_ok());
    }

    fn passes(&self) -> usize {
        self.seen.lock().unwrap().passes
    }

    fn failed(&self) -> Vec<(u32, bool)> {
        self.seen.lock().unwrap().failed.clone()
    }

    /// Turns until `failures` failed speculations have been counted.
    async fn until_failed(&mut self, failures: usize) {
        for _ in 0..100 {
            if self.failed().len() >= failures {
                return;
            }
            self.turn().await;
        }
        panic!("only {:?} failures were counted", self.failed());
    }
}

#[tokio::test]
async fn a_summarizer_that_always_fails_is_not_started_again_until_the_cool_down_allows_a_trial() {
    let broken = Arc::new(Broken::default());
    let mut host = Host::new(broken.clone());

    host.until_failed(BREAKER as usize).await;
    assert_eq!(broken.calls(), BREAKER as usize);
    assert_eq!(host.failed(), vec![(1, false), (2, false), (3, true)]);

    // Open: no call while fewer than BREAKER passes have run since, over
    // many turns (digest keeps landing, so the session keeps cycling
    // through the band).
    let opened_at = host.passes();
    let mut turns = 0;
    while host.passes() - opened_at < BREAKER as usize {
        host.turn().await;
        turns += 1;
        if host.passes() - opened_at < BREAKER as usize {
            assert_eq!(
                broken.calls(),
                BREAKER as usize,
                "a summary started at turn {turns}"
            );
        }
    }
    assert!(turns >= 5, "only {turns} turns were watched");

    // The cool-down has passed: one trial, which fails again and doubles
    // the wait.
    host.until_failed(BREAKER as usize + 1).await;
    assert_eq!(broken.calls(), BREAKER as usize + 1);
    assert_eq!(host.failed().last(), Some(&(BREAKER + 1, true)));
    let reopened_at = host.passes();
    while host.passes() - reopened_at < 2 * BREAKER as usize {
        assert_eq!(broken.calls(), BREAKER as usize + 1);
        host.turn().await;
    }

    // digest landed all along, and the pass breaker never opened.
    assert!(host.seen.lock().unwrap().landed_digest >= 3);
    assert_eq!(host.m.consecutive_failures(), 0);
    assert!(!host.m.breaker_open());
}

#[tokio::test]
async fn a_manual_run_lets_the_summarizer_be_tried_again_at_once() {
    let broken = Arc::new(Broken::default());
    let mut host = Host::new(broken.clone());
    host.until_failed(BREAKER as usize).await;
    host.m.run(&host.session, Trigger::Manual).await.unwrap();
    host.until_failed(BREAKER as usize + 1).await;
    assert_eq!(host.failed().last(), Some(&(1, false)));
}

/// A summarizer client whose every call fails as a 500 would; counts them.
#[derive(Debug, Default)]
struct Failing {
    calls: AtomicUsize,
}

#[async_trait]
impl abridge::llm::LlmClient for Failing {
    fn provider(&self) -> &str {
        "failing"
    }

    async fn complete(
        &self,
        _request: &abridge::llm::Request,
    ) -> Result<abridge::llm::Response, abridge::llm::LlmError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Err(abridge::llm::LlmError::Server {
            provider: "failing".into(),
            status: 500,
            retry_after: None,
            message: "internal server error".into(),
        })
    }
}

/// The same through a Harness with the real `soft` over a scripted
/// client: after the breaker's failures the client gets no further call
/// over many turns, and digest lands throughout.
#[tokio::test]
async fn a_harness_stops_calling_a_failing_summarizer_once_its_breaker_opens() {
    let client = Arc::new(Failing::default());
    let sources = abridge::MethodSources {
        summarizer: Some(abridge::SummarizerModel {
            client: client.clone(),
            model: "summarizer".into(),
            retry: abridge::llm::RetryPolicy::no_retries(),
            soft: abridge::basic::SoftConfig::default(),
            handoff_file: None,
            handoff_max_tokens: None,
        }),
        ..abridge::MethodSources::offline("unknown")
    };
    let settings = abridge::Settings::from_toml(
        "method_order = [\"soft\", \"digest\"]\nspeculative_percent = 20\nbreaker_failures = 3\n",
        "abridge.toml",
    )
    .unwrap();
    let harness = abridge::Harness::builder(Session::in_memory("h"), "gpt-4o")
        .settings(settings)
        .sources(sources)
        .background_models(true)
        .window(8_000)
        .build()
        .unwrap();
    let mut landed = 0;
    let mut calls_at_open = None;
    for i in 0..400 {
        harness
            .append(Message::user(format!(
                "step {i}: {}",
                "context ".repeat(80)
            )))
            .unwrap();
        harness
            .append(Message::assistant(format!("did step {i}")))
            .unwrap();
        let pass = harness.after_turn().await.unwrap();
        if pass.landed() {
            landed += 1;
        }
        harness.maintenance().speculate(harness.session());
        for _ in 0..1000 {
            if !harness.maintenance().speculation_running() {
                break;
            }
            tokio::task::yield_now().await;
        }
        let calls = client.calls.load(Ordering::SeqCst);
        if calls_at_open.is_none() && calls >= BREAKER as usize {
            calls_at_open = Some((calls, landed));
        }
    }
    let (at_open, landed_then) = calls_at_open.expect("the summarizer was never called");
    assert_eq!(at_open, BREAKER as usize);
    assert!(landed - landed_then >= 8, "only {landed} landings");
    // A cool-down of 3 passes, then 6, then 12: a few trials, against one
    // call per landing without the breaker.
    let calls = client.calls.load(Ordering::SeqCst);
    eprintln!("{calls} summarizer calls over {landed} landings");
    assert!(
        calls <= BREAKER as usize + 3,
        "{calls} calls over {landed} landings"
    );
    assert!(check_invariants(&lock_session(harness.session())).is_ok());
}
