//! A new log written one draft at a time, for a producer whose events do
//! not fit in memory as a [`Session`](super::Session) holds them (an
//! import of a large file).
//!
//! The writer applies the same rules as a session's appends, in the same
//! order and with the same errors as [`check_drafts`](super::check_drafts)
//! on the whole sequence, but keeps only the skeleton of what it wrote:
//! each event's parent, whether it is a message and how it changed the
//! surface, and the call id of each tool result (what a later rewrite is
//! checked against). That is a few dozen bytes an event, whatever the
//! events say. Events go to the store in batches.

use std::collections::HashMap;

use abridge_llm::Role;

use super::rules;
use super::rules::Rejection;
use super::rules::RewriteTargets;
use crate::error::Place;
use crate::error::SessionError;
use crate::event::Draft;
use crate::event::Event;
use crate::event::EventBody;
use crate::event::Header;
use crate::event::Seq;
use crate::event::SurfaceOp;
use crate::store::SessionStore;
use crate::surface::Surface;

/// How many events a bulk write puts in one batch at most: enough that a
/// write (and its fsync) is rare, few enough that a crash mid-import tears
/// little. A torn batch is set aside whole by `repair` (docs/event-log.md,
/// "A torn tail"), so this bounds what a crash can take out of the log.
pub const WRITE_BATCH_EVENTS: usize = 256;

/// Content bytes past which a bulk write ends a batch: a store encodes a
/// whole batch before writing it, so this bounds that buffer, and a torn
/// batch, whatever the size of single messages.
pub const WRITE_BATCH_BYTES: usize = 1024 * 1024;

/// Whether a batch of `events` events carrying `content_bytes` (see
/// [`EventBody::content_bytes`]) should be written now: the one batch
/// policy of every bulk writer of a log ([`LogWriter`], an import written
/// into a session), so their memory is bounded alike.
pub fn batch_is_full(events: usize, content_bytes: usize) -> bool {
    events >= WRITE_BATCH_EVENTS || content_bytes >= WRITE_BATCH_BYTES
}

/// Parent value meaning "a root".
const NO_PARENT: Seq = Seq::MAX;

/// What the writer remembers of one event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A log-only event or a leaf: not on any surface.
    Log,
    /// A message appended to the surface.
    Append,
    /// A message with another surface operation (kept in `ops`).
    Other,
}

/// The skeleton of the log written so far.
#[derive(Debug, Default)]
struct Skeleton {
    parents: Vec<Seq>,
    kinds: Vec<Kind>,
    /// Replace and rewrite operations, by seq (few: checkpoints, prunes).
    ops: HashMap<Seq, SurfaceOp>,
    /// Each tool message's result call id, by seq.
    tool_ids: HashMap<Seq, Option<Box<str>>>,
}

impl Skeleton {
    fn parent(&self, seq: Seq) -> Option<Seq> {
        let parent = *usize::try_from(seq)
            .ok()
            .and_then(|i| self.parents.get(i))?;
        (parent != NO_PARENT).then_some(parent)
    }

    fn op(&self, seq: Seq) -> Option<SurfaceOp> {
        match usize::try_from(seq).ok().and_then(|i| self.kinds.get(i))? {
            Kind::Log => None,
            Kind::Append => Some(SurfaceOp::Append),
            Kind::Other => self.ops.get(&seq).copied(),
        }
    }

    /// The surface at the end of the path to `leaf`. Every event on it
    /// was checked against its own parent's surface when written, which
    /// is this fold's state at that point, so nothing is checked again.
    fn surface_at(&self, leaf: Option<Seq>) -> Surface {
        let mut path = Vec::new();
        let mut cursor = leaf;
        while let Some(seq) = cursor {
            if path.len() > self.parents.len() {
                break;
            }
            path.push(seq);
            cursor = self.parent(seq);
        }
        let mut surface = Surface::default();
        for seq in path.into_iter().rev() {
            if let Some(op) = self.op(seq) {
                surface.apply(seq, &op);
            }
        }
        surface
    }
}

impl RewriteTargets for Skeleton {
    fn tool_result_id(&self, seq: Seq) -> Option<Option<&str>> {
        self.tool_ids.get(&seq).map(Option::as_deref)
    }
}

/// The store of [`LogWriter::checking`]: takes every batch and keeps none.
#[derive(Debug)]
struct Unwritten;

impl SessionStore for Unwritten {
    fn location(&self) -> String {
        "(checked, not written)".to_string()
    }

    fn load(&mut self) -> Result<Option<crate::store::LoadedLog>, crate::error::StoreError> {
        Ok(None)
    }

    fn create(&mut self, _header: &Header) -> Result<(), crate::error::StoreError> {
        Ok(())
    }

    fn append(&mut self, _events: &[Event]) -> Result<(), crate::error::StoreError> {
        Ok(())
    }

    fn sync(&mut self) -> Result<(), crate::error::StoreError> {
        Ok(())
    }
}

/// A new session written draft by draft without holding its events.
///
/// Each [`push`](LogWriter::push) is checked as an append to a fresh
/// [`Session`](super::Session) would be, then queued; queued events are
/// written in batches, and [`finish`](LogWriter::finish) writes the rest.
/// A draft that is refused is not written and leaves the writer as it
/// was, so the caller may stop there: what was pushed before it is whole
/// in the store once `finish` returns. Open the store with
/// [`Session::open`](super::Session::open) to read the session back.
#[derive(Debug)]
pub struct LogWriter {
    store: Box<dyn SessionStore>,
    skeleton: Skeleton,
    surface: Surface,
    batch: Vec<Event>,
    batch_bytes: usize,
    max_image_pixels: u64,
}

impl LogWriter {
    /// Creates a new session in `store` with `header`.
    ///
    /// # Errors
    /// The store's, for example when a session already exists there.
    pub fn create(mut store: Box<dyn SessionStore>, header: &Header) -> Result<Self, SessionError> {
        store.create(header)?;
        Ok(Self::with_store(store))
    }

    /// A writer that checks drafts as [`push`](LogWriter::push) does and
    /// writes nothing: a first pass that proves a whole stream valid
    /// before any of it reaches a store, at the cost of the skeleton.
    pub fn checking() -> Self {
        Self::with_store(Box::new(Unwritten))
    }

    /// An empty writer over a store already created.
    fn with_store(store: Box<dyn SessionStore>) -> Self {
        LogWriter {
            store,
            skeleton: Skeleton::default(),
            surface: Surface::default(),
            batch: Vec::new(),
            batch_bytes: 0,
            max_image_pixels: abridge_llm::DEFAULT_MAX_IMAGE_PIXELS,
        }
    }

    /// Most pixels an image in a pushed message may claim, as
    /// [`Session::set_max_image_pixels`](super::Session::set_max_image_pixels)
    /// sets for a session's appends. Default
    /// [`DEFAULT_MAX_IMAGE_PIXELS`](abridge_llm::DEFAULT_MAX_IMAGE_PIXELS).
    pub fn set_max_image_pixels(&mut self, limit: u64) {
        self.max_image_pixels = limit;
    }

    /// Events written or queued so far.
    pub fn len(&self) -> usize {
        self.skeleton.parents.len()
    }

    /// Whether nothing was pushed yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Messages on the surface of the newest event's path.
    pub fn surface_len(&self) -> usize {
        self.surface.len()
    }

    /// Checks `draft` and queues it; returns its seq. Writes the queued
    /// batch when it is full.
    ///
    /// # Errors
    /// [`SessionError::Invalid`] naming the draft by its seq (its index
    /// among all pushed), as [`check_drafts`](super::check_drafts) would;
    /// nothing of it is kept. The store's error when a batch fails to
    /// write: the batches before it are in the store.
    pub fn push(&mut self, draft: Draft) -> Result<Seq, SessionError> {
        let seq = self.len() as Seq;
        let invalid = |(field, reason): Rejection| SessionError::Invalid {
            place: Place::Draft {
                index: seq as usize,
            },
            field,
            reason,
        };
        let leaf = seq.checked_sub(1);
        let parent = draft.parent.unwrap_or(leaf);
        rules::check_links(seq, parent, seq).map_err(invalid)?;
        // Another branch: its surface is folded from the skeleton, and
        // kept only once the draft is accepted.
        let branch = (parent != leaf).then(|| self.skeleton.surface_at(parent));
        if let EventBody::Message(m) = &draft.body {
            rules::check_image(m, self.max_image_pixels).map_err(invalid)?;
            let surface = branch.as_ref().unwrap_or(&self.surface);
            rules::check_message(&self.skeleton, surface, seq, m).map_err(invalid)?;
        }
        if let Some(surface) = branch {
            self.surface = surface;
        }
        if let EventBody::Message(m) = &draft.body {
            self.surface.apply(seq, &m.op);
        }
        self.remember(seq, parent, &draft.body);
        let event = Event {
            seq,
            parent,
            time: draft.time.unwrap_or_else(crate::time::now_rfc3339),
            body: draft.body,
        };
        self.batch_bytes += event.body.content_bytes();
        self.batch.push(event);
        if batch_is_full(self.batch.len(), self.batch_bytes) {
            self.write_batch()?;
        }
        Ok(seq)
    }

    /// Writes what is queued and hands the store back.
    ///
    /// # Errors
    /// The store's.
    pub fn finish(mut self) -> Result<Box<dyn SessionStore>, SessionError> {
        self.write_batch()?;
        Ok(self.store)
    }

    fn remember(&mut self, seq: Seq, parent: Option<Seq>, body: &EventBody) {
        let skeleton = &mut self.skeleton;
        skeleton.parents.push(parent.unwrap_or(NO_PARENT));
        let kind = match body {
            EventBody::Message(m) => {
                if m.message.role == Role::Tool {
                    let id = m.message.tool_result_block().map(|b| b.0.into());
                    skeleton.tool_ids.insert(seq, id);
                }
                match m.op {
                    SurfaceOp::Append => Kind::Append,
                    op => {
                        skeleton.ops.insert(seq, op);
                        Kind::Other
                    }
                }
            }
            _ => Kind::Log,
        };
        skeleton.kinds.push(kind);
    }

    fn write_batch(&mut self) -> Result<(), SessionError> {
        if self.batch.is_empty() {
            return Ok(());
        }
        self.store.append(&self.batch)?;
        self.batch.clear();
        self.batch_bytes = 0;
        Ok(())
    }
}
