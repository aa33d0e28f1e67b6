//! Maintenance with scripted methods: every trigger, fall-through, the
//! progress rule, the breaker, one pass at a time, events, and
//! cancellation at every await point.

// Without `tokio` the speculation tests are left out, and their helpers
// with them.
#![cfg_attr(not(feature = "tokio"), allow(dead_code))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::Mutex;

use abridge::Limits;
use abridge::Maintenance;
use abridge::MaintenanceEvent;
use abridge::PassStatus;
use abridge::compact::check::*;
use abridge::compact::host::*;
use abridge::compact::*;
use abridge::llm::Block;
use abridge::llm::Message;
use abridge::llm::Role;
use abridge::session::Session;
use async_trait::async_trait;
use futures::FutureExt;

/// A `read` of `src/<id>.rs`, said aloud first.
fn call(id: &str) -> Message {
    let path = format!("src/{id}.rs");
    let mut message = Message::tool_call(id, "read", serde_json::json!({ "path": path }));
    message.content.insert(0, Block::text("Reading."));
    message
}

/// `turns` turns of request, read call, 800-character result, reply:
/// about 230 bytes/4 tokens each.
fn session(turns: usize) -> SharedSession {
    let mut session = Session::in_memory("m");
    for i in 0..turns {
        append_turn(&mut session, i);
    }
    Arc::new(Mutex::new(session))
}

fn append_turn(session: &mut Session, i: usize) {
    session
        .append_message(Message::user(format!("request {i}")))
        .unwrap();
    session.append_message(call(&format!("c{i}"))).unwrap();
    session
        .append_message(Message::tool_result(
            format!("c{i}"),
            "x".repeat(800),
            false,
        ))
        .unwrap();
    session
        .append_message(Message::assistant(format!("done {i}")))
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

#[derive(Debug, Clone)]
enum Behaviour {
    /// A small checkpoint.
    Land,
    /// A summary error.
    Fail,
    /// Never returns.
    Stall,
    /// Rewrites the oldest visible tool result to a short note: lands,
    /// but saves only about 200 tokens.
    Nibble,
    /// Declines by saying it is unavailable.
    Unavailable,
    /// A checkpoint of about 600 tokens: lands, but too big to reach the
    /// goal beside what is kept.
    Bulky,
}

#[derive(Debug)]
struct Scripted {
    name: &'static str,
    behaviour: Behaviour,
    session: Option<SharedSession>,
}

#[async_trait]
impl CompactionMethod for Scripted {
    fn name(&self) -> &str {
        self.name
    }

    /// The double named `handoff` declares what `handoff` declares; the
    /// others keep the default.
    fn capabilities(&self) -> Capabilities {
        if self.name == "handoff" {
            Capabilities::model_backed().resending_input()
        } else {
            Capabilities::default()
        }
    }

    fn available(&self) -> Availability {
        match self.behaviour {
            Behaviour::Unavailable => Availability::Unavailable {
                reason: "scripted".into(),
            },
            _ => Availability::Ready,
        }
    }

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        match self.behaviour {
            Behaviour::Land | Behaviour::Unavailable => Ok(MethodOutput::Checkpoint(
                Checkpoint::new("## Goal\nread files").with_short_summary("short"),
            )),
            Behaviour::Bulky => Ok(MethodOutput::Checkpoint(
                Checkpoint::new("long summary")
                    .with_content(vec![Block::text("long summary ".repeat(185))])
                    .with_short_summary("short"),
            )),
            Behaviour::Fail => Err(MethodError::Summary {
                method: self.name.into(),
                reason: "scripted failure".into(),
            }),
            Behaviour::Stall => futures::future::pending().await,
            Behaviour::Nibble => {
                let session = lock_session(self.session.as_ref().unwrap());
                let target = session
                    .surface()
                    .seqs()
                    .iter()
                    .copied()
                    .find(|s| {
                        session
                            .message(*s)
                            .is_some_and(|m| m.role == Role::Tool && m.plain_text().len() > 100)
                    })
                    .ok_or_else(|| MethodError::NothingToCompact {
                        reason: "no long result".into(),
                    })?;
                let id = session
                    .message(target)
                    .unwrap()
                    .tool_result_block()
                    .unwrap()
                    .0
                    .to_string();
                let _ = plan;
                Ok(MethodOutput::Rewrites {
                    rewrites: vec![Rewrite {
                        target,
                        message: Message::tool_result(id, "[pruned]", false),
                    }],
                    details: Details::new(),
                })
            }
        }
    }
}

fn method(name: &'static str, behaviour: Behaviour) -> Arc<dyn CompactionMethod> {
    Arc::new(Scripted {
        name,
        behaviour,
        session: None,
    })
}

fn maintenance(methods: Vec<Arc<dyn CompactionMethod>>) -> Maintenance {
    Maintenance::new(methods, Policy::default(), limits())
}

fn run<T>(future: impl std::future::Future<Output = T>) -> T {
    futures::executor::block_on(future)
}

fn tokens(session: &SharedSession) -> u64 {
    EstimateCounter::new().context_tokens(&lock_session(session))
}

fn starts(session: &SharedSession) -> usize {
    lock_session(session)
        .events()
        .iter()
        .filter(|e| e.log().is_some_and(|l| l.kind == TYPE_COMPACTION_START))
        .count()
}

#[test]
fn under_the_threshold_nothing_runs() {
    let shared = session(3);
    assert!(tokens(&shared) < limits().threshold);
    let m = maintenance(vec![method("ok", Behaviour::Land)]);
    for trigger in [Trigger::Threshold, Trigger::MidTurn] {
        let pass = run(m.run(&shared, trigger)).unwrap();
        assert_eq!(pass.status, PassStatus::NotNeeded);
    }
    assert_eq!(starts(&shared), 0);
    // Idle acts at half the threshold; manual and overflow always act.
    let pass = run(m.run(&shared, Trigger::Idle)).unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
}

#[test]
fn fall_through_records_typed_failures_and_lands_on_the_next() {
    let shared = session(6);
    let m = maintenance(vec![
        method("off", Behaviour::Unavailable),
        method("bad", Behaviour::Fail),
        method("ok", Behaviour::Land),
    ]);
    let pass = run(m.run(&shared, Trigger::Threshold)).unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded);
    assert_eq!(pass.outcomes.len(), 1);
    assert_eq!(pass.outcomes[0].method, "ok");
    let kinds: Vec<(&str, &str)> = pass
        .failures
        .iter()
        .map(|f| (f.method.as_str(), f.kind.as_str()))
        .collect();
    assert_eq!(kinds, vec![("off", "unavailable"), ("bad", "summary")]);
    // The unavailable method wrote nothing; the failing one an error end.
    assert_eq!(starts(&shared), 2);
    assert!(check_invariants(&lock_session(&shared)).is_ok());
}

#[test]
fn a_pass_that_lands_above_the_goal_runs_the_next_method_on_the_result() {
    let shared = session(6);
    let nibble = Arc::new(Scripted {
        name: "nibble",
        behaviour: Behaviour::Nibble,
        session: Some(shared.clone()),
    });
    let m = maintenance(vec![nibble, method("ok", Behaviour::Land)]);
    let before = tokens(&shared);
    let pass = run(m.run(&shared, Trigger::Threshold)).unwrap();
    let methods: Vec<&str> = pass.outcomes.iter().map(|o| o.method.as_str()).collect();
    assert_eq!(methods, vec!["nibble", "ok"]);
    assert_eq!(pass.status, PassStatus::Succeeded);
    assert!(pass.tokens_after <= limits().target);
    // The nibble landed but alone it would not have reached 80%.
    assert!(
        pass.outcomes[0].tokens_after > limits().target,
        "{before} {pass:?}"
    );
}

#[test]
fn landing_only_above_the_goal_is_insufficient_and_counts_against_the_breaker() {
    let shared = session(6);
    let nibble = Arc::new(Scripted {
        name: "nibble",
        behaviour: Behaviour::Nibble,
        session: Some(shared.clone()),
    });
    let m = maintenance(vec![nibble]);
    let pass = run(m.run(&shared, Trigger::Threshold)).unwrap();
    assert_eq!(pass.status, PassStatus::Insufficient);
    assert_eq!(m.consecutive_failures(), 1);
}

#[test]
fn the_breaker_stops_a_fourth_attempt_until_a_manual_run_or_a_success() {
    let shared = session(6);
    let m = maintenance(vec![method("bad", Behaviour::Fail)]);
    for _ in 0..3 {
        let pass = run(m.run(&shared, Trigger::Threshold)).unwrap();
        assert_eq!(pass.status, PassStatus::Failed);
    }
    assert!(m.breaker_open());
    let written = starts(&shared);
    for trigger in [Trigger::Threshold, Trigger::MidTurn, Trigger::Idle] {
        let pass = run(m.run(&shared, trigger)).unwrap();
        assert_eq!(pass.status, PassStatus::BreakerOpen);
    }
    assert_eq!(starts(&shared), written, "no fourth attempt was written");
    // Recovery from a refused request still runs: the request cannot be
    // sent as it is. It does not close the breaker when it fails.
    let pass = run(m.run(&shared, Trigger::Overflow)).unwrap();
    assert_eq!(pass.status, PassStatus::Failed);
    assert!(m.breaker_open());
    let written = written + 1;
    // A manual run goes through and resets the breaker.
    let pass = run(m.run(&shared, Trigger::Manual)).unwrap();
    assert_eq!(pass.status, PassStatus::Failed);
    assert!(!m.breaker_open());
    assert_eq!(starts(&shared), written + 1);
}

/// A method that plays its behaviours in turn, one per run.
#[derive(Debug)]
struct Sequence(Mutex<std::collections::VecDeque<Behaviour>>);

#[async_trait]
impl CompactionMethod for Sequence {
    fn name(&self) -> &str {
        "sequence"
    }

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        let behaviour = self.0.lock().unwrap().pop_front().unwrap();
        Scripted {
            name: "sequence",
            behaviour,
            session: None,
        }
        .run(plan)
        .await
    }
}

#[test]
fn a_success_resets_the_failures_counted_before_it() {
    use Behaviour::{Fail, Land};
    let shared = session(6);
    let script = [Fail, Fail, Land, Fail, Fail].into_iter().collect();
    let m = maintenance(vec![Arc::new(Sequence(Mutex::new(script)))]);
    for expected in [1, 2] {
        let pass = run(m.run(&shared, Trigger::Threshold)).unwrap();
        assert_eq!(pass.status, PassStatus::Failed);
        assert_eq!(m.consecutive_failures(), expected);
    }
    let pass = run(m.run(&shared, Trigger::Threshold)).unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
    assert_eq!(m.consecutive_failures(), 0);
    // Two more failures after the success: two in a row, not four, so the
    // breaker (three) stays closed and the next trigger still runs.
    for i in 0..6 {
        append_turn(&mut lock_session(&shared), 100 + i);
    }
    for expected in [1, 2] {
        let pass = run(m.run(&shared, Trigger::Threshold)).unwrap();
        assert_eq!(pass.status, PassStatus::Failed, "{pass:?}");
        assert_eq!(m.consecutive_failures(), expected);
    }
    assert!(!m.breaker_open());
}

#[test]
fn with_the_breaker_open_a_context_that_cannot_be_sent_is_recovered_as_overflow() {
    // The breaker opened on a method that always fails; the session then
    // grew past the window minus half the reserve (1500 of 2000), where
    // the next request would be refused. The next threshold call runs as
    // overflow recovery instead of letting the host send it.
    let failing = maintenance(vec![method("bad", Behaviour::Fail)]);
    let shared = session(6);
    for _ in 0..3 {
        run(failing.run(&shared, Trigger::Threshold)).unwrap();
    }
    assert!(failing.breaker_open());
    // Below the line: the breaker holds.
    assert!(tokens(&shared) <= 1_500);
    let pass = run(failing.run(&shared, Trigger::Threshold)).unwrap();
    assert_eq!(pass.status, PassStatus::BreakerOpen);
    // Above it: recovery runs, as overflow.
    for i in 0..2 {
        append_turn(&mut lock_session(&shared), 200 + i);
    }
    assert!(tokens(&shared) > 1_500);
    let before = starts(&shared);
    let pass = run(failing.run(&shared, Trigger::MidTurn)).unwrap();
    assert_eq!(pass.trigger, Trigger::Overflow, "{pass:?}");
    assert_eq!(starts(&shared), before + 1);
}

#[test]
fn overflow_skips_handoff_and_aims_below_the_window_minus_the_reserve() {
    let shared = session(6);
    let m = maintenance(vec![
        method("handoff", Behaviour::Land),
        method("ok", Behaviour::Land),
    ]);
    assert_eq!(
        m.goal(Trigger::Overflow),
        limits().window - limits().reserve
    );
    let pass = run(m.run(&shared, Trigger::Overflow)).unwrap();
    assert_eq!(pass.outcomes[0].method, "ok");
    assert_eq!(pass.failures[0].method, "handoff");
    assert_eq!(pass.failures[0].kind, ErrorKind::Skipped);
    assert_eq!(pass.outcomes[0].trigger, Trigger::Overflow);
}

#[test]
fn one_pass_at_a_time_and_a_dropped_pass_leaves_a_valid_log() {
    let shared = session(6);
    let m = maintenance(vec![method("slow", Behaviour::Stall)]);
    let surface = lock_session(&shared).surface().clone();
    {
        let mut first = Box::pin(m.run(&shared, Trigger::Threshold));
        assert!((&mut first).now_or_never().is_none());
        let second = run(m.run(&shared, Trigger::Manual)).unwrap();
        assert_eq!(second.status, PassStatus::Busy);
    }
    // The first pass was dropped mid-method: a cancelled end, nothing else.
    let session = lock_session(&shared);
    assert_eq!(session.surface(), &surface);
    assert!(unmatched_starts(&session).is_empty());
    assert!(check_invariants(&session).is_ok());
    drop(session);
    let m2 = maintenance(vec![method("ok", Behaviour::Land)]);
    assert_eq!(
        run(m2.run(&shared, Trigger::Threshold)).unwrap().status,
        PassStatus::Succeeded
    );
}

#[test]
fn after_a_checkpoint_that_is_not_enough_the_next_method_keeps_less() {
    // A checkpoint that lands but leaves the context above the goal: the
    // next method, planned with the same budget, would find only that
    // checkpoint to fold. It must be planned with a smaller budget.
    let shared = session(12);
    let m = Maintenance::new(
        vec![
            method("weak", Behaviour::Bulky),
            method("ok", Behaviour::Land),
        ],
        Policy::default(),
        limits(),
    );
    let pass = run(m.run(&shared, Trigger::Threshold)).unwrap();
    let methods: Vec<&str> = pass.outcomes.iter().map(|o| o.method.as_str()).collect();
    assert_eq!(methods, vec!["weak", "ok"], "{pass:?}");
    assert!(pass.outcomes[1].tokens_after < pass.outcomes[0].tokens_after);
    assert!(check_invariants(&lock_session(&shared)).is_ok());
}

#[test]
fn named_methods_run_in_the_given_order_and_unknown_names_are_failures() {
    let shared = session(6);
    let m = maintenance(vec![
        method("a", Behaviour::Fail),
        method("b", Behaviour::Land),
    ]);
    let pass =
        run(m.run_with(&shared, Trigger::Manual, &["nope".into(), "b".into()], None)).unwrap();
    assert_eq!(pass.outcomes[0].method, "b");
    assert_eq!(pass.failures[0].kind, ErrorKind::NotConfigured);
    assert_eq!(
        pass.failures[0].message,
        "method nope is not configured (configured: a, b)"
    );
}

#[test]
fn every_step_is_an_event() {
    let shared = session(6);
    let seen: Arc<Mutex<Vec<MaintenanceEvent>>> = Arc::default();
    let sink = seen.clone();
    let m = maintenance(vec![
        method("bad", Behaviour::Fail),
        method("ok", Behaviour::Land),
    ])
    .with_observer(Arc::new(move |e: &MaintenanceEvent| {
        sink.lock().unwrap().push(e.clone())
    }));
    run(m.run(&shared, Trigger::Threshold)).unwrap();
    let names: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["event"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        names,
        vec![
            "pass_started",
            "attempt_started",
            "attempt_failed",
            "attempt_started",
            "attempt_landed",
            "pass_ended"
        ]
    );
}

proptest::proptest! {
    /// Dropping a pass after any number of polls, with any mix of methods,
    /// leaves a log whose invariants hold and no live compaction behind;
    /// the next pass then works.
    #[test]
    fn cancellation_at_any_await_point_leaves_a_valid_log(
        polls in 0usize..6,
        kinds in proptest::collection::vec(0u8..4, 1..4),
    ) {
        let shared = session(6);
        let methods: Vec<Arc<dyn CompactionMethod>> = kinds
            .iter()
            .map(|k| match k {
                0 => method("ok", Behaviour::Land),
                1 => method("bad", Behaviour::Fail),
                2 => method("slow", Behaviour::Stall),
                _ => Arc::new(Scripted { name: "nibble", behaviour: Behaviour::Nibble, session: Some(shared.clone()) }) as Arc<dyn CompactionMethod>,
            })
            .collect();
        let m = maintenance(methods);
        {
            let mut pass = Box::pin(m.run(&shared, Trigger::Threshold));
            let waker = futures::task::noop_waker();
            let mut cx = std::task::Context::from_waker(&waker);
            for _ in 0..polls {
                if pass.as_mut().poll(&mut cx).is_ready() {
                    break;
                }
            }
        }
        let session = lock_session(&shared);
        proptest::prop_assert!(unmatched_starts(&session).is_empty());
        let report = check_invariants(&session);
        proptest::prop_assert!(report.is_ok(), "{:?}", report.violations);
        drop(session);
        for i in 10..16 {
            append_turn(&mut lock_session(&shared), i);
        }
        let next = maintenance(vec![method("ok", Behaviour::Land)]);
        let pass = run(next.run(&shared, Trigger::Manual)).unwrap();
        proptest::prop_assert!(pass.landed());
    }
}

/// A model-backed method (by name) that counts its calls and says which
/// span it summarized, so a test can tell a committed speculation from a
/// live run.
#[derive(Debug, Default)]
struct Counted {
    calls: std::sync::atomic::AtomicUsize,
}

#[async_trait]
impl CompactionMethod for Counted {
    fn name(&self) -> &str {
        "soft"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::model_backed()
    }

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        let call = self.calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        let text = format!(
            "call {call} summarized {}..={}",
            plan.span().start,
            plan.span().end
        );
        Ok(MethodOutput::Checkpoint(
            Checkpoint::new(text).with_short_summary("short"),
        ))
    }
}

/// Maintenance with a 300-token speculative band over a counted `soft`,
/// recording its events.
fn speculating(
    methods: Vec<Arc<dyn CompactionMethod>>,
) -> (Maintenance, Arc<Mutex<Vec<MaintenanceEvent>>>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let m = maintenance(methods)
        .with_speculation(300)
        .with_observer(Arc::new(move |e: &MaintenanceEvent| {
            sink.lock().unwrap().push(e.clone())
        }));
    (m, events)
}

fn spoken(events: &Mutex<Vec<MaintenanceEvent>>) -> Vec<String> {
    events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|e| match e {
            MaintenanceEvent::SpeculationStarted { method, .. } => {
                Some(format!("started {method}"))
            }
            MaintenanceEvent::SpeculationCommitted { method } => {
                Some(format!("committed {method}"))
            }
            MaintenanceEvent::SpeculationDropped { method, reason } => {
                Some(format!("dropped {method}: {reason}"))
            }
            _ => None,
        })
        .collect()
}

fn checkpoint_text(session: &SharedSession) -> String {
    let session = lock_session(session);
    session.surface_messages()[0].plain_text()
}

/// Runs until the speculation's task has finished.
async fn settle(m: &Maintenance) {
    for _ in 0..1000 {
        if m.speculation_ready() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("the speculation never finished");
}

// Speculation needs the `tokio` feature.
#[cfg(feature = "tokio")]
#[tokio::test]
async fn a_speculation_started_in_the_band_is_committed_at_the_threshold_without_a_call() {
    let shared = session(4);
    let before = tokens(&shared);
    assert!(before > 700 && before <= 1_000, "{before}");
    let soft = Arc::new(Counted::default());
    let (m, events) = speculating(vec![soft.clone()]);
    let pass = m.run(&shared, Trigger::Threshold).await.unwrap();
    assert_eq!(pass.status, PassStatus::NotNeeded);
    settle(&m).await;
    assert_eq!(soft.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    // Nothing was written while it ran.
    assert_eq!(starts(&shared), 0);

    append_turn(&mut lock_session(&shared), 4);
    let pass = m.run(&shared, Trigger::Threshold).await.unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
    assert_eq!(soft.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(checkpoint_text(&shared).contains("call 1 summarized 0..="));
    assert_eq!(spoken(&events), vec!["started soft", "committed soft"]);
    assert!(check_invariants(&lock_session(&shared)).is_ok());
}

// Speculation needs the `tokio` feature.
#[cfg(feature = "tokio")]
#[tokio::test]
async fn a_pruned_span_still_takes_the_speculation() {
    let shared = session(4);
    let soft = Arc::new(Counted::default());
    let prune = Arc::new(Scripted {
        name: "prune",
        behaviour: Behaviour::Nibble,
        session: Some(shared.clone()),
    });
    let (m, events) = speculating(vec![prune, soft.clone()]);
    m.run(&shared, Trigger::Threshold).await.unwrap();
    settle(&m).await;
    // Two more turns: the nibble lands but is not enough, then soft.
    append_turn(&mut lock_session(&shared), 4);
    append_turn(&mut lock_session(&shared), 5);
    let pass = m.run(&shared, Trigger::Threshold).await.unwrap();
    let methods: Vec<&str> = pass.outcomes.iter().map(|o| o.method.as_str()).collect();
    assert_eq!(methods, vec!["prune", "soft"], "{pass:?}");
    assert_eq!(soft.calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(spoken(&events), vec!["started soft", "committed soft"]);
    assert!(check_invariants(&lock_session(&shared)).is_ok());
}

// Speculation needs the `tokio` feature.
#[cfg(feature = "tokio")]
#[tokio::test]
async fn a_changed_prefix_drops_the_speculation_and_runs_live() {
    let shared = session(4);
    let soft = Arc::new(Counted::default());
    let (m, events) = speculating(vec![soft.clone()]);
    m.run(&shared, Trigger::Threshold).await.unwrap();
    settle(&m).await;
    {
        // Back to the second turn's reply, then new work on that branch:
        // the summarized history is no longer the session's.
        let mut session = lock_session(&shared);
        let second_reply = session.surface().seqs()[7];
        session.navigate(Some(second_reply)).unwrap();
        for i in 10..14 {
            append_turn(&mut session, i);
        }
    }
    let pass = m.run(&shared, Trigger::Threshold).await.unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
    assert_eq!(soft.calls.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert!(checkpoint_text(&shared).contains("call 2 summarized"));
    assert_eq!(
        spoken(&events),
        vec![
            "started soft",
            "dropped soft: the history it summarized changed"
        ]
    );
}

// Speculation needs the `tokio` feature.
#[cfg(feature = "tokio")]
#[tokio::test]
async fn a_manual_pass_drops_the_speculation_first() {
    let shared = session(4);
    let soft = Arc::new(Counted::default());
    let (m, events) = speculating(vec![soft.clone()]);
    m.run(&shared, Trigger::Threshold).await.unwrap();
    settle(&m).await;
    let pass = m.run(&shared, Trigger::Manual).await.unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
    let spoken = spoken(&events);
    assert_eq!(
        spoken,
        vec!["started soft", "dropped soft: a manual pass came first"]
    );
    assert!(checkpoint_text(&shared).contains("call 2 summarized"));
    assert!(check_invariants(&lock_session(&shared)).is_ok());
}

#[test]
fn without_a_tokio_runtime_nothing_is_speculated() {
    let shared = session(4);
    let soft = Arc::new(Counted::default());
    let (m, events) = speculating(vec![soft.clone()]);
    let pass = run(m.run(&shared, Trigger::Threshold)).unwrap();
    assert_eq!(pass.status, PassStatus::NotNeeded);
    assert!(spoken(&events).is_empty());
    assert_eq!(soft.calls.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[tokio::test]
async fn model_free_methods_are_never_speculated() {
    let shared = session(4);
    let (m, events) = speculating(vec![method("digest", Behaviour::Land)]);
    m.run(&shared, Trigger::Threshold).await.unwrap();
    assert!(spoken(&events).is_empty());
}

/// Counts like bytes/4 but reports 600 more for the whole context: the
/// system prompt and tools a provider's usage includes and the log never
/// holds.
#[derive(Debug, Default)]
struct WithOverhead(EstimateCounter);

impl TokenCounter for WithOverhead {
    fn message_tokens(&self, message: &Message) -> u64 {
        self.0.message_tokens(message)
    }

    fn seq_tokens(&self, session: &Session, seq: abridge::session::Seq) -> u64 {
        self.0.seq_tokens(session, seq)
    }

    fn context_tokens(&self, session: &Session) -> u64 {
        self.surface_tokens(session) + 600
    }
}

#[test]
fn recent_history_is_kept_only_as_far_as_the_unseen_overhead_leaves_room() {
    // Goal 800 with 600 tokens of overhead: only 200 are left for the
    // checkpoint and what is kept. The configured 300 of recent history
    // would miss the goal with any checkpoint; the pass keeps a quarter
    // of it (the share of the goal the overhead leaves).
    let shared = session(8);
    let m = Maintenance::new(
        vec![method("ok", Behaviour::Land)],
        Policy::new(Arc::new(WithOverhead::default())),
        limits(),
    );
    let pass = run(m.run(&shared, Trigger::Threshold)).unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
    assert_eq!(pass.outcomes.len(), 1);
    assert!(pass.tokens_after <= 800, "{pass:?}");
}

/// A host that tells the summarizer where the plan is and preserves a
/// note in every checkpoint.
#[derive(Debug)]
struct Preserving;

#[async_trait]
impl CompactionHooks for Preserving {
    async fn while_compacting(&self, _plan: &Plan) -> Extra {
        Extra {
            context: vec!["HOST-CONTEXT: the plan is in PLAN.md".into()],
            preserve: vec!["HOST-NOTE: keep the parser fix".into()],
        }
    }
}

/// A model-backed method (by name) whose summary repeats the notes the
/// host showed it.
#[derive(Debug)]
struct Noting;

#[async_trait]
impl CompactionMethod for Noting {
    fn name(&self) -> &str {
        "soft"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::model_backed()
    }

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        let text = format!("summary; shown: {}", plan.extra_context().join(" | "));
        Ok(MethodOutput::Checkpoint(
            Checkpoint::new(text).with_short_summary("short"),
        ))
    }
}

fn assert_host_notes_kept(session: &SharedSession) {
    let checkpoint = checkpoint_text(session);
    assert!(
        checkpoint.contains("<preserved>") && checkpoint.contains("HOST-NOTE: keep the parser fix"),
        "{checkpoint}"
    );
    assert!(
        checkpoint.contains("shown: HOST-CONTEXT: the plan is in PLAN.md"),
        "{checkpoint}"
    );
}

// Speculation needs the `tokio` feature.
#[cfg(feature = "tokio")]
#[tokio::test]
async fn the_host_hooks_keep_their_note_on_the_live_and_the_speculative_path() {
    // Live: over the threshold with nothing speculated.
    let live = session(6);
    let m = maintenance(vec![Arc::new(Noting)]).with_hooks(Arc::new(Preserving));
    let pass = m.run(&live, Trigger::Threshold).await.unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
    assert_host_notes_kept(&live);

    // Speculative: started in the band, committed at the threshold.
    let shared = session(4);
    let (m, events) = speculating(vec![Arc::new(Noting)]);
    let m = m.with_hooks(Arc::new(Preserving));
    let pass = m.run(&shared, Trigger::Threshold).await.unwrap();
    assert_eq!(pass.status, PassStatus::NotNeeded);
    settle(&m).await;
    append_turn(&mut lock_session(&shared), 4);
    let pass = m.run(&shared, Trigger::Threshold).await.unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
    assert_eq!(spoken(&events), vec!["started soft", "committed soft"]);
    assert_host_notes_kept(&shared);
}

/// A method that declares `capabilities` whatever its name.
#[derive(Debug)]
struct Declared(Arc<dyn CompactionMethod>, Capabilities);

#[async_trait]
impl CompactionMethod for Declared {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn capabilities(&self) -> Capabilities {
        self.1
    }

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        self.0.run(plan).await
    }
}

/// Issue 31: the overflow skip asks the method, not its name: a method of
/// any name that resends its input is skipped, and `handoff`'s message is
/// what any such method gets.
#[test]
fn a_method_that_resends_its_input_is_skipped_on_overflow_whatever_its_name() {
    let shared = session(6);
    let resending = Capabilities::model_backed().resending_input();
    let m = maintenance(vec![
        Arc::new(Declared(
            method("whole-history", Behaviour::Land),
            resending,
        )),
        method("ok", Behaviour::Land),
    ]);
    let pass = run(m.run(&shared, Trigger::Overflow)).unwrap();
    assert_eq!(pass.outcomes[0].method, "ok");
    assert_eq!(pass.failures[0].method, "whole-history");
    assert_eq!(pass.failures[0].kind, ErrorKind::Skipped);
    assert_eq!(
        pass.failures[0].message,
        "whole-history is skipped on overflow: it would resend the input that overflowed"
    );
    // On any other trigger it runs.
    let shared = session(6);
    let m = maintenance(vec![Arc::new(Declared(
        method("whole-history", Behaviour::Land),
        resending,
    ))]);
    let pass = run(m.run(&shared, Trigger::Manual)).unwrap();
    assert_eq!(pass.outcomes[0].method, "whole-history", "{pass:?}");
}

/// Issue 31: speculation asks the method too: the same `soft` double is
/// started early when it declares a model call, and not when it declares
/// itself model-free.
// Speculation needs the `tokio` feature.
#[cfg(feature = "tokio")]
#[tokio::test]
async fn speculation_follows_the_declared_capability_not_the_name() {
    let shared = session(4);
    let free = Arc::new(Declared(
        Arc::new(Counted::default()),
        Capabilities::MODEL_FREE,
    ));
    let (m, events) = speculating(vec![free]);
    m.run(&shared, Trigger::Threshold).await.unwrap();
    assert!(spoken(&events).is_empty());

    let shared = session(4);
    let custom = Arc::new(Declared(
        method("my-model", Behaviour::Land),
        Capabilities::model_backed(),
    ));
    let (m, events) = speculating(vec![custom]);
    m.run(&shared, Trigger::Threshold).await.unwrap();
    settle(&m).await;
    assert_eq!(spoken(&events), vec!["started my-model"]);
}

// Speculation needs the `tokio` feature.
#[cfg(feature = "tokio")]
#[tokio::test]
async fn with_models_in_the_background_a_pass_never_waits_on_a_running_speculation() {
    let shared = session(6);
    assert!(tokens(&shared) > limits().threshold);
    let stalled = method("handoff", Behaviour::Stall);
    let (m, events) = speculating(vec![stalled, method("digest", Behaviour::Land)]);
    let m = m.with_background_models(true);
    // Above the threshold a pass would not speculate; the host can.
    assert!(m.speculate(&shared));
    assert!(m.speculation_running());
    let pass = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        m.run(&shared, Trigger::Threshold),
    )
    .await
    .expect("the pass waited on the running speculation")
    .unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
    let landed: Vec<&str> = pass.outcomes.iter().map(|o| o.method.as_str()).collect();
    assert_eq!(landed, vec!["digest"]);
    assert_eq!(pass.failures[0].method, "handoff");
    assert_eq!(pass.failures[0].kind, ErrorKind::Unavailable);
    // Still held, still running: it was passed over, not dropped.
    assert_eq!(spoken(&events), vec!["started handoff"]);
    assert!(m.speculation_running());
}

// Speculation needs the `tokio` feature.
#[cfg(feature = "tokio")]
#[tokio::test]
async fn with_models_in_the_background_a_pass_without_a_speculation_calls_no_model() {
    let shared = session(6);
    let soft = Arc::new(Counted::default());
    let m = maintenance(vec![soft.clone(), method("digest", Behaviour::Land)])
        .with_background_models(true);
    let pass = m.run(&shared, Trigger::Threshold).await.unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
    assert_eq!(pass.outcomes[0].method, "digest");
    assert_eq!(soft.calls.load(std::sync::atomic::Ordering::SeqCst), 0);
}
