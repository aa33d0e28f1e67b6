//! Benchmarks for a whole session's upkeep: the 38k-entry synthetic
//! session (the one the active-path bench uses) replayed turn by turn
//! under a 64k window with the model-free chain, through `Harness` and
//! through the loop a host without a meter would write instead.
//!
//! The harness counts each message once with the model's tokenizer and
//! keeps a running total, so its check after a turn costs the new
//! messages only. The plain loop recounts the whole surface after every
//! turn and, above the threshold, compacts with the same methods through
//! `compact_session`. It recounts with bytes/4, as the maintenance bench's
//! alternative does; a second plain loop recounts with o200k, the same
//! figure the harness acts on, so the two decide alike.
//!
//! Each replay runs in its own child process (`xtask bench-child
//! simulate VARIANT`): `VmHWM` only grows, so a peak read after a second
//! replay in the same process would still be the first one's.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use abridge::Harness;
use abridge::Limits;
use abridge::MethodSources;
use abridge::Settings;
use abridge_compact::EstimateCounter;
use abridge_compact::Policy;
use abridge_compact::TokenCounter;
use abridge_compact::Trigger;
use abridge_compact::compact_session;
use abridge_llm::Catalog;
use abridge_llm::Message;
use abridge_llm::Role;
use abridge_meter::CostModel;
use abridge_session::Session;
use anyhow::Context;

use super::Section;
use super::fmt_duration;

/// The window every replay runs under.
const WINDOW: u64 = 65_536;

/// The model the session is measured for (o200k; its own window is
/// overridden by [`WINDOW`]).
const MODEL: &str = "gpt-4o";

/// The default method order without the methods that call a model
/// (remote, handoff, soft) and without snapcompact, which draws frames
/// for a vision model and has its own bench.
const METHODS: &[&str] = &["prune", "shake", "digest"];

/// The replays, as named on the child's command line.
const VARIANTS: &[(&str, &str)] = &[
    ("harness", "`Harness`: append, then `after_turn()`"),
    (
        "recount-bytes",
        "plain loop: recount the surface (bytes/4) each turn",
    ),
    (
        "recount-o200k",
        "plain loop: recount the surface (o200k) each turn",
    ),
];

fn settings() -> Settings {
    Settings {
        method_order: METHODS.iter().map(|m| (*m).to_string()).collect(),
        ..Settings::default()
    }
}

/// What one replay reports, printed by the child as JSON.
#[derive(Debug, Default)]
struct Figures {
    turns: usize,
    messages: usize,
    /// The whole replay: appends, checks and compactions.
    took: Duration,
    /// The part spent in turns that compacted.
    compacting: Duration,
    /// Turns after which something landed.
    compactions: usize,
    /// Landed attempts by method.
    landed: BTreeMap<String, usize>,
    /// Turns above the threshold whose compaction did not reach the goal.
    short: usize,
    /// The figure the replay acts on, after the last turn.
    final_tokens: u64,
    /// Resident memory before the replay (the source messages loaded).
    rss_before: u64,
    /// `VmHWM` after the replay.
    peak: u64,
}

impl Figures {
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "turns": self.turns,
            "messages": self.messages,
            "took_ns": self.took.as_nanos() as u64,
            "compacting_ns": self.compacting.as_nanos() as u64,
            "compactions": self.compactions,
            "landed": self.landed,
            "short": self.short,
            "final_tokens": self.final_tokens,
            "rss_before": self.rss_before,
            "peak": self.peak,
        })
    }

    fn from_json(value: &serde_json::Value) -> anyhow::Result<Self> {
        let number = |key: &str| {
            value[key]
                .as_u64()
                .with_context(|| format!("bench child gave no {key}: {value}"))
        };
        let landed = value["landed"]
            .as_object()
            .context("bench child gave no landed counts")?
            .iter()
            .map(|(method, n)| (method.clone(), n.as_u64().unwrap_or(0) as usize))
            .collect();
        Ok(Figures {
            turns: number("turns")? as usize,
            messages: number("messages")? as usize,
            took: Duration::from_nanos(number("took_ns")?),
            compacting: Duration::from_nanos(number("compacting_ns")?),
            compactions: number("compactions")? as usize,
            landed,
            short: number("short")? as usize,
            final_tokens: number("final_tokens")?,
            rss_before: number("rss_before")?,
            peak: number("peak")?,
        })
    }

    /// Records one turn's compaction: the time it took and what landed.
    fn compacted(&mut self, took: Duration, landed: &[String], reached: bool) {
        if !landed.is_empty() {
            self.compactions += 1;
            self.compacting += took;
        }
        for method in landed {
            *self.landed.entry(method.clone()).or_default() += 1;
        }
        if !reached {
            self.short += 1;
        }
    }
}

/// `bench-child simulate VARIANT`: replays the 38k-entry session with one
/// variant and prints its figures as JSON.
pub(crate) fn child(args: &[String]) -> anyhow::Result<()> {
    let variant = args.first().context("simulate needs a variant")?;
    let turns = turns()?;
    let limits = settings().limits(WINDOW)?;
    let mut figures = Figures {
        turns: turns.len(),
        messages: turns.iter().map(Vec::len).sum(),
        rss_before: super::rss_bytes().context("no /proc/self/status")?,
        ..Figures::default()
    };
    let started = Instant::now();
    match variant.as_str() {
        "harness" => harness(turns, &mut figures)?,
        "recount-bytes" => plain_loop(turns, Recount::Bytes, &limits, &mut figures)?,
        "recount-o200k" => {
            let entry = Catalog::builtin().lookup(MODEL).entry;
            let recount = Recount::Tokens(CostModel::for_model(&entry));
            plain_loop(turns, recount, &limits, &mut figures)?;
        }
        other => anyhow::bail!("unknown simulate variant {other:?}"),
    }
    figures.took = started.elapsed();
    figures.peak = super::peak_rss_bytes().context("no /proc/self/status")?;
    println!("{}", figures.to_json());
    Ok(())
}

/// The 38k-entry session's active path as turns: each starts at a user
/// message and runs to the next. The source session is dropped first, so
/// the messages are all that is resident when the replay starts.
fn turns() -> anyhow::Result<Vec<Vec<Message>>> {
    let messages = super::session::entries_38k()?.surface_messages();
    let mut turns: Vec<Vec<Message>> = Vec::new();
    for message in messages {
        let message = Arc::unwrap_or_clone(message);
        match turns.last_mut() {
            Some(turn) if message.role != Role::User => turn.push(message),
            _ => turns.push(vec![message]),
        }
    }
    Ok(turns)
}

/// What a host using abridge writes: append the turn, then `after_turn`.
fn harness(turns: Vec<Vec<Message>>, figures: &mut Figures) -> anyhow::Result<()> {
    let harness = Harness::builder(Session::in_memory("bench-simulate"), MODEL)
        .settings(settings())
        .window(WINDOW)
        .build()?;
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    for turn in turns {
        for message in turn {
            harness.append(message)?;
        }
        let started = Instant::now();
        let pass = runtime.block_on(harness.after_turn())?;
        let took = started.elapsed();
        if pass.status != abridge::PassStatus::NotNeeded {
            let landed: Vec<String> = pass.outcomes.iter().map(|o| o.method.clone()).collect();
            figures.compacted(took, &landed, pass.tokens_after <= pass.goal);
        }
    }
    figures.final_tokens = harness.tokens();
    Ok(())
}

/// A counter with no cache: every call counts the message again, so
/// `context_tokens` is a recount of the whole surface.
#[derive(Debug)]
enum Recount {
    /// Content bytes / 4 plus the per-message overhead.
    Bytes,
    /// The model's tokenizer and message overheads, as the meter counts.
    Tokens(CostModel),
}

impl TokenCounter for Recount {
    fn message_tokens(&self, message: &Message) -> u64 {
        match self {
            Recount::Bytes => EstimateCounter::estimate(message),
            Recount::Tokens(cost) => cost.message(message),
        }
    }
}

/// What a host without a meter writes: append the turn, recount the
/// surface, and above the threshold try each method in turn until the
/// recount is at or below the target.
fn plain_loop(
    turns: Vec<Vec<Message>>,
    recount: Recount,
    limits: &Limits,
    figures: &mut Figures,
) -> anyhow::Result<()> {
    let recount = Arc::new(recount);
    let policy = Policy::new(recount.clone()).with_keep_recent_tokens(limits.keep);
    let (methods, skipped) = abridge::build_methods(&settings(), &MethodSources::offline(MODEL));
    anyhow::ensure!(skipped.is_empty(), "methods not built: {skipped:?}");
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let mut session = Session::in_memory("bench-simulate-plain");
    for turn in turns {
        for message in turn {
            session.append_message(message)?;
        }
        if recount.context_tokens(&session) <= limits.threshold {
            continue;
        }
        let started = Instant::now();
        let mut landed = Vec::new();
        let mut reached = false;
        for method in &methods {
            let result = runtime.block_on(compact_session(
                &mut session,
                method.as_ref(),
                &policy,
                Trigger::Threshold,
            ));
            if let Ok(outcome) = result {
                landed.push(outcome.method);
            }
            if recount.context_tokens(&session) <= limits.target {
                reached = true;
                break;
            }
        }
        figures.compacted(started.elapsed(), &landed, reached);
    }
    figures.final_tokens = recount.context_tokens(&session);
    Ok(())
}

/// Runs the section: each variant once, in its own process.
pub(crate) fn run() -> anyhow::Result<Vec<Section>> {
    let limits = settings().limits(WINDOW)?;
    let load_before = load_average();
    let mut results = Vec::new();
    for (name, label) in VARIANTS {
        let text = super::run_child(&["simulate".as_ref(), name.as_ref()])?;
        let value: serde_json::Value = serde_json::from_str(text.trim())
            .with_context(|| format!("bench child said {text:?}"))?;
        results.push((*label, Figures::from_json(&value)?));
    }
    let ours = &results[0].1;
    let mut section = Section::new(
        "Simulate: a 38k-entry session under a 64k window",
        &format!(
            "The 38k-entry session of the active-path bench ({} turns, {} messages on its active path) replayed turn by turn into an empty in-memory session for {MODEL} under a {WINDOW}-token window (threshold {}, target {}, keep {}), with the model-free chain `{}`. `Harness` appends each turn and calls `after_turn()`; the plain loops append each turn, recount the whole surface, and above the threshold run `compact_session` with each method in turn until the recount is at or below the target. Each replay runs once, in its own process (`xtask bench-child simulate VARIANT`); peak memory is that process's VmHWM, and growth is VmHWM minus VmRSS before the replay (the messages to replay already loaded).",
            ours.turns,
            ours.messages,
            limits.threshold,
            limits.target,
            limits.keep,
            METHODS.join(", "),
        ),
        &[
            "replay",
            "wall time",
            "vs harness",
            "outside compaction",
            "compacting turns",
            "compactions",
            "landed",
            "short of target",
            "final tokens",
            "peak memory",
            "growth",
        ],
    );
    for (label, figures) in &results {
        let landed: Vec<String> = figures
            .landed
            .iter()
            .map(|(method, n)| format!("{method} {n}"))
            .collect();
        section.row(vec![
            (*label).to_string(),
            fmt_duration(figures.took),
            format!(
                "{:.2}x",
                figures.took.as_secs_f64() / ours.took.as_secs_f64().max(1e-9)
            ),
            fmt_duration(figures.took.saturating_sub(figures.compacting)),
            fmt_duration(figures.compacting),
            figures.compactions.to_string(),
            landed.join(", "),
            figures.short.to_string(),
            figures.final_tokens.to_string(),
            format!("{:.0} MB", figures.peak as f64 / 1e6),
            format!(
                "{:.0} MB",
                figures.peak.saturating_sub(figures.rss_before) as f64 / 1e6
            ),
        ]);
    }
    section.note(
        "`vs harness` is a replay's wall time over the harness's (above 1x: slower than the harness). `outside compaction` is the time of the turns that did not compact: appends and the check. `compacting turns` is the time of the turns that did, check included. Token figures are each replay's own: bytes/4 for the first plain loop; o200k for the others, where the harness's meter leaves out earlier turns' thinking (gpt-4o drops it) and the recount counts every block, so the plain loops' compactions fire at other points.",
    );
    if results
        .iter()
        .all(|(_, f)| f.landed.keys().all(|m| m == "digest"))
    {
        section.note(
            "Only digest landed: prune leaves the newest 40000 tokens of tool output alone and wants a saving of at least 20000, which a 64k window never offers; shake's automatic preset moves results over 4000 tokens, and this session's results are 1-8 KB. prune and shake are still tried before each digest, as the chain says, in every replay.",
        );
    }
    section.note(format!(
        "The 1-minute load average on this machine's {} cores was {} when the replays started (a build just before counts in it) and {} when they ended. Each wall time is one run: other work on the machine slows it, and the ratios less.",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_before,
        load_average(),
    ));
    Ok(vec![section])
}

/// The 1-minute load average, as `/proc/loadavg` gives it.
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string())
}
