//! `abridge compact`: run compaction methods on a session file, appending
//! the result; nothing already written changes.

use std::path::PathBuf;
use std::sync::Arc;

use abridge_compact::CompactError;
use abridge_compact::MeterCounter;
use abridge_compact::Policy;
use abridge_compact::Trigger;
use serde::Serialize;

use crate::limits::BudgetArgs;
use crate::limits::Limits;
use crate::methods;
use crate::model;
use crate::open::open_session;

/// Arguments of `abridge compact`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The abridge session file; the compaction is appended to it.
    session: PathBuf,
    #[command(flatten)]
    budget: BudgetArgs,
    /// Extra instructions for the summarizer (what to keep, what matters).
    #[arg(long)]
    instructions: Option<String>,
    /// Print the outcome as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    llm: methods::LlmArgs,
}

#[derive(Debug, Serialize)]
struct Report {
    session: String,
    model: String,
    window: u64,
    threshold: u64,
    keep: u64,
    method: String,
    tokens_before: u64,
    tokens_after: u64,
    hidden: usize,
    rewrites: usize,
    under_threshold: bool,
    short_summary: String,
    failures: Vec<(String, String)>,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let (mut session, _) = open_session(&args.session, true)?;
    let (model_id, lookup) = model::resolve(&session, args.budget.model.as_deref());
    let counter = Arc::new(MeterCounter::for_model(&lookup.entry));
    let Limits {
        window,
        threshold,
        keep,
    } = args.budget.limits(lookup.entry.context_window)?;
    let mut policy = Policy::new(counter).with_keep_recent_tokens(keep);
    if let Some(instructions) = &args.instructions {
        policy = policy.with_instructions(instructions.clone());
    }
    let methods = methods::build(
        &args.budget.method,
        &args.llm,
        methods::Artifacts::Beside(&args.session),
        &model_id,
    )?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = runtime.block_on(abridge_compact::compact_session(
        &mut session,
        &methods,
        &policy,
        Trigger::Manual,
    ));
    session.sync()?;
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(CompactError::AllFailed { failures }) => {
            for (method, error) in &failures {
                eprintln!("  {method}: {error}");
            }
            anyhow::bail!(
                "every method failed ({}); the session is unchanged apart from the recorded attempts",
                failures.len()
            );
        }
        Err(error) => return Err(error.into()),
    };
    let report = Report {
        session: args.session.display().to_string(),
        model: model_id,
        window,
        threshold,
        keep,
        method: outcome.method,
        tokens_before: outcome.tokens_before,
        tokens_after: outcome.tokens_after,
        hidden: outcome.hidden,
        rewrites: outcome.rewrite_seqs.len(),
        under_threshold: outcome.tokens_after <= threshold,
        short_summary: outcome.short_summary,
        failures: outcome.failures,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    for (method, error) in &report.failures {
        println!("{method} failed: {error}");
    }
    let what = if report.rewrites > 0 {
        format!("{} tool results rewritten", report.rewrites)
    } else {
        format!("{} messages folded into a checkpoint", report.hidden)
    };
    println!(
        "{} landed: {} -> {} tokens ({:.1}% less), {what}; threshold {} of a {} window ({})",
        report.method,
        report.tokens_before,
        report.tokens_after,
        100.0 * (1.0 - report.tokens_after as f64 / report.tokens_before.max(1) as f64),
        report.threshold,
        report.window,
        report.model
    );
    if !report.under_threshold {
        println!(
            "note: still above the threshold; run again, or try a stronger method (digest, soft, snapcompact)"
        );
    }
    if !report.short_summary.is_empty() {
        println!("{}", report.short_summary);
    }
    Ok(())
}
