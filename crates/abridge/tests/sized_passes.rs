//! Passes sized to the window on the bundled real sessions (issue 27,
//! points 3 to 6): a checkpoint stays in the room its pass gives it, a
//! pass that reports success ends under its goal, no landing reclaims
//! less than the floor, a fixed part above the threshold stops
//! Maintenance with one event, and digest over a snapcompact checkpoint
//! reads the messages the frames stand for.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::Mutex;

use abridge::Harness;
use abridge::MaintenanceEvent;
use abridge::PassStatus;
use abridge::Settings;
use abridge_compact::host::lock_session;
use abridge_session::MemoryStore;
use abridge_session::Session;
use abridge_test_support::samples::ALL;
use abridge_test_support::samples::CLAUDE;
use abridge_test_support::samples::PI;
use abridge_test_support::samples::sample;

/// A vision model, so snapcompact runs, with the Claude correction.
const MODEL: &str = "claude-sonnet-4-5";

fn imported(name: &str) -> Session {
    let imported = abridge_import::read(&sample(name), None).unwrap();
    imported
        .into_session(Box::new(MemoryStore::new()))
        .unwrap()
        .0
}

fn harness(name: &str, window: u64, settings: Settings) -> Harness {
    Harness::builder(imported(name), MODEL)
        .settings(settings)
        .window(window)
        .build()
        .unwrap()
}

fn run<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// Issue 27, point 3: at a 32k window snapcompact landed a checkpoint of
/// 25 frames (pi: 50,539 tokens; Claude Code: 65,242), sized by the
/// model's catalog window instead of the pass's room. Every checkpoint
/// must now end its attempt at or under the window, and a pass that
/// reports success at or under its goal.
#[test]
fn a_checkpoint_at_32k_lands_under_the_window_or_not_at_all() {
    for name in ALL {
        let harness = harness(name, 32_000, Settings::default());
        let pass = run(harness.compact(&[], None)).unwrap();
        for outcome in &pass.outcomes {
            if outcome.checkpoint_seq.is_some() {
                assert!(
                    outcome.tokens_after <= 32_000,
                    "{name}: {} landed at {} tokens, over the 32k window: {pass:?}",
                    outcome.method,
                    outcome.tokens_after
                );
            }
        }
        if pass.status == PassStatus::Succeeded {
            assert!(pass.tokens_after <= pass.goal, "{name}: {pass:?}");
        }
        assert_eq!(pass.tokens_after, harness.tokens(), "{name}");
    }
}

/// Issue 27, point 3: a landing that leaves the context above the
/// window (prune alone on pi at 32k: 182,319 -> 135,974) breaks the
/// prompt cache for a request that still cannot be sent. It is refused,
/// and the surface is unchanged.
#[test]
fn a_landing_that_leaves_the_context_over_the_window_is_refused() {
    let harness = harness(PI, 32_000, Settings::default());
    let before = harness.tokens();
    let pass = run(harness.compact(&["prune".to_string()], None)).unwrap();
    assert!(!pass.landed(), "{pass:?}");
    assert_eq!(pass.failures.len(), 1, "{pass:?}");
    assert_eq!(
        pass.failures[0].kind,
        abridge_compact::ErrorKind::OverWindow
    );
    assert_eq!(harness.tokens(), before);
}

/// Issue 27, point 6: snapcompact passes that each reclaimed 50 to 750
/// tokens, each a prompt-cache break. No landing may reclaim less than
/// the floor (5% of the threshold by default).
#[test]
fn no_landing_reclaims_less_than_the_floor() {
    for name in ALL {
        for window in [32_000, 64_000, 200_000] {
            let harness = harness(name, window, Settings::default());
            let floor = harness.limits().min_reclaim;
            assert!(floor > 0);
            let pass = run(harness.compact(&[], None)).unwrap();
            for outcome in &pass.outcomes {
                let reclaimed = outcome.tokens_before.saturating_sub(outcome.tokens_after);
                assert!(
                    reclaimed >= floor,
                    "{name} at {window}: {} reclaimed {reclaimed}, under the floor of {floor}",
                    outcome.method
                );
            }
        }
    }
}

/// Issue 27, point 6: on the Claude Code session at a 40k window the
/// system prompt and tools (42k tokens by the usage reports) are above
/// the threshold (23,616). Maintenance says so once, with the figures,
/// and tries nothing: no pass lands, none counts toward the breaker, the
/// log is unchanged.
#[test]
fn a_fixed_part_above_the_threshold_stops_maintenance_with_one_event() {
    let events: Arc<Mutex<Vec<MaintenanceEvent>>> = Arc::default();
    let seen = events.clone();
    let harness = Harness::builder(imported(CLAUDE), MODEL)
        .window(40_000)
        .observer(Arc::new(move |event: &MaintenanceEvent| {
            seen.lock().unwrap().push(event.clone());
        }))
        .build()
        .unwrap();
    let threshold = harness.limits().threshold;
    let fixed = harness.fixed_tokens();
    assert!(fixed >= threshold, "{fixed} < {threshold}");
    let events_before = lock_session(harness.session()).len();
    for _ in 0..4 {
        let pass = run(harness.after_turn()).unwrap();
        assert_eq!(pass.status, PassStatus::FixedAboveThreshold, "{pass:?}");
        assert!(!pass.landed());
    }
    let manual = run(harness.compact(&[], None)).unwrap();
    assert_eq!(manual.status, PassStatus::FixedAboveThreshold);
    assert_eq!(lock_session(harness.session()).len(), events_before);
    assert!(!harness.maintenance().breaker_open());
    let events = events.lock().unwrap();
    assert_eq!(
        *events,
        vec![MaintenanceEvent::FixedAboveThreshold {
            fixed,
            limit: threshold
        }]
    );
}

/// Issue 27, point 4: after snapcompact, digest quoted the frames' text
/// fallback, so the context opened with the last request as the goal
/// ("yeah, do it all"), "So far: 1 requests", and an earlier summary that
/// was the first messages word for word. It must read the messages the
/// frames stand for: the session's first request is the goal, and the
/// later ones are counted.
#[test]
fn digest_after_snapcompact_reads_the_messages_the_frames_stand_for() {
    let harness = harness(PI, 100_000, Settings::default());
    let methods = ["snapcompact".to_string()];
    let first = run(harness.compact(&methods, None)).unwrap();
    assert_eq!(first.outcomes.len(), 1, "{first:?}");
    // A later pass keeping less, so digest folds the checkpoint in.
    let later = abridge::HarnessBuilder::shared(harness.session().clone(), MODEL)
        .settings(Settings {
            keep_recent_tokens: Some(2_000),
            ..Settings::default()
        })
        .window(100_000)
        .build()
        .unwrap();
    let second = run(later.compact(&["digest".to_string()], None)).unwrap();
    let digest = second.outcomes.last().expect("digest landed");
    assert_eq!(digest.method, "digest");
    let short = &digest.short_summary;
    assert!(
        short.starts_with("Working on: read packages/coding-agent/docs/theme.md in full"),
        "{short}"
    );
    let requests: usize = short
        .split("So far: ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(requests > 50, "{short}");
    let session = lock_session(harness.session());
    let checkpoint = session.message(digest.checkpoint_seq.unwrap()).unwrap();
    let text: String = checkpoint
        .content
        .iter()
        .filter_map(abridge_llm::Block::as_text)
        .collect();
    assert!(!text.contains("## Earlier summary"), "{text}");
}
