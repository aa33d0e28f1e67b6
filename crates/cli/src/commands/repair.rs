//! `abridge repair`: the one command that may make a log shorter, and it
//! moves bytes rather than deleting them.
//!
//! - A torn tail (a write a crash cut short) goes to a sidecar file,
//!   `SESSION.torn-N`, byte for byte; with `--keep-complete` the torn
//!   batch's complete events are appended again, checked as any append.
//! - Compaction starts that were never ended (a crash, a kill, a dropped
//!   future) get a `compaction/end` of status `stale` that records why.
//! - `--salvage-to NEW` copies the lines that parse of a log broken in
//!   the middle into a new session, leaving the broken one as it is.

use std::path::Path;
use std::path::PathBuf;

use abridge_session::Draft;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::LogWriter;
use abridge_session::SetAside;
use abridge_session::SkippedLine;
use abridge_session::TornTail;
use anyhow::Context;
use serde::Serialize;

use crate::open::open_store;

#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The abridge session file.
    session: PathBuf,
    /// Keep the complete events of a torn batch in the log (checked as any
    /// append is); only the line the crash cut is left in the sidecar
    /// alone. Without it the whole torn batch is set aside.
    #[arg(long)]
    keep_complete: bool,
    /// For a log with a broken line before its end: copy every line that
    /// parses into a new session at this path (which must not exist),
    /// and leave SESSION unchanged.
    #[arg(long, value_name = "NEW", conflicts_with = "keep_complete")]
    salvage_to: Option<PathBuf>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

/// A torn tail set aside, as `--json` shows it.
#[derive(Debug, Serialize)]
struct Torn {
    /// The sidecar holding its bytes.
    sidecar: PathBuf,
    /// Where it started, its bytes and its complete events.
    #[serde(flatten)]
    torn: TornTail,
}

/// What `--salvage-to` wrote, as `--json` shows it.
#[derive(Debug, Serialize)]
struct Salvaged<'a> {
    out: &'a Path,
    events: usize,
    skipped: &'a [SkippedLine],
    torn_tail: Option<&'a TornTail>,
}

#[derive(Debug, Serialize)]
struct Report {
    /// The torn tail moved to a sidecar, if there was one.
    set_aside: Option<Torn>,
    /// Seqs of the torn batch's events appended again (`--keep-complete`).
    kept: Vec<u64>,
    /// Seqs of the `compaction/end` events appended.
    closed: Vec<u64>,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    if let Some(out) = &args.salvage_to {
        return salvage(&args.session, out, args.json);
    }
    let mut store = open_store(&args.session, JsonlOptions::default())?;
    let set_aside = store.set_aside_torn()?;
    let (mut session, _) = abridge_session::Session::open(Box::new(store))
        .with_context(|| format!("cannot open {}", args.session.display()))?;
    let (kept, refused) = match (&set_aside, args.keep_complete) {
        (Some(aside), true) => match abridge_session::keep_torn_events(&mut session, aside) {
            Ok(kept) => (kept, None),
            Err(error) => (Vec::new(), Some(error)),
        },
        _ => (Vec::new(), None),
    };
    let closed = abridge_compact::host::close_stale(&mut session)?;
    session.sync()?;
    let report = Report {
        set_aside: set_aside.as_ref().map(|aside| Torn {
            sidecar: aside.sidecar.clone(),
            torn: aside.torn.clone(),
        }),
        kept,
        closed,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!(
            "{}",
            render(
                &args.session,
                set_aside.as_ref(),
                &report,
                args.keep_complete
            )
        );
    }
    if let (Some(error), Some(aside)) = (refused, &set_aside) {
        anyhow::bail!(
            "the torn batch's complete events were not kept, and stay in {}: {error}",
            aside.sidecar.display()
        );
    }
    Ok(())
}

/// The lines `repair` prints.
fn render(
    session: &Path,
    set_aside: Option<&SetAside>,
    report: &Report,
    keep_complete: bool,
) -> String {
    let mut out = String::new();
    if let Some(aside) = set_aside {
        out.push_str(&format!(
            "set aside the torn tail ({}) in {}; the log now ends before it\n",
            aside.torn,
            aside.sidecar.display()
        ));
        if let (Some(first), Some(last)) = (report.kept.first(), report.kept.last()) {
            out.push_str(&format!(
                "kept its {} complete events in the log again (seqs {first}..={last}); the sidecar keeps its copy\n",
                report.kept.len()
            ));
        } else if aside.torn.events > 0 && !keep_complete {
            out.push_str(&format!(
                "its {} complete events are in the sidecar only (a batch lands whole or not at all)",
                aside.torn.events
            ));
            if report.closed.is_empty() {
                // Nothing was appended since: the sidecar can go back.
                out.push_str(&format!(
                    "; to keep them in the log, put them back before anything else writes (`cat {} >> {}`) and run `abridge repair --keep-complete {}`",
                    aside.sidecar.display(),
                    session.display(),
                    session.display()
                ));
            }
            out.push('\n');
        }
    }
    if !report.closed.is_empty() {
        out.push_str(&format!(
            "closed {} stale compaction start(s); ends appended at {:?}\n",
            report.closed.len(),
            report.closed
        ));
    }
    if set_aside.is_none() && report.closed.is_empty() {
        out.push_str("nothing to repair: no torn tail, no stale compaction start\n");
    }
    out
}

/// `--salvage-to`: every event that parses, renumbered (the store's
/// salvage mode), checked as a new session's events are and only then
/// written to a new session at `out`; `session` is only read.
fn salvage(session: &Path, out: &Path, json: bool) -> anyhow::Result<()> {
    if out.exists() {
        anyhow::bail!(
            "{}: already exists; --salvage-to writes a new session and never overwrites one",
            out.display()
        );
    }
    let options = JsonlOptions {
        salvage: true,
        ..JsonlOptions::default()
    };
    let mut store = open_store(session, options)?;
    let loaded = abridge_session::SessionStore::load(&mut store)?
        .with_context(|| format!("{}: no session here", session.display()))?;
    let drafts: Vec<Draft> = loaded
        .events
        .into_iter()
        .map(|event| Draft {
            parent: Some(event.parent),
            time: Some(event.time),
            body: event.body,
        })
        .collect();
    abridge_session::check_drafts(&drafts).with_context(|| {
        format!(
            "{}: the lines that parse do not make a valid session; nothing was written",
            session.display()
        )
    })?;
    let events = drafts.len();
    let target = JsonlStore::open(out, JsonlOptions::default())?;
    let mut writer = LogWriter::create(Box::new(target), &loaded.header)?;
    for draft in drafts {
        writer.push(draft)?;
    }
    writer.finish()?.sync()?;
    let report = &loaded.report;
    if json {
        let salvaged = Salvaged {
            out,
            events,
            skipped: &report.skipped,
            torn_tail: report.torn_tail.as_ref(),
        };
        println!("{}", serde_json::to_string_pretty(&salvaged)?);
        return Ok(());
    }
    println!(
        "salvaged {events} events of {} into {}; {} unchanged",
        session.display(),
        out.display(),
        session.display()
    );
    for line in &report.skipped {
        println!("skipped line {}: {}", line.line, line.reason);
    }
    if let Some(torn) = &report.torn_tail {
        println!("left out the torn tail ({torn})");
    }
    Ok(())
}
