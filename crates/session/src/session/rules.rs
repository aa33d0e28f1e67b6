//! The rules every event obeys, written once: a [`Session`](super::Session)
//! applies them to its own log on every append, open and catch-up, and
//! [`check_drafts`] applies them to drafts not yet written anywhere.
//!
//! The rules read a log through [`Log`]: a parent and a message by seq.
//! The session's log is its events; a batch of drafts for a new session is
//! its own log, each draft's parent resolved as an append would resolve it.
//! So a large batch (an import) is checked without a second copy of it.

use abridge_llm::Role;

use crate::error::Place;
use crate::error::SessionError;
use crate::event::Draft;
use crate::event::Event;
use crate::event::EventBody;
use crate::event::MessageEvent;
use crate::event::Seq;
use crate::event::SurfaceOp;
use crate::surface::Surface;
use crate::surface::SurfaceChange;

/// Why an event is refused: the field and the reason.
pub(super) type Rejection = (&'static str, String);

/// What the rules need to read of a log. Seqs are indexes; every parent
/// a log returns was checked to be earlier than its child
/// ([`check_links`]) before the rules walk it.
pub(super) trait Log {
    /// Number of events.
    fn len(&self) -> usize;
    /// The parent of event `seq` (`None` for a root or an unknown seq).
    fn parent_of(&self, seq: Seq) -> Option<Seq>;
    /// The message event at `seq`, if it is one.
    fn message_event(&self, seq: Seq) -> Option<&MessageEvent>;
}

impl Log for [Event] {
    fn len(&self) -> usize {
        <[Event]>::len(self)
    }

    fn parent_of(&self, seq: Seq) -> Option<Seq> {
        usize::try_from(seq)
            .ok()
            .and_then(|i| self.get(i))
            .and_then(|e| e.parent)
    }

    fn message_event(&self, seq: Seq) -> Option<&MessageEvent> {
        usize::try_from(seq)
            .ok()
            .and_then(|i| self.get(i))
            .and_then(Event::message_event)
    }
}

/// What a rewrite is checked against: the target's tool-result call id.
/// Every [`Log`] answers from its messages; a log that keeps only the
/// skeleton of what it wrote (the streaming writer) answers from that.
pub(super) trait RewriteTargets {
    /// `None` unless `seq` is a tool message; else the call id of its
    /// result block, if it has one.
    fn tool_result_id(&self, seq: Seq) -> Option<Option<&str>>;
}

impl<L: Log + ?Sized> RewriteTargets for L {
    fn tool_result_id(&self, seq: Seq) -> Option<Option<&str>> {
        let message = &self.message_event(seq)?.message;
        (message.role == Role::Tool).then(|| message.tool_result_block().map(|b| b.0))
    }
}

/// A batch of drafts read as the log of a new session: draft `i` becomes
/// seq `i`, its parent the one it names or else the draft before it.
struct Drafts<'a>(&'a [Draft]);

impl Drafts<'_> {
    fn get(&self, seq: Seq) -> Option<&Draft> {
        usize::try_from(seq).ok().and_then(|i| self.0.get(i))
    }
}

impl Log for Drafts<'_> {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn parent_of(&self, seq: Seq) -> Option<Seq> {
        self.get(seq)
            .and_then(|d| d.parent.unwrap_or(seq.checked_sub(1)))
    }

    fn message_event(&self, seq: Seq) -> Option<&MessageEvent> {
        match &self.get(seq)?.body {
            EventBody::Message(m) => Some(m),
            _ => None,
        }
    }
}

/// Checks that `drafts`, appended in one batch to a new, empty session,
/// would be accepted: the same rules, in the same order, with the same
/// error, as [`Session::append_batch`](super::Session::append_batch) on a
/// fresh [`Session`](super::Session) (image pixels at the default limit).
///
/// Nothing is copied: the drafts are read where they are, and the only
/// state kept is the surface. So a caller that must not write anything
/// unless everything is valid (an importer writing to a store in several
/// batches) can check first at the cost of a surface, not of a second
/// session.
///
/// # Errors
/// [`SessionError::Invalid`] naming the first refused draft and field.
pub fn check_drafts(drafts: &[Draft]) -> Result<(), SessionError> {
    check_drafts_with(drafts, abridge_llm::DEFAULT_MAX_IMAGE_PIXELS)
}

/// [`check_drafts`] for a session whose images may claim at most
/// `max_image_pixels` (see
/// [`Session::set_max_image_pixels`](super::Session::set_max_image_pixels)).
///
/// # Errors
/// As [`check_drafts`].
pub fn check_drafts_with(drafts: &[Draft], max_image_pixels: u64) -> Result<(), SessionError> {
    let log = Drafts(drafts);
    let mut surface = Surface::default();
    for (index, draft) in drafts.iter().enumerate() {
        let seq = index as Seq;
        let leaf = seq.checked_sub(1);
        let parent = draft.parent.unwrap_or(leaf);
        let invalid = |(field, reason): Rejection| SessionError::Invalid {
            place: Place::Draft { index },
            field,
            reason,
        };
        let message = match &draft.body {
            EventBody::Message(m) => Some(m),
            _ => None,
        };
        check_links(seq, parent, seq).map_err(invalid)?;
        if let Some(m) = message {
            check_image(m, max_image_pixels).map_err(invalid)?;
        }
        if parent == leaf {
            if let Some(m) = message {
                check_message(&log, &surface, seq, m).map_err(invalid)?;
                surface.apply(seq, &m.op);
            }
        } else {
            surface = fold(&log, Some(seq))
                .map_err(|(_, field, reason)| invalid((field, reason)))?
                .0;
        }
    }
    Ok(())
}

/// The pixel cap on a new message's images.
pub(super) fn check_image(m: &MessageEvent, limit: u64) -> Result<(), Rejection> {
    abridge_llm::check_image_pixels(&m.message, limit)
        .map_err(|e| ("data.message.content", e.to_string()))
}

/// The structural rules every event obeys, whatever its branch: its seq is
/// its index (`expected`), and its parent points strictly backwards (so
/// parent chains never cycle).
pub(super) fn check_links(seq: Seq, parent: Option<Seq>, expected: Seq) -> Result<(), Rejection> {
    if seq != expected {
        return Err((
            "seq",
            format!("expected seq {expected}, found {seq} (seqs must be contiguous from 0)"),
        ));
    }
    if let Some(parent) = parent
        && parent >= seq
    {
        return Err((
            "parent",
            format!("parent {parent} does not point to an earlier event (seq {seq})"),
        ));
    }
    Ok(())
}

/// The seqs from the root to `seq`, oldest first. Parents point backwards
/// (checked before any walk), so this terminates; the step bound guards it
/// regardless.
pub(super) fn path_to<L: Log + ?Sized>(log: &L, seq: Option<Seq>) -> Vec<Seq> {
    let mut path = Vec::new();
    let mut cursor = seq;
    while let Some(current) = cursor {
        if path.len() > log.len() {
            break;
        }
        path.push(current);
        cursor = log.parent_of(current);
    }
    path.reverse();
    path
}

/// Folds the path to `leaf` into a surface and its change journal,
/// checking every message on it. On error: the seq, field and reason.
pub(super) fn fold<L: Log + ?Sized>(
    log: &L,
    leaf: Option<Seq>,
) -> Result<(Surface, Vec<SurfaceChange>), (Seq, &'static str, String)> {
    let mut surface = Surface::default();
    let mut journal = Vec::new();
    for seq in path_to(log, leaf) {
        if let Some(m) = log.message_event(seq) {
            check_message(log, &surface, seq, m).map_err(|(field, reason)| (seq, field, reason))?;
            let (change, _) = surface.apply(seq, &m.op);
            journal.push(change);
        }
    }
    Ok((surface, journal))
}

/// Checks that message event `m` at `seq` can apply to `surface`, the
/// surface of its parent's path in `log`.
pub(super) fn check_message<L: RewriteTargets + ?Sized>(
    log: &L,
    surface: &Surface,
    seq: Seq,
    m: &MessageEvent,
) -> Result<(), Rejection> {
    surface
        .check(seq, &m.op)
        .map_err(|reject| ("data.op", reject.to_string()))?;
    match m.op {
        SurfaceOp::Rewrite { target } => {
            let Some(old_id) = log.tool_result_id(target) else {
                return Err((
                    "data.op.target",
                    format!("rewrite target seq {target} is not a tool result"),
                ));
            };
            if m.message.role != Role::Tool {
                return Err((
                    "data.message.role",
                    format!("a rewrite must be a tool message, not {}", m.message.role),
                ));
            }
            let new_id = m.message.tool_result_block().map(|b| b.0);
            if old_id != new_id {
                return Err((
                    "data.message.content",
                    format!(
                        "a rewrite must keep the call id {:?}, got {:?}",
                        old_id.unwrap_or(""),
                        new_id.unwrap_or("")
                    ),
                ));
            }
            if m.sources != [target] {
                return Err((
                    "data.sources",
                    format!("a rewrite's sources must be [{target}]"),
                ));
            }
        }
        SurfaceOp::Replace { start, end } => {
            let hidden = &surface.seqs()[start..=end];
            // Sorted once, so a checkpoint hiding thousands of messages
            // is checked in n log n, not n squared.
            let mut listed = m.sources.clone();
            listed.sort_unstable();
            if let Some(missing) = hidden.iter().find(|s| listed.binary_search(s).is_err()) {
                return Err((
                    "data.sources",
                    format!("a replace must list every seq it hides; {missing} is missing"),
                ));
            }
            if let Some(bad) = m.sources.iter().find(|s| **s >= seq) {
                return Err((
                    "data.sources",
                    format!("source seq {bad} is not before this event ({seq})"),
                ));
            }
        }
        SurfaceOp::Append => {
            if !m.sources.is_empty() {
                return Err(("data.sources", "an append has no sources".to_string()));
            }
        }
    }
    Ok(())
}
