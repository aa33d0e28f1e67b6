//! The prune pass's report and the method's "nothing to do" reason, at the
//! edges the older tests left open.

use std::time::Duration;

use abridge_compact::CompactionMethod;
use abridge_compact::EstimateCounter;
use abridge_compact::MethodError;
use abridge_compact::Policy;
use serde_json::json;

use crate::testkit::Builder;
use abridge_prune::*;

fn pass(b: &Builder, config: &PruneConfig, context: &PassContext) -> Reclaim {
    let counter = EstimateCounter::new();
    prune(
        &Snapshot::of_session(&b.session, &counter),
        config,
        context,
        &counter,
    )
}

/// A per-turn pass with a warm cache: nothing more than 100 tokens from
/// the end may be rewritten.
fn warm() -> PassContext {
    PassContext::per_turn(
        Some(Duration::from_secs(10)),
        Some(Duration::from_secs(300)),
    )
}

#[test]
fn the_report_counts_the_whole_surface() {
    let mut b = Builder::new();
    b.output(100);
    b.output(100);
    let reclaim = pass(&b, &PruneConfig::default(), &PassContext::compaction());
    assert!(reclaim.report.surface_tokens > 200, "{:?}", reclaim.report);
}

#[test]
fn every_pass_reports_the_surface_it_looked_at() {
    let mut b = Builder::new();
    b.output(100);
    b.output(100);
    let counter = EstimateCounter::new();
    let snapshot = Snapshot::of_session(&b.session, &counter);
    let context = PassContext::compaction();
    let reports = [
        (
            "mask",
            mask(&snapshot, &MaskConfig::default(), &context, &counter).report,
        ),
        (
            "shake",
            shake(
                &snapshot,
                &ShakeConfig::preset(ShakePreset::Rescue),
                &context,
                &counter,
            )
            .report,
        ),
        (
            "trim",
            trim(&snapshot, &TrimConfig::default(), &context, &counter)
                .unwrap()
                .report,
        ),
    ];
    for (pass, report) in reports {
        assert!(report.surface_tokens > 200, "{pass}: {report:?}");
    }
}

#[test]
fn a_useless_result_held_by_a_warm_cache_is_counted_as_held() {
    let mut b = Builder::new();
    b.call_with(
        "grep",
        json!({}),
        &"nothing found\n".repeat(10),
        false,
        true,
    );
    b.output(400);
    let config = PruneConfig {
        old_outputs: false,
        cache_tail_tokens: 100,
        ..PruneConfig::default()
    };
    let held = pass(&b, &config, &warm());
    assert!(held.is_empty());
    assert_eq!(held.report.held_for_cache, 1);
}

#[test]
fn old_outputs_held_by_a_warm_cache_are_counted_as_held() {
    let mut b = Builder::new();
    b.output(300);
    b.output(300);
    b.output(300);
    let config = PruneConfig {
        protect_tokens: 0,
        min_saving_tokens: 0,
        cache_tail_tokens: 100,
        superseded: false,
        useless: false,
        ..PruneConfig::default()
    };
    let held = pass(&b, &config, &warm());
    // The newest is within the tail; the two before it are held.
    assert_eq!(held.report.held_for_cache, 2, "{:?}", held.report);
}

#[test]
fn outputs_newer_than_the_protected_budget_shield_the_older_ones() {
    let mut b = Builder::new();
    let oldest = b.output(300);
    b.output(300);
    b.output(300);
    let config = PruneConfig {
        protect_tokens: 500,
        min_saving_tokens: 0,
        superseded: false,
        useless: false,
        ..PruneConfig::default()
    };
    let reclaim = pass(&b, &config, &PassContext::compaction());
    let pruned: Vec<_> = reclaim.report.rewrites.iter().map(|r| r.target).collect();
    // 600 tokens newer than the oldest pass the budget of 500; the middle
    // one straddles it and is kept whole.
    assert_eq!(pruned, vec![oldest]);
}

fn run_method(
    b: &Builder,
    config: PruneConfig,
) -> Result<abridge_compact::MethodOutput, MethodError> {
    let policy = Policy::default().with_keep_recent_tokens(0);
    let plan = abridge_compact::host::plan(&b.session, &policy).expect("a plan");
    futures::executor::block_on(PruneMethod::new(config).run(&plan))
}

#[test]
fn nothing_to_prune_says_so_without_a_saving_figure_when_none_was_held_back() {
    let mut b = Builder::new();
    b.say("just words");
    b.say("more words");
    match run_method(&b, PruneConfig::default()) {
        Err(MethodError::NothingToCompact { reason }) => {
            assert_eq!(reason, "prune found no tool output to reclaim");
        }
        other => panic!("expected NothingToCompact, got {other:?}"),
    }
}

#[test]
fn a_snapshot_from_entries_keeps_them_and_counts_each() {
    let long = abridge_llm::Message::user("word ".repeat(100));
    let short = abridge_llm::Message::user("hi");
    let counter = EstimateCounter::new();
    let snapshot = Snapshot::from_entries(
        vec![(3, long.clone().into()), (5, short.clone().into())],
        &counter,
    );
    let seqs: Vec<_> = snapshot.entries().iter().map(|(seq, _)| *seq).collect();
    assert_eq!(seqs, vec![3, 5]);
    use abridge_compact::TokenCounter;
    assert_eq!(
        snapshot.costs(),
        &[
            counter.message_tokens(&long),
            counter.message_tokens(&short)
        ]
    );
}
