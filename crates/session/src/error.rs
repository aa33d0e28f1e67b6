//! Errors of the session log.

use std::path::PathBuf;

use crate::event::Seq;

/// Where a rejected event came from: a live append, or a line of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// Draft number `index` (from 0) of a live append batch.
    Draft {
        /// Index in the batch.
        index: usize,
    },
    /// A line of a stored log (line 1 is the header).
    Line {
        /// The store's location (a path, or `memory`).
        location: String,
        /// 1-based line number.
        line: u64,
    },
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Draft { index } => write!(f, "draft {index} of the batch"),
            Place::Line { location, line } => write!(f, "{location}:{line}"),
        }
    }
}

/// A failure of the session log.
///
/// Every variant leaves the log as it was: validation happens before any
/// byte is written, and a failed write is rolled back in memory.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// An event broke a rule of the log; nothing was written.
    #[error("{place}: field `{field}`: {reason}")]
    Invalid {
        /// Which event.
        place: Place,
        /// The offending field (`seq`, `parent`, `data.op`, ...).
        field: &'static str,
        /// What is wrong, naming the values.
        reason: String,
    },
    /// A seq asked about does not exist.
    #[error("no event with seq {seq} (the log has {len} events)")]
    UnknownSeq {
        /// The seq asked for.
        seq: Seq,
        /// Events in the log.
        len: usize,
    },
    /// The store failed; the in-memory session was rolled back to match it.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A failure of a [`SessionStore`](crate::SessionStore).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// An I/O operation failed.
    #[error("{}: cannot {op}: {source}", path.display())]
    Io {
        /// The file involved.
        path: PathBuf,
        /// What we were doing (`open`, `append`, `sync`, ...).
        op: &'static str,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Another writer holds the session.
    #[error("{}: another process is writing this session (lock {} is held); close it or open read-only", path.display(), lock.display())]
    Locked {
        /// The session file.
        path: PathBuf,
        /// The lock file.
        lock: PathBuf,
    },
    /// A line before the last one does not parse. Nothing was changed;
    /// `abridge repair --salvage-to NEW` (or [`JsonlOptions::salvage`](crate::JsonlOptions::salvage))
    /// keeps the lines that parse.
    #[error("{}:{line}:{column}: {reason}; nothing was changed: `abridge repair {} --salvage-to NEW` copies the lines that parse into a new session", path.display(), path.display())]
    Corrupt {
        /// The session file.
        path: PathBuf,
        /// 1-based line.
        line: u64,
        /// 1-based column (bytes) where parsing failed.
        column: u64,
        /// What is wrong.
        reason: String,
    },
    /// The log ends in a write a crash cut short (see
    /// [`TornTail`](crate::torn::TornTail)), and the store was opened to write:
    /// appending after it would bury it mid-file, and cutting it would
    /// destroy bytes, so the open is refused and nothing changes. Open
    /// read-only to read the complete part, or set the torn bytes aside
    /// with [`JsonlStore::set_aside_torn`](crate::JsonlStore::set_aside_torn)
    /// (what `abridge repair` runs).
    #[error("{}: the log ends in a write a crash cut short ({torn}); nothing was written: `abridge repair {}` moves those bytes to a `{}N` file beside it, then the log opens", path.display(), path.display(), crate::torn::TORN_SUFFIX)]
    Torn {
        /// The session file.
        path: PathBuf,
        /// What is torn.
        torn: crate::torn::TornTail,
    },
    /// A line exceeds the configured maximum.
    #[error("{}:{line}: line is {len} bytes, over the limit of {limit} bytes", path.display())]
    LineTooLong {
        /// The session file.
        path: PathBuf,
        /// 1-based line.
        line: u64,
        /// Its length (at least; reading stops counting at the limit's end
        /// of line).
        len: u64,
        /// The limit.
        limit: u64,
    },
    /// The first line is not a header we can read.
    #[error("{}:1: bad header: {reason}", path.display())]
    BadHeader {
        /// The session file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// An image blob the log refers to is missing or damaged.
    #[error("{}: blob {sha256} is missing or damaged: {reason}", path.display())]
    Blob {
        /// The blob file.
        path: PathBuf,
        /// Its expected hash.
        sha256: String,
        /// What is wrong.
        reason: String,
    },
    /// `create` on a store that already holds a session.
    #[error("{location}: a session already exists here")]
    AlreadyExists {
        /// The store's location.
        location: String,
    },
    /// An append whose first seq is not the log's next one: another writer
    /// appended first. Nothing of the batch was written; reload and retry.
    #[error(
        "{location}: another writer appended first: the batch starts at seq {expected} but the log's next seq is {found}; reload the session"
    )]
    Conflict {
        /// The store's location.
        location: String,
        /// The seq the batch starts at.
        expected: Seq,
        /// The log's actual next seq.
        found: Seq,
    },
    /// Another process holds the session's compaction guard (see
    /// `SessionStore::hold_compaction`): a compaction is running there.
    #[error(
        "{location}: compaction {compaction_id} holds this session elsewhere; wait for it to end"
    )]
    Held {
        /// The store's location.
        location: String,
        /// The compaction holding it (empty when unknown).
        compaction_id: String,
    },
    /// A compaction guard this process held lapsed (its lease expired), so
    /// another process may have taken it: the compaction must not commit.
    #[error("{location}: the hold of compaction {compaction_id} lapsed; it must not commit")]
    HoldLost {
        /// The store's location.
        location: String,
        /// The compaction whose hold lapsed.
        compaction_id: String,
    },
    /// An append or load on a store with no session yet.
    #[error("{location}: no session has been created here")]
    NotCreated {
        /// The store's location.
        location: String,
    },
}
