//! Where a session's events live.

mod blob;
#[cfg(any(test, feature = "testing"))]
pub mod conformance;
mod fs;
mod jsonl;
mod line;
mod memory;
mod read;
mod set_aside;

pub use blob::BAD_BLOB_REFERENCE;
pub use blob::BLOB_THRESHOLD;
pub use blob::blob_sha256;
pub use blob::externalize_event;
pub use blob::is_blob_key;
pub use blob::resolve_with;
pub use jsonl::FsyncPolicy;
pub use jsonl::JsonlOptions;
pub use jsonl::JsonlStore;
pub use line::LineError;
pub use line::decode_event;
pub use line::encode_event;
pub use memory::MemoryStore;
pub use set_aside::SetAside;

use std::fmt::Debug;

use crate::error::StoreError;
use crate::event::Event;
use crate::event::Header;
use crate::event::Seq;
use crate::torn::TornTail;

/// What a store found on load.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedLog {
    /// The header line.
    pub header: Header,
    /// Every event, in file order, not yet validated by the session.
    pub events: Vec<Event>,
    /// Repairs and skips made while reading.
    pub report: LoadReport,
}

/// What loading found beside the events, so nothing is dropped silently.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// The end of the file a crash cut short, left out of the events and
    /// left on disk (only a reader loads a torn log; a writer refuses it).
    pub torn_tail: Option<TornTail>,
    /// Lines skipped in salvage mode.
    pub skipped: Vec<SkippedLine>,
    /// Image blobs resolved from beside the session.
    pub blobs_resolved: usize,
}

/// A line salvage mode skipped.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SkippedLine {
    /// 1-based line number.
    pub line: u64,
    /// Why it was skipped.
    pub reason: String,
}

/// Storage for one session's log.
///
/// # Contract
///
/// - `append` is atomic per call: after a crash, a reader sees all of the
///   batch or none of it (a torn tail is reported on the next load, never
///   silently cut; see [`JsonlStore`]), and
///   once `append` returns `Ok` under a durable fsync policy the batch
///   survives a crash.
/// - Events are written in the order given and never changed afterwards.
///   Events whose `LogEvent::raw` is set are written back byte for byte.
/// - `load` returns events in file order; the session validates them. A
///   store must not drop a line silently: repairs and skips go into the
///   [`LoadReport`], and anything else is an error naming the line.
/// - One writer at a time: a store that can be shared between processes
///   refuses a second writer with [`StoreError::Locked`], or (a shared
///   store such as PostgreSQL) lets several writers hold it and refuses a
///   batch that does not start at the log's next seq with
///   [`StoreError::Conflict`], writing nothing of it.
/// - A store with several writers answers [`head`](Self::head) and
///   [`load_from`](Self::load_from) so a session can catch up with what
///   the others appended, and guards compactions across processes with
///   [`hold_compaction`](Self::hold_compaction). The defaults describe a
///   store with one writer: nothing to catch up with, no hold needed
///   beyond the session's own leases.
pub trait SessionStore: Send + Debug {
    /// Where the log lives, for error messages (a path, or `memory`).
    fn location(&self) -> String;

    /// Reads the whole log. `Ok(None)` when no session was created here yet.
    ///
    /// # Errors
    /// I/O failures, corruption, a bad header.
    fn load(&mut self) -> Result<Option<LoadedLog>, StoreError>;

    /// Starts a new log with `header`.
    ///
    /// # Errors
    /// [`StoreError::AlreadyExists`] when a log is already there.
    fn create(&mut self, header: &Header) -> Result<(), StoreError>;

    /// Appends a batch, atomically.
    ///
    /// # Errors
    /// I/O failures; the batch is then not in the log.
    fn append(&mut self, events: &[Event]) -> Result<(), StoreError>;

    /// Makes every appended event durable now, whatever the fsync policy.
    ///
    /// # Errors
    /// I/O failures.
    fn sync(&mut self) -> Result<(), StoreError>;

    /// The seq the next appended event takes, as the store sees it now,
    /// other writers included: a cheap check of whether a session in
    /// memory is behind. `None` (the default) for a store that admits one
    /// writer, whose session in memory is therefore always current.
    ///
    /// # Errors
    /// I/O failures; [`StoreError::NotCreated`].
    fn head(&mut self) -> Result<Option<Seq>, StoreError> {
        Ok(None)
    }

    /// The events from seq `from` on, in order (empty when the log is no
    /// longer), with blobs resolved as [`load`](Self::load) resolves them.
    /// The default loads the whole log and keeps its tail; a store with
    /// several writers reads only the tail.
    ///
    /// # Errors
    /// As [`load`](Self::load); [`StoreError::NotCreated`] when there is
    /// no session.
    fn load_from(&mut self, from: Seq) -> Result<Vec<Event>, StoreError> {
        let location = self.location();
        let loaded = self.load()?.ok_or(StoreError::NotCreated { location })?;
        let skip = usize::try_from(from).unwrap_or(usize::MAX);
        Ok(loaded.events.into_iter().skip(skip).collect())
    }

    /// Takes this store's cross-process hold on compaction
    /// `compaction_id` of the session, kept until the returned hold drops.
    /// While it is held no other process can take one for the same session,
    /// so two workers never compact a session at once. `None` (the
    /// default): the store admits one writer, and the session's
    /// [`Leases`](crate::Leases) are all the guard there is.
    ///
    /// # Errors
    /// [`StoreError::Held`] while another live hold covers the session;
    /// I/O failures.
    fn hold_compaction(
        &mut self,
        compaction_id: &str,
    ) -> Result<Option<Box<dyn CompactionHold>>, StoreError> {
        let _ = compaction_id;
        Ok(None)
    }

    /// True when a live hold (of any process) covers compaction
    /// `compaction_id`: its `compaction/start` is in flight elsewhere and
    /// must not be closed as stale. Always false by default.
    ///
    /// # Errors
    /// I/O failures.
    fn compaction_held(&mut self, compaction_id: &str) -> Result<bool, StoreError> {
        let _ = compaction_id;
        Ok(false)
    }
}

/// A held cross-process compaction guard (see
/// [`SessionStore::hold_compaction`]). Dropping it frees the hold; a
/// process that dies without dropping it loses it once its lease lapses.
pub trait CompactionHold: Send + Sync + Debug {
    /// Confirms the hold is still this holder's: the check made just
    /// before a compaction commits.
    ///
    /// # Errors
    /// [`StoreError::HoldLost`] when it lapsed and may have been taken
    /// over; I/O failures.
    fn check(&self) -> Result<(), StoreError>;
}

impl<S: SessionStore + ?Sized> SessionStore for Box<S> {
    fn location(&self) -> String {
        (**self).location()
    }
    fn load(&mut self) -> Result<Option<LoadedLog>, StoreError> {
        (**self).load()
    }
    fn create(&mut self, header: &Header) -> Result<(), StoreError> {
        (**self).create(header)
    }
    fn append(&mut self, events: &[Event]) -> Result<(), StoreError> {
        (**self).append(events)
    }
    fn sync(&mut self) -> Result<(), StoreError> {
        (**self).sync()
    }
    fn head(&mut self) -> Result<Option<Seq>, StoreError> {
        (**self).head()
    }
    fn load_from(&mut self, from: Seq) -> Result<Vec<Event>, StoreError> {
        (**self).load_from(from)
    }
    fn hold_compaction(
        &mut self,
        compaction_id: &str,
    ) -> Result<Option<Box<dyn CompactionHold>>, StoreError> {
        (**self).hold_compaction(compaction_id)
    }
    fn compaction_held(&mut self, compaction_id: &str) -> Result<bool, StoreError> {
        (**self).compaction_held(compaction_id)
    }
}
