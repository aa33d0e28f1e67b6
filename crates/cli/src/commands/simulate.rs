//! `abridge simulate`: replay a recorded session under a chosen window and
//! method chain, and report when compaction would fire and what the input
//! tokens would cost, against the same replay without compaction.
//!
//! The replay takes every `append` message on the source's active path, in
//! order (the source's own checkpoints and rewrites are skipped: the
//! simulation decides compactions itself). Usage reports are stripped from
//! the replayed messages: they describe the source's context, not the
//! simulated one, and would anchor the meter to a context that no longer
//! exists after a simulated compaction. What the reports showed beyond the
//! log (the system prompt and tool definitions) is still sent with every
//! simulated request: both runs carry the source's overhead, as the meter
//! measures it on the source for the model that wrote it
//! (`TokenMeter::with_fixed_overhead`), so their figures stand on the
//! basis `stats` prints.
//!
//! Compaction is decided by the same Maintenance a library user's Harness
//! runs: after every replayed message it is asked for a threshold pass
//! (mid-turn inside a tool loop). Its progress rule, fall-through and
//! breaker are what the report shows, trigger by trigger.

use std::path::PathBuf;
use std::time::Instant;

use abridge::Harness;
use abridge::MethodFailure;
use abridge::PassStatus;
use abridge_compact::Trigger;
use abridge_compact::host::MeterCounter;
use abridge_llm::Role;
use abridge_meter::TokenMeter;
use abridge_session::EventBody;
use abridge_session::Session;
use abridge_session::SurfaceOp;
use serde::Serialize;

use crate::limits::BudgetArgs;
use crate::methods;
use crate::model;
use crate::open::open_session;

mod rows;
use rows::rows;

/// After a failed compaction, wait for this percentage of the window of
/// growth before trying again.
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
    /// The trigger Maintenance ran for.
    trigger: Trigger,
    /// The methods that landed in the pass, joined with `+`.
    method: String,
    tokens_before: u64,
    tokens_after: u64,
    /// How the pass ended.
    status: PassStatus,
    /// Methods that failed or were skipped in the pass.
    failures: Vec<MethodFailure>,
    millis: u128,
}

/// One attempt in which every method failed (or nothing could be cut).
#[derive(Debug, Serialize)]
struct Failure {
    at_message: usize,
    trigger: Trigger,
    tokens: u64,
    status: PassStatus,
    failures: Vec<MethodFailure>,
    millis: u128,
}

/// A pass of the replay, by its place in [`Report::compactions`] or
/// [`Report::failed_attempts`].
#[derive(Debug, Clone, Copy)]
enum Row {
    Landed(usize),
    Failed(usize),
}

/// Where the fixed part of the context (overhead and system messages)
/// was first found above the threshold.
#[derive(Debug, Serialize)]
struct FixedAbove {
    at_message: usize,
    /// Tokens no compaction can reclaim.
    fixed: u64,
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
    /// Methods of the order that never ran (not configured, or
    /// unavailable for the model), each once, with why.
    skipped: Vec<MethodFailure>,
    messages: usize,
    assistant_turns: usize,
    compaction_count: usize,
    /// Each landed compaction breaks the provider's prompt cache from its
    /// checkpoint on.
    cache_breaks: usize,
    compactions: Vec<Compaction>,
    failed_attempts: Vec<Failure>,
    /// The passes of both lists in the order they ran.
    #[serde(skip)]
    order: Vec<Row>,
    /// The first pass Maintenance did not try because the fixed part of
    /// the context alone was above the threshold (it stops from there).
    fixed_above_threshold: Option<FixedAbove>,
    simulated: Run,
    baseline: Run,
    /// Invariant violations of the simulated session at the end (empty
    /// when tool calls stay paired and checkpoints account for what they
    /// hide).
    violations: Vec<String>,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let (source, _) = open_session(&args.session, false)?;
    let (model_id, lookup) = model::resolve(&source, args.budget.model.as_deref());
    let (settings, limits) = args
        .budget
        .resolve(&args.session, lookup.entry.context_window)?;
    let (window, threshold, keep) = (limits.window, limits.threshold, limits.keep);
    let method_names = settings.method_order.clone();
    let sources = methods::sources(
        &args.llm,
        &model_id,
        &settings.method_order,
        !args.budget.method.is_empty(),
    )?;
    let messages = replayed_messages(&source);
    if messages.is_empty() {
        anyhow::bail!(
            "{}: no messages to replay on the active path",
            args.session.display()
        );
    }

    let message_count = messages.len();
    let mut lookup_entry = lookup.entry;
    lookup_entry.context_window = window;
    let overhead = source_overhead(&source);
    let harness = Harness::builder(Session::in_memory("simulate"), model_id.clone())
        .settings(settings)
        .window(window)
        .sources(sources)
        .registry(crate::registry::registry().clone())
        .fixed_overhead(overhead)
        .build()?;
    let base_counter =
        MeterCounter::new(TokenMeter::for_model(&lookup_entry).with_fixed_overhead(overhead));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut base = Session::in_memory("simulate-baseline");
    let mut simulated = Run::default();
    let mut baseline = Run::default();
    let mut passes = Passes::default();
    let progress = crate::progress::Progress::bar("replaying", message_count as u64, !args.json);
    let mut assistant_turns = 0;
    let mut sim_tokens = 0;
    let mut fixed = None;
    let mut base_tokens = 0;

    for (index, message) in messages.into_iter().enumerate() {
        if message.role == Role::Assistant && sim_tokens > window {
            // A provider would refuse this request as too long: the host
            // hands the error to the harness, which recovers.
            let started = Instant::now();
            let overflow = abridge_llm::LlmError::ContextOverflow {
                provider: "simulated".into(),
                message: format!("{sim_tokens} tokens exceed the {window}-token window"),
            };
            let recovery = runtime.block_on(harness.on_error(&overflow))?;
            let millis = started.elapsed().as_millis();
            sim_tokens = harness.tokens();
            if let abridge::Recovery::Compacted(pass) = recovery {
                note_fixed(&mut fixed, index, &pass, &harness);
                passes.record(index, Trigger::Overflow, pass, millis);
            }
        }
        if message.role == Role::Assistant {
            // The prompt of this turn is the context just before its answer.
            assistant_turns += 1;
            simulated.turn(sim_tokens, window);
            baseline.turn(base_tokens, window);
        }
        // Inside a tool loop (after a call's result) the next request
        // comes without a user turn: that is a mid-turn check.
        let trigger = if message.role == Role::Tool {
            Trigger::MidTurn
        } else {
            Trigger::Threshold
        };
        base.append_message(message.clone())?;
        base_tokens = base_counter.measure(&base).tokens;
        harness.append(message)?;
        let started = Instant::now();
        let pass = runtime.block_on(async {
            match trigger {
                Trigger::MidTurn => harness.mid_turn().await,
                _ => harness.after_turn().await,
            }
        })?;
        let millis = started.elapsed().as_millis();
        sim_tokens = harness.tokens();
        note_fixed(&mut fixed, index, &pass, &harness);
        passes.record(index, trigger, pass, millis);
        progress.step();
    }
    progress.finish();
    let violations = abridge_compact::check::check_invariants(
        &abridge_compact::host::lock_session(harness.session()),
    )
    .violations
    .iter()
    .map(ToString::to_string)
    .collect();
    simulated.final_context = sim_tokens;
    baseline.final_context = base_tokens;

    let report = Report {
        session: args.session.display().to_string(),
        model: model_id,
        window,
        threshold,
        keep,
        methods: method_names,
        skipped: skipped(&passes.compactions, &passes.failed),
        messages: message_count,
        assistant_turns,
        compaction_count: passes.compactions.len(),
        cache_breaks: passes.compactions.len(),
        compactions: passes.compactions,
        failed_attempts: passes.failed,
        order: passes.order,
        fixed_above_threshold: fixed,
        simulated,
        baseline,
        violations,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_human(&report, !args.no_timings);
    }
    Ok(())
}

/// What the source's requests carried beyond its log (system prompt,
/// tool definitions), as the meter measures it for the model that wrote
/// the source's reports: priced for another model, the difference of the
/// two tokenizers would count as overhead too.
fn source_overhead(source: &Session) -> u64 {
    let measure = TokenMeter::for_model(&model::recorded(source).entry).measure(source);
    measure.tokens.saturating_sub(measure.estimate)
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

/// The passes of the replay that ran, as they ran.
#[derive(Debug, Default)]
struct Passes {
    compactions: Vec<Compaction>,
    failed: Vec<Failure>,
    order: Vec<Row>,
}

impl Passes {
    /// Files one pass of the replay under compactions (something landed)
    /// or failed attempts (it ran and nothing landed); passes that did not
    /// run are not listed.
    fn record(&mut self, at_message: usize, trigger: Trigger, pass: abridge::Pass, millis: u128) {
        match pass.status {
            PassStatus::NotNeeded
            | PassStatus::Disabled
            | PassStatus::BreakerOpen
            | PassStatus::FixedAboveThreshold => {}
            _ if pass.landed() => {
                self.order.push(Row::Landed(self.compactions.len()));
                self.compactions.push(Compaction {
                    at_message,
                    trigger,
                    method: pass
                        .outcomes
                        .iter()
                        .map(|o| o.method.as_str())
                        .collect::<Vec<_>>()
                        .join("+"),
                    tokens_before: pass.tokens_before,
                    tokens_after: pass.tokens_after,
                    status: pass.status,
                    failures: pass.failures,
                    millis,
                });
            }
            _ => {
                self.order.push(Row::Failed(self.failed.len()));
                self.failed.push(Failure {
                    at_message,
                    trigger,
                    tokens: pass.tokens_before,
                    status: pass.status,
                    failures: pass.failures,
                    millis,
                });
            }
        }
    }
}

/// Notes the first pass that found the fixed part above the threshold.
fn note_fixed(
    fixed: &mut Option<FixedAbove>,
    at_message: usize,
    pass: &abridge::Pass,
    harness: &Harness,
) {
    if fixed.is_none() && pass.status == PassStatus::FixedAboveThreshold {
        *fixed = Some(FixedAbove {
            at_message,
            fixed: harness.fixed_tokens(),
        });
    }
}

/// Failures that say a method could not run at all, rather than that it
/// tried and failed.
fn is_skip(failure: &MethodFailure) -> bool {
    failure.kind.is_skip()
}

/// Every skip seen in the replay, once per method and reason.
fn skipped(compactions: &[Compaction], failed: &[Failure]) -> Vec<MethodFailure> {
    let mut out: Vec<MethodFailure> = Vec::new();
    let all = compactions
        .iter()
        .flat_map(|c| &c.failures)
        .chain(failed.iter().flat_map(|f| &f.failures));
    for failure in all.filter(|f| is_skip(f)) {
        if !out.contains(failure) {
            out.push(failure.clone());
        }
    }
    out
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
    for skip in &report.skipped {
        println!("{}", methods::skip_note(skip));
    }
    if let Some(fixed) = &report.fixed_above_threshold {
        println!(
            "from message {} on, the fixed part of the context ({} tokens: system prompt, tool definitions, system messages) is above the threshold of {}: no compaction can help, so none was tried; use a larger window",
            fixed.at_message, fixed.fixed, report.threshold
        );
    }
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
    for line in rows(report, timings) {
        println!("{line}");
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
