//! Benchmarks for the compaction seam: planning a compaction on a
//! 1M-token, 10k-event session, cold (nothing counted yet) and after one
//! append (counts cached by seq), with the bytes/4 estimate and with the
//! token meter (o200k); and a whole `digest` compaction.
//!
//! The alternative a user would write is to recount every message of the
//! surface before planning (no cache); the cold figure is that cost.

use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use abridge_compact::EstimateCounter;
use abridge_compact::Policy;
use abridge_compact::TokenCounter;
use abridge_compact::Trigger;
use abridge_compact::compact_session;
use abridge_compact::host::MeterCounter;
use abridge_compact::host::plan;
use abridge_compact_basic::DigestMethod;
use abridge_llm::Block;
use abridge_llm::Catalog;
use abridge_llm::Message;
use abridge_llm::Role;
use abridge_session::Session;
use anyhow::Context;

use super::Section;
use super::fmt_duration;
use super::median_time;

/// Events in the generated session.
const EVENTS: usize = 10_000;

/// A session of `EVENTS` messages in turns of four (request, tool call,
/// tool result, reply), about 100 estimated tokens per message on
/// average: 1M tokens in all.
fn generate() -> anyhow::Result<Session> {
    let mut session = Session::in_memory("bench-compact");
    for turn in 0..EVENTS / 4 {
        let id = format!("call-{turn}");
        session.append_message(Message::user(format!(
            "turn {turn}: please look at module {turn} and fix what is wrong. {}",
            "detail ".repeat(20)
        )))?;
        session.append_message(Message {
            role: Role::Assistant,
            content: vec![Block::ToolCall {
                id: id.clone(),
                name: "read".into(),
                arguments: serde_json::json!({ "path": format!("src/module_{turn}.rs") }),
            }],
            meta: Default::default(),
        })?;
        session.append_message(Message::tool_result(
            id,
            "fn body() { let x = compute(); }\n".repeat(36),
            false,
        ))?;
        session.append_message(Message::assistant(format!(
            "Module {turn} is fixed. {}",
            "note ".repeat(30)
        )))?;
    }
    Ok(session)
}

/// Median of `rounds` timings of planning right after appending one more
/// message, with `counter` warm.
fn after_append(session: &mut Session, policy: &Policy, rounds: usize) -> anyhow::Result<Duration> {
    plan(session, policy).context("nothing to plan")?;
    let mut samples = Vec::with_capacity(rounds);
    for i in 0..rounds {
        session.append_message(Message::user(format!("one more request {i}")))?;
        let start = Instant::now();
        std::hint::black_box(plan(session, policy));
        samples.push(start.elapsed());
    }
    samples.sort();
    Ok(samples[samples.len() / 2])
}

/// Runs this area's benchmarks; each returned section becomes a table.
pub(crate) fn run() -> anyhow::Result<Vec<Section>> {
    let mut session = generate()?;
    let tokens = EstimateCounter::new().context_tokens(&session);
    let mut section = Section::new(
        "Compaction planning",
        &format!(
            "`plan()` on a generated session of {} events and {} estimated tokens (keep_recent_tokens 20000). \
             Cold: a fresh counter, so every message is counted, which is what recounting the surface before each plan costs. \
             After one append: the counter's per-seq cache is warm; the median of 200 rounds of append-then-plan, timing the plan only.",
            session.len(),
            tokens
        ),
        &["counter", "cold", "after one append", "cold / after append"],
    );

    let cold_estimate = median_time(Duration::from_secs(2), || {
        let policy = Policy::new(Arc::new(EstimateCounter::new()));
        plan(&session, &policy)
    });
    let warm = Policy::new(Arc::new(EstimateCounter::new()));
    let warm_estimate = after_append(&mut session, &warm, 200)?;
    section.row(vec![
        "bytes/4 estimate".into(),
        fmt_duration(cold_estimate),
        fmt_duration(warm_estimate),
        format!(
            "{:.0}x",
            cold_estimate.as_secs_f64() / warm_estimate.as_secs_f64().max(1e-12)
        ),
    ]);

    let entry = Catalog::builtin().lookup("gpt-5").entry;
    let start = Instant::now();
    let meter_policy = Policy::new(Arc::new(MeterCounter::for_model(&entry)));
    std::hint::black_box(plan(&session, &meter_policy));
    let cold_meter = start.elapsed();
    let warm_meter = after_append(&mut session, &meter_policy, 200)?;
    section.row(vec![
        "token meter (o200k)".into(),
        fmt_duration(cold_meter),
        fmt_duration(warm_meter),
        format!(
            "{:.0}x",
            cold_meter.as_secs_f64() / warm_meter.as_secs_f64().max(1e-12)
        ),
    ]);
    let target = Duration::from_millis(1);
    let met = warm_estimate < target && warm_meter < target;
    section.note(format!(
        "Target: planning after one append under 1 ms: {}.",
        if met { "met" } else { "missed" }
    ));

    // A whole digest compaction (plan, begin, run, commit), on a copy.
    let mut copy = generate()?;
    let policy = Policy::new(Arc::new(EstimateCounter::new()));
    let start = Instant::now();
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let outcome = runtime.block_on(compact_session(
        &mut copy,
        &DigestMethod,
        &policy,
        Trigger::Manual,
    ))?;
    let whole = start.elapsed();
    section.note(format!(
        "A whole `digest` compaction of the same session (plan, begin, digest, commit, in memory): {}, {} -> {} tokens.",
        fmt_duration(whole),
        outcome.tokens_before,
        outcome.tokens_after
    ));
    Ok(vec![section])
}
