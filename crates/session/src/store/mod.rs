//! Where a session's events live.

mod blob;
#[cfg(any(test, feature = "testing"))]
pub mod conformance;
mod fs;
mod jsonl;
mod line;
mod memory;
mod read;

pub use blob::BLOB_THRESHOLD;
pub use blob::blob_sha256;
pub use blob::externalize_event;
pub use blob::resolve_with;
pub use jsonl::FsyncPolicy;
pub use jsonl::JsonlOptions;
pub use jsonl::JsonlStore;
pub use line::LineError;
pub use line::decode_event;
pub use line::encode_event;
pub use memory::MemoryStore;

use std::fmt::Debug;

use crate::error::StoreError;
use crate::event::Event;
use crate::event::Header;

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

/// Repairs and skips made while loading, so nothing is dropped silently.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadReport {
    /// A final line cut short by a crash, removed from the file.
    pub torn_tail: Option<TornTail>,
    /// Lines skipped in salvage mode.
    pub skipped: Vec<SkippedLine>,
    /// Image blobs resolved from beside the session.
    pub blobs_resolved: usize,
}

/// A torn final line that was cut off on open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// Its 1-based line number.
    pub line: u64,
    /// How many bytes were cut.
    pub bytes: u64,
}

/// A line salvage mode skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
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
///   batch or none of it (a torn last line is cut on the next load), and
///   once `append` returns `Ok` under a durable fsync policy the batch
///   survives a crash.
/// - Events are written in the order given and never changed afterwards.
///   Events whose `LogEvent::raw` is set are written back byte for byte.
/// - `load` returns events in file order; the session validates them. A
///   store must not drop a line silently: repairs and skips go into the
///   [`LoadReport`], and anything else is an error naming the line.
/// - One writer at a time: a store that can be shared between processes
///   refuses a second writer with [`StoreError::Locked`].
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
}
