//! `abridge simulate`: replay a recorded session under a chosen window and
//! method chain, and report when compaction would fire and what the input
//! tokens would cost, against the same replay without compaction.
//!
//! The replay takes every `append` message on the source's active path, in
//! order (the source's own checkpoints and rewrites are skipped: the
//! simulation decides compactions itself). Usage reports are stripped from
//! the replayed messages: they describe the source's context, not the
//! simulated one, and would anchor the meter to a context that no longer
//! exists after a simulated compaction. Both runs therefore measure with
//! the model's own tokenizer estimate.
//!
//! When every method fails, the failure is recorded and the simulation
//! backs off until the context grows by another 5% of the window before
//! trying again, instead of retrying on every append.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use abridge_compact::CompactError;
use abridge_compact::MeterCounter;
use abridge_compact::Policy;
use abridge_compact::Trigger;
use abridge_llm::Role;
use abridge_session::EventBody;
use abridge_session::Session;
use abridge_session::SurfaceOp;
use serde::Serialize;

use crate::limits::BudgetArgs;
use crate::limits::Limits;
use crate::methods;
use crate::model;
use crate::open::open_session;

/// After a failed compaction, wait for this percentage of the window of
/// growth before trying again.
const BACKOFF_PERCENT: u64 = 5;

/// Arguments of `abridge simulate`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The abridge session file to replay (read only; never changed).
    session: PathBuf,
    #[command(flatten)]
    budget: BudgetArgs,
    /// Print the outcome as JSON.
    #[arg(long)]
    json: bool,
    /// Leave wall times out of the human output (for reproducible output).
    #[arg(long)]
    no_timings: bool,
    #[command(flatten)]
    llm: methods::LlmArgs,
}

/// One compaction that landed during the replay.
#[derive(Debug, Serialize)]
struct Compaction {
    /// Index (0-based) of the replayed message after which it fired.
    at_message: usize,
    method: String,
    tokens_before: u64,
    tokens_after: u64,
    /// Methods that failed before this one landed.
    failures: Vec<(String, String)>,
    millis: u128,
}

/// One attempt in which every method failed (or nothing could be cut).
#[derive(Debug, Serialize)]
struct Failure {
    at_message: usize,
    tokens: u64,
    failures: Vec<(String, String)>,
    millis: u128,
}

/// Figures for one run (simulated, or the baseline without compaction).
#[derive(Debug, Default, Serialize)]
struct Run {
    /// Sum over assistant turns of the prompt the model was sent.
    input_tokens_billed: u64,
    /// Largest context the model was sent.
    peak_context: u64,
    /// Assistant turns whose prompt exceeded the window.
    turns_over_window: usize,
    /// Context after the last message.
    final_context: u64,
}

impl Run {
    fn turn(&mut self, prompt: u64, window: u64) {
        self.input_tokens_billed += prompt;
        self.peak_context = self.peak_context.max(prompt);
        if prompt > window {
            self.turns_over_window += 1;
        }
    }
}

#[derive(Debug, Serialize)]
struct Report {
    session: String,
    model: String,
    window: u64,
    threshold: u64,
    keep: u64,
    methods: Vec<String>,
    messages: usize,
    assistant_turns: usize,
    compaction_count: usize,
    /// Each landed compaction breaks the provider's prompt cache from its
    /// checkpoint on.
    cache_breaks: usize,
    compactions: Vec<Compaction>,
    failed_attempts: Vec<Failure>,
    simulated: Run,
    baseline: Run,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let (source, _) = open_session(&args.session, false)?;
    let (model_id, lookup) = model::resolve(&source, args.budget.model.as_deref());
    let Limits {
        window,
        threshold,
        keep,
    } = args.budget.limits(lookup.entry.context_window)?;
    // Artifacts (shake) stay in memory: a simulation writes nothing to disk.
    let methods = methods::build(
        &args.budget.method,
        &args.llm,
        methods::Artifacts::Memory,
        &model_id,
    )?;
    let messages = replayed_messages(&source);
    if messages.is_empty() {
        anyhow::bail!(
            "{}: no messages to replay on the active path",
            args.session.display()
        );
    }

    let message_count = messages.len();
    let counter = Arc::new(MeterCounter::for_model(&lookup.entry));
    let base_counter = MeterCounter::for_model(&lookup.entry);
    let policy = Policy::new(counter.clone()).with_keep_recent_tokens(keep);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut sim = Session::in_memory("simulate");
    let mut base = Session::in_memory("simulate-baseline");
    let mut simulated = Run::default();
    let mut baseline = Run::default();
    let mut compactions = Vec::new();
    let mut failed_attempts = Vec::new();
    let mut assistant_turns = 0;
    let mut sim_tokens = 0;
    let mut base_tokens = 0;
    // After a failure, no new attempt until the context reaches this.
    let mut retry_at = threshold;
    let backoff = (window * BACKOFF_PERCENT / 100).max(1);

    for (index, message) in messages.into_iter().enumerate() {
        if message.role == Role::Assistant {
            // The prompt of this turn is the context just before its answer.
            assistant_turns += 1;
            simulated.turn(sim_tokens, window);
            baseline.turn(base_tokens, window);
        }
        base.append_message(message.clone())?;
        base_tokens = base_counter.measure(&base).tokens;
        sim.append_message(message)?;
        sim_tokens = counter.measure(&sim).tokens;
        if sim_tokens < threshold.max(retry_at) {
            continue;
        }
        let started = Instant::now();
        let result = runtime.block_on(abridge_compact::compact_session(
            &mut sim,
            &methods,
            &policy,
            Trigger::Threshold,
        ));
        let millis = started.elapsed().as_millis();
        match result {
            Ok(outcome) => {
                sim_tokens = counter.measure(&sim).tokens;
                retry_at = threshold;
                compactions.push(Compaction {
                    at_message: index,
                    method: outcome.method,
                    tokens_before: outcome.tokens_before,
                    tokens_after: outcome.tokens_after,
                    failures: outcome.failures,
                    millis,
                });
            }
            Err(CompactError::AllFailed { failures }) => {
                retry_at = sim_tokens + backoff;
                failed_attempts.push(Failure {
                    at_message: index,
                    tokens: sim_tokens,
                    failures,
                    millis,
                });
            }
            Err(CompactError::NothingToCompact { reason }) => {
                retry_at = sim_tokens + backoff;
                failed_attempts.push(Failure {
                    at_message: index,
                    tokens: sim_tokens,
                    failures: vec![("plan".to_string(), reason)],
                    millis,
                });
            }
            Err(error) => return Err(error.into()),
        }
    }
    simulated.final_context = sim_tokens;
    baseline.final_context = base_tokens;

    let report = Report {
        session: args.session.display().to_string(),
        model: model_id,
        window,
        threshold,
        keep,
        methods: args.budget.method.clone(),
        messages: message_count,
        assistant_turns,
        compaction_count: compactions.len(),
        cache_breaks: compactions.len(),
        compactions,
        failed_attempts,
        simulated,
        baseline,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_human(&report, !args.no_timings);
    }
    Ok(())
}

/// The appended messages on the source's active path, in order, without
/// their usage reports.
fn replayed_messages(source: &Session) -> Vec<abridge_llm::Message> {
    source
        .active_path()
        .into_iter()
        .filter_map(|seq| match &source.event(seq)?.body {
            EventBody::Message(event) if event.op == SurfaceOp::Append => {
                let mut message = (*event.message).clone();
                message.meta.usage = None;
                Some(message)
            }
            _ => None,
        })
        .collect()
}

fn percent_less(before: u64, after: u64) -> f64 {
    100.0 * (1.0 - after as f64 / before.max(1) as f64)
}

fn print_human(report: &Report, timings: bool) {
    println!(
        "{}: {} messages, {} assistant turns; model {}, window {}, threshold {}, keep {}, methods {}",
        report.session,
        report.messages,
        report.assistant_turns,
        report.model,
        report.window,
        report.threshold,
        report.keep,
        report.methods.join(",")
    );
    if !report.compactions.is_empty() || !report.failed_attempts.is_empty() {
        let time = if timings {
            format!(" {:>8}", "ms")
        } else {
            String::new()
        };
        println!(
            "{:>7}  {:<12} {:>9} {:>9} {:>6}{time}",
            "message", "method", "before", "after", "less"
        );
    }
    for c in &report.compactions {
        let time = if timings {
            format!(" {:>8}", c.millis)
        } else {
            String::new()
        };
        println!(
            "{:>7}  {:<12} {:>9} {:>9} {:>5.1}%{time}",
            c.at_message,
            c.method,
            c.tokens_before,
            c.tokens_after,
            percent_less(c.tokens_before, c.tokens_after)
        );
        for (method, error) in &c.failures {
            println!("         {method} failed first: {error}");
        }
    }
    for f in &report.failed_attempts {
        let time = if timings {
            format!(" {:>8}", f.millis)
        } else {
            String::new()
        };
        println!(
            "{:>7}  {:<12} {:>9} {:>9} {:>6}{time}",
            f.at_message, "(failed)", f.tokens, "-", "-"
        );
        for (method, error) in &f.failures {
            println!("         {method}: {error}");
        }
    }
    let (s, b) = (&report.simulated, &report.baseline);
    println!();
    println!("{:<24} {:>14} {:>14}", "", "simulated", "no compaction");
    println!(
        "{:<24} {:>14} {:>14}",
        "input tokens billed", s.input_tokens_billed, b.input_tokens_billed
    );
    println!(
        "{:<24} {:>14} {:>14}",
        "peak context", s.peak_context, b.peak_context
    );
    println!(
        "{:<24} {:>14} {:>14}",
        "final context", s.final_context, b.final_context
    );
    println!(
        "{:<24} {:>14} {:>14}",
        "turns over the window", s.turns_over_window, b.turns_over_window
    );
    println!(
        "{:<24} {:>14} {:>14}",
        "compactions", report.compaction_count, 0
    );
    println!(
        "{:<24} {:>14} {:>14}",
        "prompt-cache breaks", report.cache_breaks, 0
    );
    println!(
        "{:<24} {:>14} {:>14}",
        "failed attempts",
        report.failed_attempts.len(),
        0
    );
    println!(
        "billed input {:.1}% less with compaction",
        percent_less(b.input_tokens_billed, s.input_tokens_billed)
    );
}
