//! The HTML report of a session: one self-contained page with the active
//! path's transcript, compaction dividers, frames inline and a chart of
//! the surface's tokens after every event. `abridge report` writes it to
//! a file; `GET /v1/sessions/{id}/report` serves it.

mod census;
mod chart;
mod html;
mod pins;
mod transcript;

use abridge_redact::Redactor;
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::fmt::Write as _;

use abridge_meter::TokenMeter;
use abridge_session::EventBody;
use abridge_session::MessageEvent;
use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::SessionError;
use abridge_session::SurfaceOp;
use serde::Serialize;

pub use census::Item;
pub use census::Stats;
pub use census::collect;
pub use census::preview;
use chart::Point;
use html::escape;
use transcript::Facts;

/// The largest page [`build`] returns by default: 256 MiB. A report
/// inlines every frame of every snapcompact checkpoint as base64, so a
/// small log can ask for a huge page; a page this size no browser opens
/// comfortably, and larger is almost certainly hostile input or a mistake.
pub const DEFAULT_MAX_REPORT_BYTES: u64 = 256 * 1024 * 1024;

/// Why a report could not be drawn.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// A rewrite names a target that is not on the active path.
    #[error("rewrite #{seq}: target #{target} is not on the active path")]
    RewriteOffPath {
        /// The rewrite.
        seq: Seq,
        /// Its target.
        target: Seq,
    },
    /// The page would be larger than the cap (`abridge report
    /// --max-bytes`, [`DEFAULT_MAX_REPORT_BYTES`]); [`build`] returns no
    /// page, [`write`](fn@write) stops where it passed the cap.
    #[error(
        "the report would be at least {bytes} bytes, over the limit of {limit} bytes; raise --max-bytes"
    )]
    TooLarge {
        /// Bytes of the page when the limit was found passed (at least
        /// this much).
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// Writing the page out failed (the client of a streamed report went
    /// away, a full disk).
    #[error("writing the report failed: {0}")]
    Write(std::io::Error),
    /// Replaying an event into the copy the chart is measured on failed.
    #[error("replaying event #{seq} of {location}: {error}")]
    Replay {
        /// The event.
        seq: Seq,
        /// The session's location.
        location: String,
        /// What the copy refused.
        error: SessionError,
    },
}

/// The figures in the table at the head of the page.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// The session's id.
    pub session_id: String,
    /// Where the session was read from (a file, or `tenant/id`).
    #[serde(rename = "session")]
    pub source: String,
    /// Events in the log.
    pub events: usize,
    /// Message events.
    pub messages: usize,
    /// Message events per role.
    pub messages_by_role: BTreeMap<String, usize>,
    /// Messages the model sees.
    pub surface_messages: usize,
    /// The model the page is priced for.
    pub model: String,
    /// Its context window.
    pub window: u64,
    /// The figure compaction acts on now.
    pub tokens: u64,
    /// Where compaction would fire under the default settings.
    pub threshold: u64,
    /// Checkpoints in the log.
    pub checkpoints: usize,
    /// Rewrites in the log.
    pub rewrites: usize,
}

/// The whole page for `session`, read from `source` (a path, or the
/// service's `tenant/id`), priced for `model`, with the figures at its
/// head; every message and log line goes through `redactor` when there
/// is one (secrets must not land in a file or a response in clear). The
/// page is refused once it passes `max_bytes`.
///
/// # Errors
/// [`ReportError`] when the active path cannot be replayed;
/// [`ReportError::TooLarge`] past `max_bytes`.
pub fn build(
    session: &Session,
    source: &str,
    model: &str,
    entry: &abridge_llm::ModelEntry,
    redactor: Option<&Redactor>,
    max_bytes: u64,
) -> Result<(String, Summary), ReportError> {
    let mut page = Vec::new();
    let summary = write(
        session, source, model, entry, redactor, max_bytes, &mut page,
    )?;
    let page = String::from_utf8(page)
        .map_err(|e| ReportError::Write(std::io::Error::new(std::io::ErrorKind::InvalidData, e)))?;
    Ok((page, summary))
}

/// [`build`], written to `out` as it is drawn (the service streams it to
/// the client), a transcript's worth of events at a time. Past
/// `max_bytes` it stops with [`ReportError::TooLarge`], part of the page
/// already written.
///
/// # Errors
/// As [`build`]; [`ReportError::Write`] when `out` fails.
pub fn write(
    session: &Session,
    source: &str,
    model: &str,
    entry: &abridge_llm::ModelEntry,
    redactor: Option<&Redactor>,
    max_bytes: u64,
    out: &mut dyn std::io::Write,
) -> Result<Summary, ReportError> {
    let window = entry.context_window;
    let threshold = abridge::Settings::default()
        .limits(window)
        .map_or(window, |limits| limits.threshold);
    let mut facts = Facts::default();
    let points = replay(session, entry, &mut facts)?;
    expand(session, &mut facts, redactor);
    let mut meter = TokenMeter::for_model(entry);
    let stats = census::collect(session, 0);
    let summary = Summary {
        session_id: session.header().session_id.clone(),
        source: source.to_string(),
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

    let mut page = Capped {
        out,
        written: 0,
        limit: max_bytes,
    };
    page.put(&html::head(&format!(
        "abridge report: {}",
        summary.session_id
    )))?;
    let mut top = format!(
        "<h1>Session {}</h1>\n<table class=\"header\">\n",
        escape(&summary.session_id)
    );
    for (name, value) in header_rows(&summary) {
        let _ = writeln!(top, "<tr><td>{name}</td><td>{}</td></tr>", escape(&value));
    }
    top.push_str("</table>\n<h2>Tokens on the surface after each event</h2>\n");
    top.push_str(&chart::svg(&points, window, threshold));
    top.push_str(&pins::section(session, &meter, redactor));
    page.put(&top)?;
    transcript::render(session, &facts, redactor, &mut |chunk| page.put(chunk))?;
    page.put(html::TAIL)?;
    Ok(summary)
}

/// The page's writer: counts what it writes and stops past the limit.
struct Capped<'a> {
    out: &'a mut dyn std::io::Write,
    written: u64,
    limit: u64,
}

impl Capped<'_> {
    fn put(&mut self, text: &str) -> Result<(), ReportError> {
        self.written += text.len() as u64;
        if self.written > self.limit {
            return Err(ReportError::TooLarge {
                bytes: self.written,
                limit: self.limit,
            });
        }
        self.out
            .write_all(text.as_bytes())
            .map_err(ReportError::Write)
    }
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
        ("file", summary.source.clone()),
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
) -> Result<Vec<Point>, ReportError> {
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
                let mapped = *map
                    .get(&target)
                    .ok_or(ReportError::RewriteOffPath { seq, target })?;
                (SurfaceOp::Rewrite { target: mapped }, vec![mapped])
            }
        };
        let draft = abridge_session::Draft::body(EventBody::Message(MessageEvent {
            message: m.message.clone(),
            op,
            sources,
        }));
        let new = copy.append(draft).map_err(|error| ReportError::Replay {
            seq,
            location: session.location(),
            error,
        })?;
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
/// be read back is shown with its references (and a logged warning).
fn expand(session: &Session, facts: &mut Facts, redactor: Option<&Redactor>) {
    match abridge::expand_frames(session) {
        Ok(expanded) => {
            for (seq, message) in session.surface().seqs().iter().zip(expanded) {
                if abridge_compact::host::is_checkpoint(&message) {
                    let message = redactor
                        .and_then(|r| r.redact_message(&message))
                        .unwrap_or(message);
                    facts.expanded.insert(*seq, message);
                }
            }
        }
        Err(error) => tracing::warn!(%error, "report: frames not drawn"),
    }
}
