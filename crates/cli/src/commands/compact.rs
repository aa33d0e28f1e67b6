//! `abridge compact`: one manual Maintenance pass on a session file,
//! appending what lands; nothing already written changes.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::Mutex;

use abridge::Harness;
use abridge::MaintenanceEvent;
use abridge::MethodFailure;
use abridge::PassStatus;
use serde::Serialize;

use crate::limits::BudgetArgs;
use crate::methods;
use crate::model;
use crate::open::open_session;
use crate::progress::Progress;

/// What `abridge compact` exits with when a pass landed but the context
/// is still above the pass's goal: the session changed, and it needs a
/// stronger method or a larger window. (1 is an error or a pass where
/// nothing landed; 2 is clap's for a bad command line.)
pub(crate) const EXIT_INSUFFICIENT: u8 = 3;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Exit status: 0 when the context ends at or under the pass's goal, or \
was already there (nothing to do); 3 when methods landed but the context is still above the \
goal; 1 when nothing landed or on an error."
)]
pub(crate) struct Args {
    session: PathBuf,
    #[command(flatten)]
    budget: BudgetArgs,
    /// What the checkpoint should focus on.
    #[arg(long)]
    instructions: Option<String>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    llm: methods::LlmArgs,
}

#[derive(Debug, Clone, Serialize)]
struct Landed {
    method: String,
    tokens_before: u64,
    tokens_after: u64,
    hidden: usize,
    rewrites: usize,
    short_summary: String,
}

/// One method of the pass, in the order it ran.
#[derive(Debug, Serialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
enum Step {
    /// It landed.
    Landed(Landed),
    /// It ran and failed.
    Failed(MethodFailure),
}

#[derive(Debug, Serialize)]
struct Report {
    session: String,
    model: String,
    window: u64,
    threshold: u64,
    target: u64,
    /// `target` as a percentage of `threshold`, as the settings give it.
    target_percent: u64,
    keep: u64,
    /// The least one method's landing must reclaim.
    floor: u64,
    /// The last method that landed (`null` when none did).
    method: Option<String>,
    /// `null` when the session was already at or under the goal and no
    /// pass ran.
    status: Option<PassStatus>,
    tokens_before: u64,
    tokens_after: u64,
    /// Tokens no compaction can reclaim (overhead beyond the log and the
    /// leading system messages).
    fixed_tokens: u64,
    under_threshold: bool,
    /// Every method that ran, in order.
    steps: Vec<Step>,
    landed: Vec<Landed>,
    /// Methods that ran and failed, in order.
    failures: Vec<MethodFailure>,
    /// Methods of the order that did not run (not configured, not
    /// available for the model, passed over), with why.
    skipped: Vec<MethodFailure>,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<ExitCode> {
    let (session, _) = open_session(&args.session, true)?;
    let (model_id, lookup) = model::resolve(&session, args.budget.model.as_deref());
    let (settings, limits) = args
        .budget
        .resolve(&args.session, lookup.entry.context_window)?;
    let target_percent = settings.target_percent;
    let sources = methods::sources(
        &args.llm,
        &model_id,
        &settings.method_order,
        !args.budget.method.is_empty(),
    )?;
    // Every step, in the order Maintenance took it.
    let steps: Arc<Mutex<Vec<MaintenanceEvent>>> = Arc::default();
    let observer: abridge::Observer = {
        let steps = Arc::clone(&steps);
        Arc::new(move |event: &MaintenanceEvent| {
            if matches!(
                event,
                MaintenanceEvent::AttemptLanded { .. } | MaintenanceEvent::AttemptFailed(_)
            ) {
                lock(&steps).push(event.clone());
            }
        })
    };
    // Messages counted by an earlier command are not tokenized again.
    let mut builder = Harness::builder(session, model_id.clone())
        .settings(settings)
        .window(limits.window)
        .sources(sources)
        .registry(crate::registry::registry().clone())
        .observer(observer)
        .kept_counts(abridge_meter::KeptFile::beside(&args.session));
    if let Some(endpoint) = args.llm.count_endpoint()? {
        builder = builder.count_endpoint(endpoint);
    }
    let harness = builder.build()?;
    let mut report = Report {
        session: args.session.display().to_string(),
        model: model_id,
        window: limits.window,
        threshold: limits.threshold,
        target: limits.target,
        target_percent,
        keep: limits.keep,
        floor: limits.min_reclaim,
        method: None,
        status: None,
        tokens_before: harness.tokens(),
        tokens_after: harness.tokens(),
        fixed_tokens: harness.fixed_tokens(),
        under_threshold: harness.tokens() <= limits.threshold,
        steps: Vec::new(),
        landed: Vec::new(),
        failures: Vec::new(),
        skipped: Vec::new(),
    };
    if report.tokens_before <= limits.target {
        // Under the goal already: a pass could only fold what is meant to
        // stay, so none runs and nothing is written.
        print(&report, args.json)?;
        return Ok(ExitCode::SUCCESS);
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let progress = Progress::start("compacting", !args.json);
    let result = runtime.block_on(harness.compact(&[], args.instructions.clone()));
    progress.finish();
    harness.sync()?;
    let pass = result?;
    let mut outcomes = pass.outcomes.iter();
    for event in lock(&steps).drain(..) {
        match event {
            MaintenanceEvent::AttemptLanded { .. } => {
                // The pass lists what landed in the same order.
                report
                    .steps
                    .extend(outcomes.next().map(landed).map(Step::Landed));
            }
            MaintenanceEvent::AttemptFailed(failure) if failure.kind.is_skip() => {
                report.skipped.push(failure);
            }
            MaintenanceEvent::AttemptFailed(failure) => {
                report.failures.push(failure.clone());
                report.steps.push(Step::Failed(failure));
            }
            _ => {}
        }
    }
    report.method = pass.outcomes.last().map(|o| o.method.clone());
    report.status = Some(pass.status);
    report.tokens_after = pass.tokens_after;
    report.under_threshold = pass.tokens_after <= limits.threshold;
    report.landed = pass.outcomes.iter().map(landed).collect();
    print(&report, args.json)?;
    match pass.status {
        PassStatus::Succeeded => Ok(ExitCode::SUCCESS),
        PassStatus::Insufficient => Ok(ExitCode::from(EXIT_INSUFFICIENT)),
        PassStatus::FixedAboveThreshold => anyhow::bail!(
            "the fixed part of the context ({} tokens: system prompt, tool definitions, system messages) is at or above the threshold of {}; no compaction can bring it under, so none was tried and the session is unchanged; use a larger window",
            report.fixed_tokens,
            report.threshold
        ),
        _ if report.landed.is_empty() => anyhow::bail!(
            "no method landed ({} failed, {} skipped); the session is unchanged apart from the recorded attempts",
            report.failures.len(),
            report.skipped.len()
        ),
        other => anyhow::bail!("the pass ended {other:?}"),
    }
}

fn landed(outcome: &abridge::compact::Outcome) -> Landed {
    Landed {
        method: outcome.method.clone(),
        tokens_before: outcome.tokens_before,
        tokens_after: outcome.tokens_after,
        hidden: outcome.hidden,
        rewrites: outcome.rewrite_seqs.len(),
        short_summary: outcome.short_summary.clone(),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn print(report: &Report, json: bool) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
    } else {
        print_human(report);
    }
    Ok(())
}

fn print_human(report: &Report) {
    let Some(status) = report.status else {
        println!(
            "nothing to do: {} tokens, already at or under the pass's goal of {} ({}% of the {}-token threshold; {}-token window, {})",
            report.tokens_before,
            report.target,
            report.target_percent,
            report.threshold,
            report.window,
            report.model
        );
        return;
    };
    for step in &report.steps {
        match step {
            Step::Landed(landed) => {
                let what = if landed.rewrites > 0 {
                    format!("{} tool results rewritten", landed.rewrites)
                } else {
                    format!("{} messages folded into a checkpoint", landed.hidden)
                };
                println!(
                    "{} landed: {} -> {} tokens ({:.1}% less), {what}",
                    landed.method,
                    landed.tokens_before,
                    landed.tokens_after,
                    100.0 * (1.0 - landed.tokens_after as f64 / landed.tokens_before.max(1) as f64),
                );
            }
            Step::Failed(failure) => println!("{} failed: {}", failure.method, failure.message),
        }
    }
    for skip in &report.skipped {
        println!("{}", methods::skip_note(skip));
    }
    println!(
        "threshold {} of a {}-token window ({}); the pass's goal is {} ({}% of the threshold)",
        report.threshold, report.window, report.model, report.target, report.target_percent
    );
    if status == PassStatus::Insufficient {
        println!(
            "note: still above the pass's goal ({} > {} tokens); try a stronger method (digest, soft, snapcompact) or a larger window",
            report.tokens_after, report.target
        );
    }
    if let Some(last) = report.landed.last()
        && !last.short_summary.is_empty()
    {
        println!("{}", last.short_summary);
    }
}
