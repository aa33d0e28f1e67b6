//! The four methods through the seam: what each rewrites, pairing kept,
//! and an attempt that finds nothing writes nothing.

/// The names of this crate's methods, as `--method` accepts them.
const METHOD_NAMES: [&str; 4] = ["prune", "mask", "shake", "trim"];

use abridge_compact::MethodError;
use abridge_compact::Policy;
use abridge_compact::check::check_invariants;
use abridge_compact::compact_session;
use abridge_compact::host::CompactError;
use serde_json::json;

use std::sync::Arc;

use crate::testkit::Builder;
use crate::testkit::check_pairing;
use crate::testkit::result_text;
use abridge_compact::CompactionMethod;
use abridge_compact::Trigger;
use abridge_prune::*;

fn compact(
    b: &mut Builder,
    method: &dyn CompactionMethod,
    trigger: Trigger,
) -> Result<abridge_compact::Outcome, CompactError> {
    let policy = Policy::default().with_keep_recent_tokens(100);
    futures::executor::block_on(compact_session(&mut b.session, method, &policy, trigger))
}

#[test]
fn an_attempt_that_finds_nothing_writes_nothing_to_the_log() {
    let mut b = Builder::new();
    for _ in 0..6 {
        b.say(&"plain words with no tool output ".repeat(20));
    }
    let before = b.session.len();
    for name in METHOD_NAMES {
        let method = loose().method(name).expect("a name of this crate").unwrap();
        let error = compact(&mut b, method.as_ref(), Trigger::Threshold).unwrap_err();
        assert!(
            matches!(
                error.method_error(),
                Some(MethodError::NothingToCompact { .. })
            ),
            "{name}: {error:?}"
        );
        assert_eq!(
            b.session.len(),
            before,
            "{name} wrote events for an attempt that found nothing"
        );
    }
}

fn loose() -> ReclaimConfig {
    ReclaimConfig {
        prune: PruneConfig {
            protect_tokens: 200,
            min_saving_tokens: 0,
            ..PruneConfig::default()
        },
        ..ReclaimConfig::default()
    }
}

#[test]
fn every_name_builds_its_method() {
    for name in METHOD_NAMES {
        let method = loose().method(name).unwrap().unwrap();
        assert_eq!(method.name(), name);
    }
    assert!(loose().method("soft").is_none());
    let bad = ReclaimConfig {
        trim: TrimConfig {
            max_chars: 10,
            ..TrimConfig::default()
        },
        ..ReclaimConfig::default()
    };
    assert!(matches!(
        bad.method("trim"),
        Some(Err(PruneError::Config { .. }))
    ));
}

#[test]
fn prune_commits_rewrites_through_the_transaction() {
    let mut b = Builder::new();
    let old: Vec<_> = (0..4).map(|_| b.output(300)).collect();
    b.say("next");
    let method = loose().method("prune").unwrap().unwrap();
    let outcome = compact(&mut b, &*method, Trigger::Manual).unwrap();
    assert!(outcome.tokens_after < outcome.tokens_before);
    assert!(check_invariants(&b.session).is_ok());
    assert_eq!(check_pairing(&b.session), ["c0", "c1", "c2", "c3"]);
    // Only the newest result lies within the 200 protected tokens.
    let texts: Vec<bool> = b.session.surface().seqs()[1..]
        .iter()
        .filter(|s| b.session.message(**s).unwrap().role == abridge_llm::Role::Tool)
        .map(|s| is_placeholder(&result_text(&b.session, *s)))
        .collect();
    assert_eq!(texts, [true, true, true, false]);
    let _ = old;
}

#[test]
fn nothing_to_reclaim_falls_through_with_a_reason() {
    let mut b = Builder::new();
    for _ in 0..4 {
        b.output(300);
    }
    b.say("next");
    let method = Arc::new(PruneMethod::new(PruneConfig {
        protect_tokens: 0,
        ..PruneConfig::default()
    }));
    let error = compact(&mut b, &*method, Trigger::Manual).unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with(
            "nothing to compact: prune found no tool output \
             to reclaim (pruning would save only "
        ),
        "{text}"
    );
    assert!(check_invariants(&b.session).is_ok());
}

#[test]
fn shake_picks_its_preset_from_the_trigger() {
    assert_eq!(
        ShakeMethod::preset_for(Trigger::Overflow),
        ShakePreset::Rescue
    );
    assert_eq!(
        ShakeMethod::preset_for(Trigger::IncompleteOutput),
        ShakePreset::Rescue
    );
    assert_eq!(
        ShakeMethod::preset_for(Trigger::Manual),
        ShakePreset::Manual
    );
    assert_eq!(
        ShakeMethod::preset_for(Trigger::Threshold),
        ShakePreset::Automatic
    );
    let mut b = Builder::new();
    b.call(
        "bash",
        json!({"command": "make"}),
        &"build log\n".repeat(300),
    );
    for _ in 0..3 {
        b.output(1_000);
    }
    let method = Arc::new(ShakeMethod::new());
    let outcome = compact(&mut b, &*method, Trigger::Overflow).unwrap();
    assert!(outcome.tokens_after < outcome.tokens_before);
    assert!(check_invariants(&b.session).is_ok());
}

#[test]
fn trim_runs_as_a_method() {
    let mut b = Builder::new();
    b.call("bash", json!({}), &"z".repeat(20_000));
    b.say("next");
    let method = Arc::new(TrimMethod::new(TrimConfig::default()).unwrap());
    let outcome = compact(&mut b, &*method, Trigger::Manual).unwrap();
    assert!(outcome.tokens_after < outcome.tokens_before);
    assert!(check_invariants(&b.session).is_ok());
}
