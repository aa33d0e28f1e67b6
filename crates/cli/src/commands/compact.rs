//! `abridge compact`: one manual Maintenance pass on a session file,
//! appending what lands; nothing already written changes.

use std::path::PathBuf;

use abridge::Harness;
use abridge::MethodFailure;
use abridge::PassStatus;
use serde::Serialize;

use crate::limits::BudgetArgs;
use crate::methods;
use crate::model;
use crate::open::open_session;
use crate::progress::Progress;

#[derive(Debug, clap::Args)]
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

#[derive(Debug, Serialize)]
struct Landed {
    method: String,
    tokens_before: u64,
    tokens_after: u64,
    hidden: usize,
    rewrites: usize,
    short_summary: String,
}

#[derive(Debug, Serialize)]
struct Report {
    session: String,
    model: String,
    window: u64,
    threshold: u64,
    target: u64,
    keep: u64,
    /// The last method that landed (`null` when none did).
    method: Option<String>,
    status: PassStatus,
    tokens_before: u64,
    tokens_after: u64,
    under_threshold: bool,
    landed: Vec<Landed>,
    failures: Vec<MethodFailure>,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let (session, _) = open_session(&args.session, true)?;
    let (model_id, lookup) = model::resolve(&session, args.budget.model.as_deref());
    let (settings, limits) = args
        .budget
        .resolve(&args.session, lookup.entry.context_window)?;
    let sources = methods::sources(
        &args.llm,
        &model_id,
        &settings.method_order,
        !args.budget.method.is_empty(),
    )?;
    // Messages counted by an earlier command are not tokenized again.
    let mut builder = Harness::builder(session, model_id.clone())
        .settings(settings)
        .window(limits.window)
        .sources(sources)
        .kept_counts(abridge_meter::KeptFile::beside(&args.session));
    if let Some(endpoint) = args.llm.count_endpoint()? {
        builder = builder.count_endpoint(endpoint);
    }
    let harness = builder.build()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let progress = Progress::start("compacting", !args.json);
    let result = runtime.block_on(harness.compact(&[], args.instructions.clone()));
    progress.finish();
    harness.sync()?;
    let pass = result?;
    let report = Report {
        session: args.session.display().to_string(),
        model: model_id,
        window: limits.window,
        threshold: limits.threshold,
        target: limits.target,
        keep: limits.keep,
        method: pass.outcomes.last().map(|o| o.method.clone()),
        status: pass.status,
        tokens_before: pass.tokens_before,
        tokens_after: pass.tokens_after,
        under_threshold: pass.tokens_after <= limits.threshold,
        landed: pass
            .outcomes
            .iter()
            .map(|o| Landed {
                method: o.method.clone(),
                tokens_before: o.tokens_before,
                tokens_after: o.tokens_after,
                hidden: o.hidden,
                rewrites: o.rewrite_seqs.len(),
                short_summary: o.short_summary.clone(),
            })
            .collect(),
        failures: pass.failures.clone(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print_human(&report);
    }
    if report.landed.is_empty() {
        anyhow::bail!(
            "every method failed ({}); the session is unchanged apart from the recorded attempts",
            report.failures.len()
        );
    }
    Ok(())
}

fn print_human(report: &Report) {
    for failure in &report.failures {
        println!("{} failed: {}", failure.method, failure.message);
    }
    for landed in &report.landed {
        let what = if landed.rewrites > 0 {
            format!("{} tool results rewritten", landed.rewrites)
        } else {
            format!("{} messages folded into a checkpoint", landed.hidden)
        };
        println!(
            "{} landed: {} -> {} tokens ({:.1}% less), {what}; threshold {} of a {} window ({})",
            landed.method,
            landed.tokens_before,
            landed.tokens_after,
            100.0 * (1.0 - landed.tokens_after as f64 / landed.tokens_before.max(1) as f64),
            report.threshold,
            report.window,
            report.model
        );
    }
    match report.status {
        PassStatus::Insufficient => println!(
            "note: still above the pass's goal of {} tokens ({}% of the threshold); try a stronger method (digest, soft, snapcompact)",
            report.target,
            report.target * 100 / report.threshold.max(1)
        ),
        PassStatus::Succeeded | PassStatus::Failed => {}
        other => println!("pass ended: {other:?}"),
    }
    if let Some(last) = report.landed.last()
        && !last.short_summary.is_empty()
    {
        println!("{}", last.short_summary);
    }
}
