//! `abridge report`: one self-contained HTML page showing a session — the
//! active path's transcript with compaction dividers and frames inline, and
//! a chart of the surface's tokens after every event. The page is drawn by
//! [`abridge_views`], which `abridge serve` also answers with.

use std::path::Path;
use std::path::PathBuf;

use abridge_views as report;
use abridge_views::Summary;
use anyhow::Context as _;
use serde::Serialize;

use crate::limits::WindowArg;
use crate::open::open_session;
use crate::redaction::RedactArgs;

/// Arguments of `abridge report`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The abridge session file.
    session: PathBuf,
    /// Where to write the HTML page (`-o` is `--out` in every command;
    /// `--output` is still accepted).
    #[arg(short, long, alias = "output")]
    out: PathBuf,
    /// Price the session for this model (default: the model that wrote the
    /// session's last assistant message).
    #[arg(long)]
    model: Option<String>,
    /// The window the chart draws, with its compaction threshold.
    #[command(flatten)]
    window: WindowArg,
    /// Print the page written, its size and the figures at its head as
    /// one JSON object (instead of a line on stderr).
    #[arg(long)]
    json: bool,
    /// Refuse, writing nothing, when the page would pass this many bytes
    /// (default 256 MiB: frames are inlined, so a small log can ask for a
    /// huge page).
    #[arg(long, default_value_t = report::DEFAULT_MAX_REPORT_BYTES)]
    max_bytes: u64,
    #[command(flatten)]
    redact: RedactArgs,
}

/// The `--json` form: where the page went, how big it is, and what it says
/// at its head.
#[derive(Debug, Serialize)]
struct Written<'a> {
    out: &'a Path,
    bytes: usize,
    #[serde(flatten)]
    summary: &'a Summary,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let (session, _) = open_session(&args.session, false)?;
    let (model, lookup) = crate::model::resolve(&session, args.model.as_deref());
    let mut entry = lookup.entry;
    entry.context_window = args
        .window
        .limits(&args.session, entry.context_window)?
        .window;
    let source = args.session.display().to_string();
    let redactor = args.redact.redactor(&args.session)?;
    let (page, summary) = report::build(
        &session,
        &source,
        &model,
        &entry,
        redactor.as_deref(),
        args.max_bytes,
    )?;
    abridge_session::write_private(&args.out, page.as_bytes()).with_context(|| {
        format!(
            "cannot write the report to {}; check the directory exists and is writable",
            args.out.display()
        )
    })?;
    if args.json {
        let written = Written {
            out: &args.out,
            bytes: page.len(),
            summary: &summary,
        };
        println!("{}", serde_json::to_string_pretty(&written)?);
    } else {
        eprintln!("wrote {}", args.out.display());
    }
    Ok(())
}
