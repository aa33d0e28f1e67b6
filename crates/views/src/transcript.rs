//! The transcript: every event on the active path in order, as HTML.

use std::collections::HashMap;
use std::fmt::Write as _;

use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_llm::Message;
use abridge_llm::Origin;
use abridge_redact::Redactor;
use abridge_redact::redact_with;
use abridge_session::EventBody;
use abridge_session::LogEvent;
use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::SurfaceOp;

use crate::html::escape;

/// A tool result longer than this (characters or lines) is folded into
/// `<details>` so the transcript stays scannable.
const FOLD_CHARS: usize = 800;
const FOLD_LINES: usize = 12;

/// What the replay learnt about the active path, for labelling events.
#[derive(Debug, Default)]
pub(crate) struct Facts {
    /// Message seq to the checkpoint that first hid it.
    pub(crate) hidden_by: HashMap<Seq, Seq>,
    /// Tool result seq to the rewrite that replaced its content.
    pub(crate) rewritten_by: HashMap<Seq, Seq>,
    /// Surface tokens before and after each replace or rewrite.
    pub(crate) tokens: HashMap<Seq, (u64, u64)>,
    /// Method of the compaction/start preceding each rewrite.
    pub(crate) rewrite_method: HashMap<Seq, String>,
    /// Checkpoints with their snapcompact frames drawn into PNG images.
    pub(crate) expanded: HashMap<Seq, Message>,
}

/// Bytes of transcript gathered before they are handed on.
const CHUNK: usize = 64 * 1024;

/// The transcript `<section>`, every message and log line through
/// `redactor` when there is one, handed to `sink` in pieces of about
/// [`CHUNK`] bytes (a page of a large session is never held whole).
///
/// # Errors
/// Whatever `sink` returns; the transcript stops there.
pub(crate) fn render(
    session: &Session,
    facts: &Facts,
    redactor: Option<&Redactor>,
    sink: &mut dyn FnMut(&str) -> Result<(), crate::ReportError>,
) -> Result<(), crate::ReportError> {
    let mut out = String::from("<section class=\"transcript\">\n<h2>Transcript</h2>\n");
    for seq in session.active_path() {
        let Some(event) = session.event(seq) else {
            continue;
        };
        match &event.body {
            EventBody::Message(m) => {
                let redacted = redactor.and_then(|r| r.redact_message(&m.message));
                let shown = redacted.as_ref().unwrap_or(&m.message);
                match m.op {
                    SurfaceOp::Append => message(&mut out, seq, shown, facts),
                    SurfaceOp::Replace { start, end } => {
                        checkpoint(&mut out, seq, shown, end + 1 - start, facts);
                    }
                    SurfaceOp::Rewrite { target } => rewrite(&mut out, seq, target, shown, facts),
                }
            }
            EventBody::Log(log) => log_line(&mut out, seq, log, redactor),
            EventBody::Leaf => {}
        }
        if out.len() >= CHUNK {
            sink(&out)?;
            out.clear();
        }
    }
    out.push_str("</section>\n");
    sink(&out)
}

fn message(out: &mut String, seq: Seq, message: &Message, facts: &Facts) {
    let hidden = facts.hidden_by.get(&seq);
    let _ = write!(
        out,
        "<div class=\"msg role-{}{}\" id=\"e{seq}\">\n<div class=\"head\"><span class=\"seq\">#{seq}</span> {}{}",
        message.role,
        if hidden.is_some() { " hidden" } else { "" },
        message.role,
        origin_note(message)
    );
    if let Some(by) = hidden {
        let _ = write!(
            out,
            "<span class=\"hidden-note\">hidden by checkpoint at <a href=\"#e{by}\">#{by}</a></span>"
        );
    }
    if let Some(by) = facts.rewritten_by.get(&seq) {
        let _ = write!(
            out,
            "<span class=\"hidden-note\">content rewritten at <a href=\"#e{by}\">#{by}</a></span>"
        );
    }
    out.push_str("</div>\n");
    blocks(out, &message.content);
    out.push_str("</div>\n");
}

fn checkpoint(out: &mut String, seq: Seq, message: &Message, hidden: usize, facts: &Facts) {
    let method = match &message.meta.origin {
        Some(Origin::Checkpoint { method, .. }) => method.as_str(),
        _ => "unknown method",
    };
    let tokens = facts
        .tokens
        .get(&seq)
        .map(|(before, after)| format!(", {before} -&gt; {after} tokens"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "<div class=\"divider\" id=\"e{seq}\">#{seq} checkpoint by {}: {hidden} messages{tokens}</div>",
        escape(method)
    );
    let shown = facts.expanded.get(&seq).unwrap_or(message);
    let hidden_class = if facts.hidden_by.contains_key(&seq) {
        " hidden"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "<div class=\"msg role-{}{hidden_class}\">",
        message.role
    );
    blocks(out, &shown.content);
    out.push_str("</div>\n");
}

fn rewrite(out: &mut String, seq: Seq, target: Seq, message: &Message, facts: &Facts) {
    let method = facts
        .rewrite_method
        .get(&seq)
        .map_or("unknown method", String::as_str);
    let tokens = facts
        .tokens
        .get(&seq)
        .map(|(before, after)| format!(", {before} -&gt; {after} tokens"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "<div class=\"divider rewrite\" id=\"e{seq}\">#{seq} rewritten by {}: result <a href=\"#e{target}\">#{target}</a>{tokens}</div>",
        escape(method)
    );
    out.push_str("<div class=\"msg role-tool\">\n");
    blocks(out, &message.content);
    out.push_str("</div>\n");
}

fn log_line(out: &mut String, seq: Seq, log: &LogEvent, redactor: Option<&Redactor>) {
    let data = &log.data;
    let field = |name: &str| data.get(name).and_then(|v| v.as_str()).map(str::to_string);
    let mut detail = Vec::new();
    for name in [
        "method", "trigger", "status", "kind", "error", "model", "from", "to",
    ] {
        if let Some(value) = field(name) {
            detail.push(format!("{name} {value}"));
        }
    }
    let _ = writeln!(
        out,
        "<div class=\"log\" id=\"e{seq}\">#{seq} {} {}</div>",
        escape(&log.kind),
        escape(&redact_with(redactor, &detail.join(", ")))
    );
}

fn origin_note(message: &Message) -> String {
    match &message.meta.origin {
        Some(Origin::Model { model, .. }) if !model.is_empty() => {
            format!(" <span class=\"seq\">{}</span>", escape(model))
        }
        _ => String::new(),
    }
}

/// Renders content blocks; nested tool result content goes through here too.
pub(crate) fn blocks(out: &mut String, content: &[Block]) {
    for block in content {
        match block {
            Block::Text { text } => {
                let _ = writeln!(out, "<div class=\"text\">{}</div>", escape(text));
            }
            Block::Thinking { thinking, .. } => {
                let _ = writeln!(
                    out,
                    "<details class=\"thinking\"><summary>thinking ({} characters)</summary><pre>{}</pre></details>",
                    thinking.chars().count(),
                    escape(thinking)
                );
            }
            Block::RedactedThinking { .. } => {
                out.push_str("<div class=\"note\">[redacted thinking]</div>\n");
            }
            Block::Native { provider, item } => {
                let _ = writeln!(
                    out,
                    "<div class=\"note\">[{} native {}, {} bytes]</div>",
                    escape(provider),
                    escape(item.get("type").and_then(|t| t.as_str()).unwrap_or("item")),
                    item.to_string().len()
                );
            }
            Block::Image {
                source,
                width,
                height,
            } => image(out, source, *width, *height),
            Block::ToolCall {
                id,
                name,
                arguments,
            } => {
                let args = serde_json::to_string_pretty(arguments)
                    .unwrap_or_else(|_| arguments.to_string());
                let _ = writeln!(
                    out,
                    "<div class=\"call\"><span class=\"name\">call {}</span> <span class=\"callid mono\">{}</span><pre>{}</pre></div>",
                    escape(name),
                    escape(id),
                    escape(&args)
                );
            }
            Block::ToolResult {
                call_id,
                content,
                is_error,
            } => result(out, call_id, content, *is_error),
        }
    }
}

fn result(out: &mut String, call_id: &str, content: &[Block], is_error: bool) {
    let label = if is_error { "error" } else { "result" };
    let class = if is_error { " error" } else { "" };
    let text: String = content
        .iter()
        .filter_map(Block::as_text)
        .collect::<Vec<_>>()
        .join("\n");
    let others: Vec<Block> = content
        .iter()
        .filter(|b| b.as_text().is_none())
        .cloned()
        .collect();
    let lines = text.lines().count();
    let _ = write!(
        out,
        "<div class=\"result{class}\"><span class=\"name\">{label}</span> for <span class=\"resultid mono\">{}</span>",
        escape(call_id)
    );
    if text.chars().count() > FOLD_CHARS || lines > FOLD_LINES {
        let first = text.lines().next().unwrap_or("");
        let first: String = first.chars().take(100).collect();
        let _ = write!(
            out,
            "<details><summary>{lines} lines, {} characters: <code>{}</code></summary><pre>{}</pre></details>",
            text.chars().count(),
            escape(&first),
            escape(&text)
        );
    } else if !text.is_empty() {
        let _ = write!(out, "<pre>{}</pre>", escape(&text));
    }
    blocks(out, &others);
    out.push_str("</div>\n");
}

fn image(out: &mut String, source: &ImageSource, width: Option<u32>, height: Option<u32>) {
    let size = match (width, height) {
        (Some(w), Some(h)) => format!("{w}x{h}"),
        _ => "size unknown".to_string(),
    };
    match source {
        ImageSource::Base64 { media_type, data } => {
            let class = if media_type == "image/png" && width.is_some() {
                "frame"
            } else {
                "image"
            };
            let _ = writeln!(
                out,
                "<img class=\"{class}\" alt=\"image {size}\" src=\"data:{};base64,{}\">",
                escape(media_type),
                escape(data)
            );
        }
        ImageSource::Url { url } => {
            let _ = writeln!(
                out,
                "<div class=\"note\">[image {size} at {} — not embedded]</div>",
                escape(url)
            );
        }
        ImageSource::Blob { sha256, .. } => {
            let _ = writeln!(
                out,
                "<div class=\"note\">[image {size}, blob {} — not embedded]</div>",
                escape(sha256)
            );
        }
    }
}
