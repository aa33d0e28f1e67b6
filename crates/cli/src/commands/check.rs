//! `abridge check`: the invariants every session must keep.

use std::path::PathBuf;

use crate::open::open_session;

/// Arguments of `abridge check`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The abridge session file.
    session: PathBuf,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let (session, report) = open_session(&args.session, false)?;
    for skipped in &report.skipped {
        println!("skipped line {}: {}", skipped.line, skipped.reason);
    }
    let invariants = abridge_compact::check_invariants(&session);
    for stale in &invariants.stale_starts {
        println!("stale compaction start: {stale:?}");
    }
    if invariants.is_ok() {
        println!(
            "ok: {} events, {} messages visible, tool calls paired, checkpoints account for what they hide",
            session.len(),
            session.surface().len()
        );
        return Ok(());
    }
    for violation in &invariants.violations {
        println!("violation: {violation}");
    }
    anyhow::bail!("{} invariant violations", invariants.violations.len())
}
