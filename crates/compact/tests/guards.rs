//! Behaviour that mutation testing found unguarded in the seam (see
//! docs/mutants.md): each test fails when the code it names is broken the
//! way cargo-mutants broke it.

// Test helpers outside #[test] functions unwrap too: a failure is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use abridge_compact::check::*;
use abridge_compact::host::*;
use abridge_compact::*;
use abridge_llm::Message;
use abridge_llm::Usage;
use abridge_session::Draft;
use abridge_session::Session;
use async_trait::async_trait;
use pretty_assertions::assert_eq;
use serde::Deserialize;
use serde::Serialize;

/// Requests and replies long enough that a plan keeping the newest few
/// hundred tokens hides the first turns.
fn session(turns: usize) -> Session {
    let mut session = Session::in_memory("guards");
    for i in 0..turns {
        session
            .append_message(Message::user(format!(
                "request {i} {}",
                "word ".repeat(200)
            )))
            .unwrap();
        session
            .append_message(Message::assistant(format!(
                "reply {i} {}",
                "word ".repeat(200)
            )))
            .unwrap();
    }
    session
}

fn plan_of(session: &Session) -> Plan {
    let policy = Policy::default().with_keep_recent_tokens(500);
    plan(session, &policy).expect("something to compact")
}

#[test]
fn a_checkpoint_over_one_message_passes_the_invariant_check() {
    let mut session = session(2);
    let first = session.surface().seqs()[0];
    session
        .append(Draft::replace(Message::user("summary"), 0, 0, vec![first]))
        .unwrap();
    let report = check_invariants(&session);
    assert_eq!(report.violations, vec![]);
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Note {
    text: String,
}

impl DetailSection for Note {
    const KEY: &'static str = "guards_note";
    const VERSION: u32 = 1;
}

#[derive(Debug, Serialize, Deserialize)]
struct Other;

impl DetailSection for Other {
    const KEY: &'static str = "guards_other";
    const VERSION: u32 = 1;
}

#[test]
fn details_say_which_sections_they_hold() {
    let mut details = Details::new();
    assert!(!details.contains::<Note>());
    details
        .insert(&Note {
            text: "kept".into(),
        })
        .unwrap();
    assert!(details.contains::<Note>());
    assert!(!details.contains::<Other>());
}

#[test]
fn only_methods_that_never_ran_are_skips() {
    for kind in [
        ErrorKind::NotConfigured,
        ErrorKind::Unavailable,
        ErrorKind::Skipped,
    ] {
        assert!(kind.is_skip(), "{kind}");
    }
    for kind in [ErrorKind::Commit, ErrorKind::AllFailed, ErrorKind::Details] {
        assert!(!kind.is_skip(), "{kind}");
    }
}

#[test]
fn a_failed_attempt_keeps_what_it_cost() {
    let cost = Usage {
        input: 120,
        output: 30,
        ..Usage::default()
    };
    let failed = MethodError::NothingToCompact {
        reason: "nothing".into(),
    }
    .with_usage(cost);
    assert_eq!(failed.usage(), Some(&cost));
    assert_eq!(failed.kind(), ErrorKind::NothingToCompact);
    // A zero usage leaves the error bare.
    let bare = MethodError::NothingToCompact {
        reason: "nothing".into(),
    }
    .with_usage(Usage::default());
    assert_eq!(bare.usage(), None);
}

#[test]
fn the_short_summary_is_the_first_line_with_text() {
    let checkpoint = Checkpoint::new("\n\n  Goal: ship the parser\n\nProgress: half");
    assert_eq!(checkpoint.short_summary, "Goal: ship the parser");
}

#[derive(Debug)]
struct Named;

#[async_trait]
impl CompactionMethod for Named {
    fn name(&self) -> &str {
        "named"
    }
    async fn run(&self, _plan: &Plan) -> Result<MethodOutput, MethodError> {
        Err(MethodError::NothingToCompact {
            reason: "test".into(),
        })
    }
}

#[test]
fn a_boxed_method_keeps_its_name() {
    let boxed: Box<dyn CompactionMethod> = Box::new(Named);
    assert_eq!(CompactionMethod::name(&boxed), "named");
}

#[test]
fn a_plan_holds_the_kept_messages_and_the_surface_generation() {
    let mut session = session(4);
    // Each replace moves the generation on by one: two make it 2.
    for _ in 0..2 {
        let first = session.surface().seqs()[0];
        session
            .append(Draft::replace(
                Message::user("request 0, shorter"),
                0,
                0,
                vec![first],
            ))
            .unwrap();
    }
    let plan = plan_of(&session);
    assert!(!plan.kept().is_empty());
    assert_eq!(plan.kept().len(), plan.kept_seqs().len());
    let surface = session.surface_messages();
    let tail = &surface[surface.len() - plan.kept().len()..];
    for (kept, live) in plan.kept().iter().zip(tail) {
        assert_eq!(kept.as_ref(), live.as_ref());
    }
    assert_eq!(plan.generation(), session.surface().generation());
    assert_eq!(plan.generation(), 2);
}

#[test]
fn a_plan_counts_a_message_as_its_counter_does() {
    let session = session(4);
    let plan = plan_of(&session);
    let message = Message::user("word ".repeat(300));
    let tokens = plan.count(&message);
    assert!(tokens > 100, "{tokens}");
    assert_eq!(tokens, plan.counter().message_tokens(&message));
}

/// A service that answers each call with an error naming the call, so a
/// wrapper that does not pass the call on shows.
#[derive(Debug)]
struct Answering;

fn named(call: &str) -> CompactError {
    CompactError::nothing_to_compact(call)
}

#[async_trait]
impl CompactService for Answering {
    async fn compact_if_needed(
        &self,
        _session: &SharedSession,
        _trigger: Trigger,
    ) -> Result<Option<Outcome>, CompactError> {
        Err(named("if_needed"))
    }
    async fn compact_now(
        &self,
        _session: &SharedSession,
        _request: CompactRequest,
    ) -> Result<Outcome, CompactError> {
        Err(named("now"))
    }
    async fn compact_region(
        &self,
        _session: &SharedSession,
        _span: Span,
    ) -> Result<Outcome, CompactError> {
        Err(named("region"))
    }
}

/// The reason of each call's answer, in the order if_needed, now, region.
async fn answers(service: &dyn CompactService) -> Vec<String> {
    let session: SharedSession = std::sync::Arc::new(std::sync::Mutex::new(session(1)));
    let reason = |error: CompactError| error.to_string();
    vec![
        service
            .compact_if_needed(&session, Trigger::Threshold)
            .await
            .map(|_| "answered Ok".to_string())
            .unwrap_or_else(reason),
        service
            .compact_now(&session, CompactRequest::manual())
            .await
            .map(|_| "answered Ok".to_string())
            .unwrap_or_else(reason),
        service
            .compact_region(&session, Span { start: 0, end: 0 })
            .await
            .map(|_| "answered Ok".to_string())
            .unwrap_or_else(reason),
    ]
}

#[tokio::test]
async fn boxed_and_shared_services_pass_every_call_on() {
    let direct = answers(&Answering).await;
    assert_eq!(direct.len(), 3);
    assert!(direct.iter().all(|a| a != "answered Ok"), "{direct:?}");
    let boxed: Box<dyn CompactService> = Box::new(Answering);
    assert_eq!(answers(&boxed).await, direct);
    let shared: std::sync::Arc<dyn CompactService> = std::sync::Arc::new(Answering);
    assert_eq!(answers(&shared).await, direct);
}

#[test]
fn a_span_counts_both_ends() {
    assert_eq!(Span { start: 2, end: 4 }.len(), 3);
    assert_eq!(Span { start: 0, end: 0 }.len(), 1);
}

#[test]
fn a_framed_checkpoint_says_which_compaction_and_method_wrote_it() {
    let message = frame_checkpoint(
        "c-7",
        "soft",
        abridge_session::Reference::range(1, 4),
        vec![abridge_llm::Block::text("summary")],
        &[],
    );
    assert!(is_checkpoint(&message));
    assert_eq!(
        message.meta.origin,
        Some(abridge_llm::Origin::Checkpoint {
            compaction_id: "c-7".into(),
            method: "soft".into(),
        })
    );
}
