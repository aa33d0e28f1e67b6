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
        let session = abridge_compact::host::lock_session(harness.session());
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
    Ok(vec![section, speculation(&runtime)?])
}

/// A model-backed method (by name) that answers at once: the bench times
/// the commit, not the model.
#[derive(Debug)]
struct Instant0;

#[async_trait::async_trait]
impl abridge_compact::CompactionMethod for Instant0 {
    fn name(&self) -> &str {
        "soft"
    }

    async fn run(
        &self,
        plan: &abridge_compact::Plan,
    ) -> Result<abridge_compact::MethodOutput, abridge_compact::MethodError> {
        let text = format!("summary of {} messages", plan.span().len());
        Ok(abridge_compact::MethodOutput::Checkpoint(
            abridge_compact::Checkpoint::new(text).with_short_summary("summary"),
        ))
    }
}

/// One speculative commit on a session of `messages` messages: the pass
/// at the threshold that commits a finished speculation.
fn commit_once(runtime: &tokio::runtime::Runtime, messages: usize) -> anyhow::Result<Duration> {
    let mut session = Session::in_memory("bench-speculation");
    for i in 0..messages / 2 {
        session.append_message(Message::user(format!("question {i} about the parser")))?;
        session.append_message(Message::assistant(format!(
            "answer {i}: changed parse_list"
        )))?;
    }
    let shared = std::sync::Arc::new(std::sync::Mutex::new(session));
    let entry = abridge_llm::Catalog::builtin().lookup("gpt-4o").entry;
    let counter = std::sync::Arc::new(abridge_compact::host::MeterCounter::for_model(&entry));
    let tokens = abridge_compact::TokenCounter::context_tokens(
        counter.as_ref(),
        &abridge_compact::host::lock_session(&shared),
    );
    // The threshold just above the context: inside a 10% band now, over
    // it after one more message.
    let threshold = tokens + 20;
    let limits = abridge::Limits {
        window: threshold * 2,
        threshold,
        reserve: threshold,
        keep: threshold / 10,
        target: threshold * 8 / 10,
        min_reclaim: 0,
    };
    let maintenance = abridge::Maintenance::new(
        vec![std::sync::Arc::new(Instant0)],
        abridge_compact::Policy::new(counter),
        limits,
    )
    .with_speculation(threshold / 10);
    runtime.block_on(async {
        let pass = maintenance
            .run(&shared, abridge_compact::Trigger::Threshold)
            .await?;
        anyhow::ensure!(pass.status == PassStatus::NotNeeded, "{pass:?}");
        while !maintenance.speculation_ready() {
            tokio::task::yield_now().await;
        }
        abridge_compact::host::lock_session(&shared)
            .append_message(Message::user("one more request ".repeat(20)))?;
        let start = Instant::now();
        let pass = maintenance
            .run(&shared, abridge_compact::Trigger::Threshold)
            .await?;
        let took = start.elapsed();
        anyhow::ensure!(pass.status == PassStatus::Succeeded, "{pass:?}");
        Ok(took)
    })
}

/// The speculative commit section.
fn speculation(runtime: &tokio::runtime::Runtime) -> anyhow::Result<Section> {
    let mut section = Section::new(
        "Maintenance: committing a speculative checkpoint",
        "A model-backed method started in the band below the threshold has finished; the threshold pass then plans that span and commits its output (no model call). Timed from the pass's start to its end, 25 runs per size, on in-memory sessions of short messages. This is the cost only when the speculation finished in time: a pass that reaches the method while it is still running waits for the rest of the call (how often that happens, and how long it waits, is the section \"Foreground wait at the threshold\"). The alternative is waiting for the summary call itself: seconds (14 s for a 1,800-token prompt to SmolLM2-135M on this machine; typically 5-30 s for a hosted model on a 100k-token span).",
        &["session", "median", "p95", "target"],
    );
    for messages in [2_000usize, 20_000] {
        let mut samples = Vec::new();
        for _ in 0..25 {
            samples.push(commit_once(runtime, messages)?);
        }
        samples.sort();
        let median = samples[samples.len() / 2];
        let p95 = samples[samples.len() * 95 / 100];
        let met = median < Duration::from_millis(1);
        section.row(vec![
            format!("{messages} messages"),
            fmt_duration(median),
            fmt_duration(p95),
            format!("< 1 ms ({})", if met { "met" } else { "missed" }),
        ]);
    }
    Ok(section)
}
