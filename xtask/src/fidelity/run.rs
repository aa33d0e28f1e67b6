//! Running each method at a compaction point and grading what is left.

use abridge::Harness;
use abridge::PassStatus;
use abridge_llm::Block;
use abridge_llm::Message;
use abridge_session::Session;

use super::key::Key;
use super::point::MODEL;
use super::point::Point;
use super::point::harness_with;
use super::score::Reach;
use super::score::grade;

/// The methods graded, each as the names a manual pass is given (empty:
/// the configured order, which is the default one). Model-backed methods
/// have no client here and are skipped by the default order.
pub(crate) const METHODS: &[(&str, &[&str])] = &[
    ("digest", &["digest"]),
    ("prune", &["prune"]),
    ("mask", &["mask"]),
    ("snapcompact", &["snapcompact"]),
    ("default order", &[]),
];

/// The label of the session's own compaction in the tables.
pub(crate) const REAL: &str = "the agent's own summary";

/// One graded context.
pub(crate) struct Graded {
    /// The method (or [`REAL`]).
    pub(crate) method: String,
    /// The methods that landed; empty when the pass changed nothing.
    pub(crate) landed: Vec<String>,
    /// How the pass ended (`None` for the agent's own summary).
    pub(crate) status: Option<PassStatus>,
    /// Tokens the next request costs (the harness's figure).
    pub(crate) tokens: u64,
    /// o200k tokens of the checkpoints' text on the surface (frames are
    /// images and not counted here).
    pub(crate) checkpoint_tokens: usize,
    /// Each probe's reach, in the key's order.
    pub(crate) reaches: Vec<Reach>,
}

/// Every method at `point`, then the session's own compaction.
pub(crate) fn run_all(
    runtime: &tokio::runtime::Runtime,
    point: Point,
    key: &Key,
) -> anyhow::Result<Vec<Graded>> {
    let mut out = Vec::new();
    for &(name, methods) in METHODS {
        let harness = harness_with(point.settings.clone(), methods, point.window, &point.prefix)?;
        let names: Vec<String> = methods.iter().map(|m| (*m).to_string()).collect();
        let pass = runtime.block_on(harness.compact(&names, None))?;
        let landed = if pass.status == PassStatus::NotNeeded {
            Vec::new()
        } else {
            pass.outcomes.iter().map(|o| o.method.clone()).collect()
        };
        out.push(graded(name, landed, Some(pass.status), &harness, key)?);
    }
    if let Some(real) = point.real {
        let harness = Harness::builder(real.session, MODEL)
            .settings(point.settings.clone())
            .window(point.window)
            .build()?;
        out.push(graded(
            REAL,
            vec!["(imported)".into()],
            None,
            &harness,
            key,
        )?);
    }
    Ok(out)
}

fn graded(
    method: &str,
    landed: Vec<String>,
    status: Option<PassStatus>,
    harness: &Harness,
    key: &Key,
) -> anyhow::Result<Graded> {
    let (context, checkpoint_tokens) = context_text(harness)?;
    let reaches = grade(key, &context, |query| {
        harness
            .call_tool("recall", &serde_json::json!({ "query": query }))
            .unwrap_or_default()
    });
    Ok(Graded {
        method: method.to_string(),
        landed,
        status,
        tokens: harness.tokens(),
        checkpoint_tokens,
        reaches,
    })
}

/// The text the next request shows the model, and the o200k size of its
/// checkpoints' text. A snapcompact checkpoint adds the text printed on
/// its frames and edges, as if every frame were read without error (the
/// legibility table in BENCHMARKS.md gives the real error rate).
fn context_text(harness: &Harness) -> anyhow::Result<(String, usize)> {
    let mut out = String::new();
    for message in &harness.request()? {
        out.push_str(&text_of(message));
        out.push('\n');
    }
    let session = abridge_compact::host::lock_session(harness.session());
    out.push_str(&printed_text(&session));
    Ok((out, checkpoint_tokens(&session)?))
}

/// o200k tokens of the text of every checkpoint (a `replace` message) on
/// the surface, whoever wrote it.
fn checkpoint_tokens(session: &Session) -> anyhow::Result<usize> {
    let bpe = tiktoken_rs::o200k_base().map_err(|e| anyhow::anyhow!("o200k: {e}"))?;
    let mut total = 0;
    for &seq in session.surface().seqs() {
        let Some(event) = session.event(seq).and_then(|e| e.message_event()) else {
            continue;
        };
        if matches!(event.op, abridge_session::SurfaceOp::Replace { .. }) {
            total += bpe.encode_ordinary(&text_of(&event.message)).len();
        }
    }
    Ok(total)
}

/// The text snapcompact printed for every checkpoint on the surface.
fn printed_text(session: &Session) -> String {
    let mut out = String::new();
    for &seq in session.surface().seqs() {
        let archive = abridge_compact::host::summary_of_checkpoint(session, seq).and_then(|data| {
            abridge_snapcompact::archive_from_summary(&data.summary, &data.details)
        });
        if let Some(archive) = archive {
            out.push_str(&archive.head);
            out.extend(archive.middle.chars().skip(archive.dropped_chars));
            out.push_str(&archive.tail);
            out.push('\n');
        }
    }
    out
}

/// Every text a message shows: text blocks, tool calls' names and
/// arguments, tool results' text.
fn text_of(message: &Message) -> String {
    let mut out = String::new();
    for block in &message.content {
        match block {
            Block::Text { text } => out.push_str(text),
            Block::ToolCall {
                name, arguments, ..
            } => {
                out.push_str(name);
                out.push(' ');
                json_text(arguments, &mut out);
            }
            Block::ToolResult { content, .. } => {
                for inner in content {
                    if let Some(text) = inner.as_text() {
                        out.push_str(text);
                    }
                }
            }
            _ => {}
        }
        out.push('\n');
    }
    out
}

/// The strings of a JSON value, raw (escapes undone), one per line: a
/// path or command inside a tool call reads as the model reads it.
fn json_text(value: &serde_json::Value, out: &mut String) {
    match value {
        serde_json::Value::String(s) => {
            out.push_str(s);
            out.push('\n');
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| json_text(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| json_text(v, out)),
        other => {
            out.push_str(&other.to_string());
            out.push('\n');
        }
    }
}
