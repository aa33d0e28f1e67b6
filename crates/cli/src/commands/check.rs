//! `abridge check`: the invariants every session must keep.

use std::path::PathBuf;

use serde::Serialize;

use crate::open::open_session;

/// Arguments of `abridge check`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The abridge session file.
    session: PathBuf,
    /// Print the result as JSON (the exit status is the same).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct StaleStart {
    seq: u64,
    compaction_id: String,
}

#[derive(Debug, Serialize)]
struct Report {
    ok: bool,
    events: usize,
    visible: usize,
    skipped_lines: Vec<String>,
    stale_starts: Vec<StaleStart>,
    violations: Vec<String>,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let (session, loaded) = open_session(&args.session, false)?;
    let invariants = abridge_compact::check_invariants(&session);
    let report = Report {
        ok: invariants.is_ok(),
        events: session.len(),
        visible: session.surface().len(),
        skipped_lines: loaded
            .skipped
            .iter()
            .map(|s| format!("line {}: {}", s.line, s.reason))
            .collect(),
        stale_starts: invariants
            .stale_starts
            .iter()
            .map(|s| StaleStart {
                seq: s.seq,
                compaction_id: s.compaction_id.clone(),
            })
            .collect(),
        violations: invariants
            .violations
            .iter()
            .map(ToString::to_string)
            .collect(),
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for skipped in &report.skipped_lines {
            println!("skipped {skipped}");
        }
        for stale in &report.stale_starts {
            println!(
                "stale compaction start: seq {} (compaction {})",
                stale.seq, stale.compaction_id
            );
        }
        if report.ok && report.stale_starts.is_empty() {
            println!(
                "ok: {} events, {} messages visible, tool calls paired, checkpoints account for what they hide",
                report.events, report.visible
            );
        }
        for violation in &report.violations {
            println!("violation: {violation}");
        }
    }
    if !report.ok {
        anyhow::bail!("{} invariant violations", report.violations.len());
    }
    if !report.stale_starts.is_empty() {
        anyhow::bail!(
            "{} stale compaction start(s): a compaction was interrupted; run `abridge repair {}` to close them",
            report.stale_starts.len(),
            args.session.display()
        );
    }
    Ok(())
}
