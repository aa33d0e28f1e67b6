//! The pins of a session as `stats` and `pin` list them: where, from
//! whom, how many tokens, and a one-line preview.

use abridge_llm::Message;
use abridge_meter::CostModel;
use abridge_session::Session;
use serde::Serialize;

/// Characters of a pin's text a listing shows.
const PREVIEW_CHARS: usize = 72;

/// One pin, listed.
#[derive(Debug, Serialize)]
pub(crate) struct Row {
    /// The pin event's seq.
    pub(crate) at: u64,
    /// The pinned message's seq, for a pin of a message.
    pub(crate) seq: Option<u64>,
    /// Who pinned it (`user`, `claude-md`, `agents-md`, ...).
    pub(crate) origin: String,
    /// The instruction file's path, when known.
    pub(crate) label: Option<String>,
    /// Whether its message is on the surface (otherwise the pinned
    /// message carries it).
    pub(crate) visible: bool,
    /// Tokens of its text as one message, for the session's model.
    pub(crate) tokens: u64,
    /// The text's start, on one line.
    pub(crate) preview: String,
}

impl Row {
    /// One line for people.
    pub(crate) fn line(&self) -> String {
        let target = self
            .seq
            .map_or_else(|| "text".to_string(), |seq| format!("message {seq}"));
        let label = self
            .label
            .as_deref()
            .map_or_else(String::new, |l| format!(" {l}"));
        let place = if self.visible {
            "on the surface"
        } else {
            "pinned message"
        };
        format!(
            "pin {} · {target} · {}{label} · {} tokens · {place} · {}",
            self.at, self.origin, self.tokens, self.preview
        )
    }
}

/// The session's pins on the active path, oldest first, priced by `cost`
/// (each text as one message, as the pinned message carries it).
pub(crate) fn rows(session: &Session, cost: &CostModel) -> Vec<Row> {
    session
        .pins()
        .into_iter()
        .map(|p| Row {
            at: p.at,
            seq: p.pin.seq,
            origin: p.pin.origin.clone(),
            label: p.pin.label.clone(),
            visible: p.visible,
            tokens: cost.message(&Message::user(p.text.clone())),
            preview: preview(&p.text),
        })
        .collect()
}

fn preview(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= PREVIEW_CHARS {
        return flat;
    }
    let cut: String = flat.chars().take(PREVIEW_CHARS).collect();
    format!("{cut}…")
}

/// The pins as `stats` prints them: a heading and one line each, or
/// nothing without pins.
pub(crate) fn render(rows: &[Row]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let mut out = format!("pins ({})\n", rows.len());
    for row in rows {
        out.push_str(&format!("  {}\n", row.line()));
    }
    out
}
