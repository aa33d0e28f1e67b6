//! The table of contents: for each checkpoint the model sees, what it
//! hides, one line per turn (the user's request, clipped, and the turn's
//! reference range).

use std::collections::HashSet;

use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_session::EventBody;
use abridge_session::Reference;
use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::SurfaceOp;

use super::render::clip_line;
use super::render::speaker;

/// Characters of the user's request shown per turn.
pub(super) const REQUEST_CHARS: usize = 100;

/// One turn a checkpoint hides.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TocTurn {
    /// The turn's messages (`recall://FIRST-LAST`).
    pub reference: String,
    /// How many hidden messages it holds.
    pub messages: usize,
    /// The user's request, clipped; empty when the turn has none.
    pub request: String,
}

/// What one checkpoint hides.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TocEntry {
    /// The checkpoint (`recall://SEQ`).
    pub checkpoint: String,
    /// Who wrote it (`checkpoint (digest)`).
    pub kind: String,
    /// Its hidden messages' turns, oldest first.
    pub turns: Vec<TocTurn>,
}

/// The checkpoints on the surface, oldest first, with what they hide.
pub fn table_of_contents(session: &Session) -> Vec<TocEntry> {
    let mut entries = Vec::new();
    for &seq in session.surface().seqs() {
        let Some(event) = session.event(seq) else {
            continue;
        };
        let EventBody::Message(m) = &event.body else {
            continue;
        };
        if !matches!(m.op, SurfaceOp::Replace { .. }) {
            continue;
        }
        entries.push(TocEntry {
            checkpoint: Reference::Event(seq).to_string(),
            kind: speaker(session, event),
            turns: turns(session, &hidden_messages(session, seq)),
        });
    }
    entries
}

/// The original messages a checkpoint hides, through earlier checkpoints
/// and placeholders, in seq order.
pub fn hidden_messages(session: &Session, checkpoint: Seq) -> Vec<Seq> {
    let mut out = Vec::new();
    let mut seen = HashSet::new();
    let mut stack = vec![checkpoint];
    while let Some(seq) = stack.pop() {
        if !seen.insert(seq) {
            continue;
        }
        let Some(EventBody::Message(m)) = session.event(seq).map(|e| &e.body) else {
            continue;
        };
        match m.op {
            SurfaceOp::Append if seq != checkpoint => out.push(seq),
            SurfaceOp::Append => {}
            SurfaceOp::Replace { .. } | SurfaceOp::Rewrite { .. } => {
                stack.extend(m.sources.iter().copied().filter(|&s| s < seq));
            }
        }
    }
    out.sort_unstable();
    out
}

/// Groups `seqs` into turns: a turn starts at each message the user typed.
fn turns(session: &Session, seqs: &[Seq]) -> Vec<TocTurn> {
    let mut out: Vec<(Vec<Seq>, String)> = Vec::new();
    for &seq in seqs {
        let Some(message) = session.message(seq) else {
            continue;
        };
        let typed = message.role == Role::User
            && !matches!(
                message.meta.origin,
                Some(Origin::Injected { .. } | Origin::Checkpoint { .. } | Origin::BranchSummary)
            );
        if typed || out.is_empty() {
            let request = if typed {
                clip_line(&message.plain_text(), REQUEST_CHARS)
            } else {
                String::new()
            };
            out.push((Vec::new(), request));
        }
        if let Some((turn, _)) = out.last_mut() {
            turn.push(seq);
        }
    }
    out.into_iter()
        .map(|(turn, request)| TocTurn {
            reference: Reference::range(turn[0], turn[turn.len() - 1]).to_string(),
            messages: turn.len(),
            request,
        })
        .collect()
}

/// The table as text for the model.
pub(super) fn render(entries: &[TocEntry]) -> String {
    if entries.is_empty() {
        return super::NOTHING_HIDDEN.to_string();
    }
    let mut out = String::new();
    for entry in entries {
        let messages: usize = entry.turns.iter().map(|t| t.messages).sum();
        out.push_str(&format!(
            "{} {} hides {messages} messages in {} turns:\n",
            entry.kind,
            entry.checkpoint,
            entry.turns.len()
        ));
        for turn in &entry.turns {
            let request = if turn.request.is_empty() {
                "(no user request: continued work)".to_string()
            } else {
                format!("\"{}\"", turn.request)
            };
            out.push_str(&format!(
                "- {} ({} messages): {request}\n",
                turn.reference, turn.messages
            ));
        }
    }
    out
}
