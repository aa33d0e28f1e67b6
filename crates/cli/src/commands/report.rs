//! `abridge report`: one self-contained HTML page showing a session — the
//! active path's transcript with compaction dividers and frames inline, and
//! a chart of the surface's tokens after every event.

mod chart;
mod html;
mod transcript;

use std::collections::BTreeMap;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use std::path::PathBuf;

use abridge_compact::Redactor;
use abridge_meter::TokenMeter;
use abridge_session::EventBody;
use abridge_session::MessageEvent;
use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::SurfaceOp;
use anyhow::Context as _;
use serde::Serialize;

use crate::open::open_session;
use crate::redaction::RedactArgs;
use chart::Point;
use html::escape;
use transcript::Facts;

/// Arguments of `abridge report`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The abridge session file.
    session: PathBuf,
    /// Where to write the HTML page.
    #[arg(short, long)]
    output: PathBuf,
    /// Price the session for this model (default: the model that wrote the
    /// session's last assistant message).
    #[arg(long)]
    model: Option<String>,
    /// Print the page written, its size and the figures at its head as
    /// one JSON object (instead of a line on stderr).
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    redact: RedactArgs,
}

/// The figures in the table at the head of the page.
#[derive(Debug, Serialize)]
struct Summary {
    session_id: String,
    /// The session file the page was made from.
    session: PathBuf,
    events: usize,
    messages: usize,
    messages_by_role: BTreeMap<String, usize>,
    surface_messages: usize,
    model: String,
    window: u64,
    /// The figure compaction acts on now.
    tokens: u64,
    /// Where compaction would fire under the default settings.
    threshold: u64,
    checkpoints: usize,
    rewrites: usize,
}

/// The `--json` form: where the page went, how big it is, and what it says
/// at its head.
#[derive(Debug, Serialize)]
struct Written<'a> {
    output: &'a Path,
    bytes: usize,
    #[serde(flatten)]
    summary: &'a Summary,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let (session, _) = open_session(&args.session, false)?;
    let (model, lookup) = crate::model::resolve(&session, args.model.as_deref());
    let redactor = args.redact.redactor(&args.session)?;
    let (page, summary) = build(
        &session,
        &args.session,
        &model,
        &lookup.entry,
        redactor.as_deref(),
    )?;
    abridge_session::write_private(&args.output, page.as_bytes()).with_context(|| {
        format!(
            "cannot write the report to {}; check the directory exists and is writable",
            args.output.display()
        )
    })?;
    if args.json {
        let written = Written {
            output: &args.output,
            bytes: page.len(),
            summary: &summary,
        };
        println!("{}", serde_json::to_string_pretty(&written)?);
    } else {
        eprintln!("wrote {}", args.output.display());
    }
    Ok(())
}

/// The whole page for `session`, read from `file`, priced for `model`,
/// with the figures at its head; every message and log line through
/// `redactor` when there is one.
fn build(
    session: &Session,
    file: &Path,
    model: &str,
    entry: &abridge_llm::ModelEntry,
    redactor: Option<&Redactor>,
) -> anyhow::Result<(String, Summary)> {
    let window = entry.context_window;
    let threshold = abridge::Settings::default()
        .limits(window)
        .map_or(window, |limits| limits.threshold);
    let mut facts = Facts::default();
    let points = replay(session, entry, &mut facts)?;
    expand(session, &mut facts, redactor);
    let mut meter = TokenMeter::for_model(entry);
    let stats = super::stats::collect(session, 0);
    let summary = Summary {
        session_id: session.header().session_id.clone(),
        session: file.to_path_buf(),
        events: stats.events,
        messages: stats.messages_by_role.values().sum(),
        messages_by_role: stats.messages_by_role,
        surface_messages: stats.surface_messages,
        model: model.to_string(),
        window,
        tokens: meter.measure(session).tokens,
        threshold,
        checkpoints: stats.checkpoints,
        rewrites: stats.rewrites,
    };

    let mut body = format!(
        "<h1>Session {}</h1>\n<table class=\"header\">\n",
        escape(&summary.session_id)
    );
    for (name, value) in header_rows(&summary) {
        let _ = writeln!(body, "<tr><td>{name}</td><td>{}</td></tr>", escape(&value));
    }
    body.push_str("</table>\n<h2>Tokens on the surface after each event</h2>\n");
    body.push_str(&chart::svg(&points, window, threshold));
    body.push_str(&transcript::render(session, &facts, redactor));
    let page = html::page(&format!("abridge report: {}", summary.session_id), &body);
    Ok((page, summary))
}

/// The head table's rows, in words.
fn header_rows(summary: &Summary) -> [(&'static str, String); 7] {
    let roles: Vec<String> = summary
        .messages_by_role
        .iter()
        .map(|(role, n)| format!("{role} {n}"))
        .collect();
    let Summary {
        window,
        tokens,
        threshold,
        ..
    } = summary;
    [
        ("file", summary.session.display().to_string()),
        ("events", summary.events.to_string()),
        (
            "messages",
            format!(
                "{} ({}); {} on the surface",
                summary.messages,
                roles.join(", "),
                summary.surface_messages
            ),
        ),
        (
            "model",
            format!("{} (window {window} tokens)", summary.model),
        ),
        (
            "to act on now",
            format!(
                "{tokens} tokens ({:.1}% of the window; compaction threshold {threshold})",
                100.0 * *tokens as f64 / (*window).max(1) as f64
            ),
        ),
        ("checkpoints", summary.checkpoints.to_string()),
        ("rewrites", summary.rewrites.to_string()),
    ]
}

/// Replays the active path's message events into an in-memory session,
/// measuring the surface after each event with one meter (so each
/// message is counted once), and records which messages were hidden or
/// rewritten and by what.
fn replay(
    session: &Session,
    entry: &abridge_llm::ModelEntry,
    facts: &mut Facts,
) -> anyhow::Result<Vec<Point>> {
    let mut copy = Session::in_memory(&format!("report:{}", session.header().session_id));
    let mut meter = TokenMeter::for_model(entry);
    let mut map: HashMap<Seq, Seq> = HashMap::new();
    let mut points = Vec::new();
    let mut tokens = 0;
    let mut last_method: Option<String> = None;
    for seq in session.active_path() {
        let Some(event) = session.event(seq) else {
            continue;
        };
        let m = match &event.body {
            EventBody::Message(m) => m,
            EventBody::Log(log) => {
                if let Some(method) = log.data.get("method").and_then(|v| v.as_str()) {
                    last_method = Some(method.to_string());
                }
                points.push(Point {
                    seq,
                    tokens,
                    compaction: false,
                });
                continue;
            }
            EventBody::Leaf => continue,
        };
        let (op, sources) = match m.op {
            SurfaceOp::Append => (SurfaceOp::Append, Vec::new()),
            SurfaceOp::Replace { start, end } => {
                for source in &m.sources {
                    if session.message(*source).is_some() {
                        facts.hidden_by.entry(*source).or_insert(seq);
                    }
                }
                let sources = m.sources.iter().filter_map(|s| map.get(s).copied());
                (SurfaceOp::Replace { start, end }, sources.collect())
            }
            SurfaceOp::Rewrite { target } => {
                facts.rewritten_by.entry(target).or_insert(seq);
                if let Some(method) = &last_method {
                    facts.rewrite_method.insert(seq, method.clone());
                }
                let mapped = *map.get(&target).with_context(|| {
                    format!("rewrite #{seq}: target #{target} is not on the active path")
                })?;
                (SurfaceOp::Rewrite { target: mapped }, vec![mapped])
            }
        };
        let draft = abridge_session::Draft::body(EventBody::Message(MessageEvent {
            message: m.message.clone(),
            op,
            sources,
        }));
        let new = copy
            .append(draft)
            .with_context(|| format!("replaying event #{seq} of {}", session.location()))?;
        map.insert(seq, new);
        let before = tokens;
        tokens = meter.measure(&copy).tokens;
        let compaction = m.op != SurfaceOp::Append;
        if compaction {
            facts.tokens.insert(seq, (before, tokens));
        }
        points.push(Point {
            seq,
            tokens,
            compaction,
        });
    }
    Ok(points)
}

/// Snapcompact checkpoints on the surface with their frames drawn, so the
/// page shows the images the model sees. A checkpoint whose archive cannot
/// be read back is shown with its references and a warning on stderr.
fn expand(session: &Session, facts: &mut Facts, redactor: Option<&Redactor>) {
    match abridge::expand_frames(session) {
        Ok(expanded) => {
            for (seq, message) in session.surface().seqs().iter().zip(expanded) {
                if abridge_compact::is_checkpoint(&message) {
                    let message = redactor
                        .and_then(|r| r.redact_message(&message))
                        .unwrap_or(message);
                    facts.expanded.insert(*seq, message);
                }
            }
        }
        Err(error) => eprintln!("warning: frames not drawn: {error:#}"),
    }
}
