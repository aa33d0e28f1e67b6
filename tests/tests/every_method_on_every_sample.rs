//! Every compaction method, on every bundled real session, checked the same
//! way: the one case under every configuration. Each run goes through a
//! JsonlStore on disk, so what is checked is what a user would reopen.
//!
//! For each (sample, method): the method either lands and the figure to act
//! on falls, or it declines with a reason (nothing to reclaim, not smaller,
//! unavailable); either way the invariants hold, every event that was in
//! the file before is still there unchanged, the file before is a byte
//! prefix of the file after, and reopening gives the same surface.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;

use abridge_compact::CompactionMethod;
use abridge_compact::ErrorKind;
use abridge_compact::MethodError;
use abridge_compact::Policy;
use abridge_compact::Trigger;
use abridge_compact::host::CompactError;
use abridge_compact::host::MeterCounter;
use abridge_import as import;
use abridge_llm::Catalog;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::Session;

const SAMPLES: &[&str] = &[
    "pi-mono__large-session.jsonl",
    "claude-code__spotter__4d5611e5.jsonl",
    "codex__localpush__rollout-2026-02-23T12-54-34-redacted.jsonl",
    "swe-agent__marshmallow-1867__function_calling_replace_from_source.traj",
];

/// A vision model, so snapcompact is available.
const MODEL: &str = "claude-sonnet-4-5";

use abridge_test_support::samples::sample;

fn open(path: &Path) -> Session {
    let store = JsonlStore::open(path, JsonlOptions::default()).unwrap();
    Session::open(Box::new(store)).unwrap().0
}

/// The sources every model-free method is built from: the test's model
/// and nothing else configured.
fn sources() -> abridge::MethodSources {
    abridge::MethodSources::offline(MODEL)
}

/// `name` as the registry builds it from default settings.
fn method(name: &str) -> Arc<dyn CompactionMethod> {
    let settings = abridge::Settings::default();
    let context = abridge::MethodContext {
        settings: &settings,
        sources: &sources(),
    };
    abridge::MethodRegistry::builtin()
        .build_one(name, context)
        .unwrap()
}

/// Declining is allowed; anything else is a failure of the method.
fn declined(error: &CompactError) -> bool {
    matches!(
        error.method_error(),
        Some(
            MethodError::NothingToCompact { .. }
                | MethodError::NotSmaller { .. }
                | MethodError::Unavailable { .. }
        )
    ) || matches!(error, CompactError::AllFailed { failures } if failures.iter().all(|f| {
        matches!(f.kind, ErrorKind::NothingToCompact | ErrorKind::NotSmaller) || f.kind.is_skip()
    }))
}

fn run_one(sample_name: &str, method_name: &str) -> Option<(u64, u64)> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let store = JsonlStore::open(&path, JsonlOptions::default()).unwrap();
    import::read(&sample(sample_name), None)
        .unwrap()
        .into_session(Box::new(store))
        .unwrap();
    let before_bytes = std::fs::read(&path).unwrap();
    let mut session = open(&path);
    let before_events = session.events().to_vec();
    let before_violations = abridge_compact::check::check_invariants(&session)
        .violations
        .len();

    let entry = Catalog::builtin().lookup(MODEL).entry;
    let policy =
        Policy::new(Arc::new(MeterCounter::for_model(&entry))).with_keep_recent_tokens(4_000);
    let method = method(method_name);
    let result = futures::executor::block_on(abridge_compact::compact_session(
        &mut session,
        &method,
        &policy,
        Trigger::Manual,
    ));
    let figures = match &result {
        Ok(outcome) => {
            assert!(
                outcome.tokens_after < outcome.tokens_before,
                "{sample_name} / {method_name}: landed without shrinking ({} -> {})",
                outcome.tokens_before,
                outcome.tokens_after
            );
            Some((outcome.tokens_before, outcome.tokens_after))
        }
        Err(error) => {
            assert!(
                declined(error),
                "{sample_name} / {method_name}: failed: {error}"
            );
            None
        }
    };

    let label = format!("{sample_name} / {method_name}");
    let report = abridge_compact::check::check_invariants(&session);
    assert!(
        report.violations.len() <= before_violations,
        "{label}: new invariant violations: {:?}",
        report.violations
    );
    for event in &before_events {
        assert_eq!(
            session.event(event.seq),
            Some(event),
            "{label}: event {} changed",
            event.seq
        );
    }
    let surface = session.surface().clone();
    let messages = session.surface_messages();
    drop(session);
    assert!(
        std::fs::read(&path).unwrap().starts_with(&before_bytes),
        "{label}: the file was rewritten, not appended to"
    );
    let reopened = open(&path);
    assert_eq!(
        reopened.surface(),
        &surface,
        "{label}: reopened surface differs"
    );
    assert_eq!(
        reopened.surface_messages(),
        messages,
        "{label}: reopened messages differ"
    );
    assert_eq!(reopened.fold_full(), surface, "{label}: full fold differs");
    figures
}

fn every_sample(method_name: &str) -> usize {
    SAMPLES
        .iter()
        .filter_map(|sample| run_one(sample, method_name))
        .count()
}

#[test]
fn digest_lands_on_every_sample() {
    assert_eq!(every_sample("digest"), SAMPLES.len());
}

#[test]
fn snapcompact_lands_where_frames_are_cheaper() {
    // Frames only pay off on long histories; the two largest must land.
    assert!(run_one("pi-mono__large-session.jsonl", "snapcompact").is_some());
    assert!(run_one("claude-code__spotter__4d5611e5.jsonl", "snapcompact").is_some());
    every_sample("snapcompact");
}

#[test]
fn prune_reclaims_on_the_pi_session() {
    let (before, after) = run_one("pi-mono__large-session.jsonl", "prune").expect("prune lands");
    assert!(
        after * 10 < before * 9,
        "prune saved under 10%: {before} -> {after}"
    );
    every_sample("prune");
}

/// mask lands where old observations are worth a placeholder (the pi and
/// Claude Code sessions) and keeps every sample valid; it declines on the
/// Codex sample, whose results are redacted to under 50 tokens each.
#[test]
fn mask_lands_where_observations_are_large_and_keeps_every_sample_valid() {
    assert!(run_one("pi-mono__large-session.jsonl", "mask").is_some());
    assert!(run_one("claude-code__spotter__4d5611e5.jsonl", "mask").is_some());
    assert!(
        run_one(
            "codex__localpush__rollout-2026-02-23T12-54-34-redacted.jsonl",
            "mask"
        )
        .is_none()
    );
    every_sample("mask");
}

/// Methods with their own test above.
const COVERED_ABOVE: &[&str] = &["digest", "snapcompact", "prune", "mask"];

/// Every other registered method that builds without a model (today
/// shake and trim; a new one joins by being registered) runs on every
/// sample; the ones that need a model are the ones that say they call one.
#[test]
fn every_other_registered_method_keeps_every_sample_valid() {
    let registry = abridge::MethodRegistry::builtin();
    let settings = abridge::Settings::default();
    let sources = sources();
    let context = abridge::MethodContext {
        settings: &settings,
        sources: &sources,
    };
    let mut ran = Vec::new();
    for name in registry.names() {
        match registry.build_one(name, context) {
            Ok(method) => {
                assert!(!method.capabilities().calls_model(), "{name}");
                if !COVERED_ABOVE.contains(&name) {
                    every_sample(name);
                    ran.push(name);
                }
            }
            Err(reason) => assert!(reason.contains("configured"), "{name}: {reason}"),
        }
    }
    assert!(ran.contains(&"shake") && ran.contains(&"trim"), "{ran:?}");
}
