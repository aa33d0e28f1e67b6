//! Benchmarks for the composition room: `Harness::after_turn` when nothing
//! needs doing, on a session of 1M events (the target is under 5 µs
//! median: a host calls it after every model step), against a loop that
//! recounts the whole surface each turn (what a host without a meter
//! would write), in the same run.

use std::time::Duration;
use std::time::Instant;

use abridge::Harness;
use abridge::PassStatus;
use abridge::Settings;
use abridge_llm::Message;
use abridge_meter::EstimateCounter;
use abridge_session::Session;

use super::Section;
use super::fmt_duration;

/// Events in the session.
const EVENTS: usize = 1_000_000;

/// Runs the section.
pub(crate) fn run() -> anyhow::Result<Vec<Section>> {
    let mut session = Session::in_memory("bench-maintenance");
    for i in 0..EVENTS / 2 {
        session.append_message(Message::user(format!("q{i}")))?;
        session.append_message(Message::assistant(format!("a{i}")))?;
    }
    let settings = Settings {
        method_order: vec!["digest".into()],
        ..Settings::default()
    };
    // A window the session never fills: every call finds nothing to do.
    let harness = Harness::builder(session, "gpt-4o")
        .settings(settings)
        .window(100_000_000)
        .build()?;
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    // First measure: the meter folds the whole surface once.
    let cold = Instant::now();
    let first = runtime.block_on(harness.after_turn())?;
    let cold = cold.elapsed();
    anyhow::ensure!(first.status == PassStatus::NotNeeded, "{first:?}");

    let mut samples = Vec::new();
    for i in 0..2_000 {
        harness.append(Message::user(format!("more {i}")))?;
        let start = Instant::now();
        let pass = runtime.block_on(harness.after_turn())?;
        samples.push(start.elapsed());
        anyhow::ensure!(pass.status == PassStatus::NotNeeded);
    }
    samples.sort();
    let median = samples[samples.len() / 2];
    let p99 = samples[samples.len() * 99 / 100];

    // The alternative: recount every surface message each turn (bytes/4).
    let recount = {
        let session = abridge_compact::lock_session(harness.session());
        let start = Instant::now();
        let mut total = 0u64;
        for seq in session.surface().seqs() {
            if let Some(m) = session.message(*seq) {
                total += EstimateCounter::estimate(m);
            }
        }
        std::hint::black_box(total);
        start.elapsed()
    };
    let met = median < Duration::from_micros(5);
    let mut section = Section::new(
        "Maintenance: after_turn with nothing to do (1M events)",
        "`Harness::after_turn()` after one append, on an in-memory session of 1,000,000 messages whose window is never filled; the alternative is recounting the surface with bytes/4 each turn.",
        &["measure", "time", "target"],
    );
    section.row(vec![
        "after_turn, median of 2,000".into(),
        fmt_duration(median),
        format!("< 5 µs ({})", if met { "met" } else { "missed" }),
    ]);
    section.row(vec![
        "after_turn, p99".into(),
        fmt_duration(p99),
        String::new(),
    ]);
    section.row(vec![
        "first after_turn (meter folds the surface once)".into(),
        fmt_duration(cold),
        String::new(),
    ]);
    section.row(vec![
        "recount of the surface, bytes/4 (alternative)".into(),
        fmt_duration(recount),
        format!(
            "{:.0}x slower",
            recount.as_secs_f64() / median.as_secs_f64().max(1e-9)
        ),
    ]);
    Ok(vec![section])
}
