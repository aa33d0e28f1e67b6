//! Reading back by reference: one event, a range as a transcript, part of
//! one event's text, or a shake artifact. Returns the whole text; the
//! caller pages it.

use abridge_llm::Message;
use abridge_prune::ArtifactRef;
use abridge_prune::ArtifactStore;
use abridge_prune::resolve;
use abridge_session::Event;
use abridge_session::EventBody;
use abridge_session::Reference;
use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::SurfaceOp;

use super::miss::RecallMiss;
use super::page::byte_at;
use super::render::is_recall_result;
use super::render::message_text;
use super::render::speaker;

/// What a reference resolves to before paging.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// One line saying what this is (`recall://17 · tool result of grep`).
    pub title: String,
    /// The full text.
    pub text: String,
}

/// Resolves `reference` (`recall://…` or `artifact://…`) against the
/// session and, for artifacts, the store.
///
/// # Errors
/// A [`RecallMiss`] naming what was wrong.
pub fn resolve_text(
    session: &Session,
    artifacts: Option<&dyn ArtifactStore>,
    reference: &str,
) -> Result<Resolved, RecallMiss> {
    let trimmed = reference.trim();
    if trimmed.starts_with(abridge_prune::ARTIFACT_SCHEME) {
        return read_artifact(artifacts, trimmed);
    }
    let parsed: Reference = trimmed
        .parse()
        .map_err(|e: abridge_session::ReferenceError| {
            RecallMiss::BadReference(format!("{e}, or artifact://ID"))
        })?;
    match parsed {
        Reference::Event(seq) => {
            let (event, message) = message_event(session, seq)?;
            Ok(Resolved {
                title: format!("{parsed} · {}", speaker(session, event)),
                text: message_text(seq, message),
            })
        }
        Reference::Part { seq, start, end } => {
            let (event, message) = message_event(session, seq)?;
            // Parts count characters of the message's plain text (its text
            // blocks, and a tool result's, joined by newlines), as shake
            // writes them.
            let text = message.plain_text();
            let len = text.chars().count();
            if start >= len {
                return Err(RecallMiss::PartOutOfRange { seq, start, len });
            }
            let end = end.min(len);
            Ok(Resolved {
                title: format!(
                    "{} · {} · characters {start}-{end} of {len}",
                    Reference::Part { seq, start, end },
                    speaker(session, event)
                ),
                text: text[byte_at(&text, start)..byte_at(&text, end)].to_string(),
            })
        }
        Reference::Range { first, last } => read_range(session, first, last),
    }
}

fn message_event(session: &Session, seq: Seq) -> Result<(&Event, &Message), RecallMiss> {
    let event = session.event(seq).ok_or(RecallMiss::NoEvent {
        seq,
        last: session.len().saturating_sub(1) as u64,
    })?;
    match event.message() {
        Some(message) => Ok((event, message)),
        None => Err(RecallMiss::NotMessage {
            seq,
            kind: event.body.kind().to_string(),
        }),
    }
}

/// The messages of `first..=last` on the branch through the last message
/// in the range, oldest first, as a transcript. Placeholders (rewrites)
/// are left out since their originals are shown; earlier checkpoints and
/// earlier recall results are shown as one line naming their reference.
fn read_range(session: &Session, first: Seq, last: Seq) -> Result<Resolved, RecallMiss> {
    let empty = RecallMiss::EmptyRange { first, last };
    let top = (first..=last.min(session.len().saturating_sub(1) as u64))
        .rev()
        .find(|&seq| session.message(seq).is_some())
        .ok_or(empty.clone())?;
    let mut seqs = Vec::new();
    let mut cursor = Some(top);
    while let Some(seq) = cursor.filter(|&s| s >= first) {
        seqs.push(seq);
        cursor = session.event(seq).and_then(|e| e.parent);
    }
    seqs.reverse();
    let mut text = String::new();
    let mut shown = 0usize;
    for seq in seqs {
        let Some(event) = session.event(seq) else {
            continue;
        };
        let EventBody::Message(m) = &event.body else {
            continue;
        };
        let body = match m.op {
            SurfaceOp::Rewrite { .. } => continue,
            SurfaceOp::Replace { .. } => super::by_reference(super::EARLIER_CHECKPOINT, seq),
            SurfaceOp::Append if is_recall_result(session, seq) => {
                super::by_reference(super::RECALLED, seq)
            }
            SurfaceOp::Append => message_text(seq, &m.message),
        };
        text.push_str(&format!(
            "--- {}{seq} · {} ---\n{body}\n",
            abridge_session::RECALL_SCHEME,
            speaker(session, event)
        ));
        shown += 1;
    }
    if shown == 0 {
        return Err(empty);
    }
    Ok(Resolved {
        title: format!("{} · {shown} messages", Reference::range(first, last)),
        text,
    })
}

fn read_artifact(
    artifacts: Option<&dyn ArtifactStore>,
    reference: &str,
) -> Result<Resolved, RecallMiss> {
    let parsed =
        ArtifactRef::parse(reference).map_err(|e| RecallMiss::BadReference(e.to_string()))?;
    let store = artifacts.ok_or_else(|| RecallMiss::NoArtifactStore {
        reference: reference.to_string(),
    })?;
    let bytes = resolve(store, &parsed).map_err(|e| RecallMiss::Artifact {
        reference: reference.to_string(),
        reason: e.to_string(),
    })?;
    Ok(Resolved {
        title: format!("{parsed} · shaken artifact"),
        text: String::from_utf8_lossy(&bytes).into_owned(),
    })
}
