//! `abridge check`: the invariants every session must keep, and whether
//! the log can be written (a torn tail makes every writer refuse it).

use std::path::PathBuf;

use serde::Serialize;

use crate::open::open_quietly;

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
    torn_tail: Option<abridge_session::TornTail>,
    skipped_lines: Vec<String>,
    stale_starts: Vec<StaleStart>,
    violations: Vec<String>,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let (session, loaded) = open_quietly(&args.session, false)?;
    let invariants = abridge_compact::check::check_invariants(&session);
    let report = Report {
        // False for a torn log too, as the exit status says.
        ok: invariants.is_ok() && loaded.torn_tail.is_none(),
        events: session.len(),
        visible: session.surface().len(),
        torn_tail: loaded.torn_tail.clone(),
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
        if let Some(torn) = &loaded.torn_tail {
            println!("torn tail: {torn}; not part of the log until `abridge repair`");
        }
        for skipped in &report.skipped_lines {
            println!("skipped {skipped}");
        }
        for stale in &report.stale_starts {
            println!(
                "stale compaction start: seq {} (compaction {})",
                stale.seq, stale.compaction_id
            );
        }
        if invariants.is_ok() && report.stale_starts.is_empty() {
            let ok = if report.torn_tail.is_some() {
                "the complete part before it is ok"
            } else {
                "ok"
            };
            println!(
                "{ok}: {} events, {} messages visible, tool calls paired, checkpoints account for what they hide",
                report.events, report.visible
            );
        }
        for violation in &report.violations {
            println!("violation: {violation}");
        }
    }
    if let Some(torn) = &loaded.torn_tail {
        let keep = match torn.events {
            0 => String::new(),
            n => format!(", or with `--keep-complete` to keep its {n} complete events in the log"),
        };
        anyhow::bail!(
            "the log ends in a write a crash cut short ({torn}): commands that write refuse it; run `abridge repair {}` to move those bytes to a sidecar file{keep}",
            args.session.display()
        );
    }
    if !invariants.is_ok() {
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
