//! `abridge repair`: closes compaction starts that were never ended (a
//! crash, a kill, a dropped future) with a `compaction/end` of status
//! `stale` that records why. Nothing already written changes.

use std::path::PathBuf;

use serde::Serialize;

use crate::open::open_session;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The abridge session file.
    session: PathBuf,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Serialize)]
struct Report {
    /// Seqs of the `compaction/end` events appended.
    closed: Vec<u64>,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let (mut session, _) = open_session(&args.session, true)?;
    let closed = abridge_compact::close_stale(&mut session)?;
    session.sync()?;
    let report = Report { closed };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else if report.closed.is_empty() {
        println!("nothing to repair: no stale compaction start");
    } else {
        println!(
            "closed {} stale compaction start(s); ends appended at {:?}",
            report.closed.len(),
            report.closed
        );
    }
    Ok(())
}
