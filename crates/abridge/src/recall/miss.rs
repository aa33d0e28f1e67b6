//! Why a recall call found nothing to show: typed for code, and worded for
//! the model, which gets the text as an ordinary tool result and can try
//! again (a miss never ends the turn).

use abridge_session::Seq;

/// What was wrong with a recall call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecallMiss {
    /// The arguments do not fit the schema.
    #[error("recall needs exactly one of \"ref\", \"query\", \"toc\" or \"path\": {0}")]
    BadArguments(String),
    /// The reference does not parse.
    #[error("{0}")]
    BadReference(String),
    /// No event has that seq.
    #[error("there is no recall://{seq} in this session (its seqs run from 0 to {last})")]
    NoEvent {
        /// The seq asked for.
        seq: Seq,
        /// The session's last seq.
        last: u64,
    },
    /// The event is bookkeeping, not a message.
    #[error("recall://{seq} is a {kind} event, which holds no message to read")]
    NotMessage {
        /// The seq asked for.
        seq: Seq,
        /// Its event type.
        kind: String,
    },
    /// A part starts past the end of the event's text.
    #[error(
        "recall://{seq} has {len} characters, so the part starting at {start} is empty; read recall://{seq} instead"
    )]
    PartOutOfRange {
        /// The event.
        seq: Seq,
        /// Where the part was asked to start.
        start: usize,
        /// The text's length in characters.
        len: usize,
    },
    /// A range holds no message on any one branch.
    #[error("recall://{first}-{last} holds no messages")]
    EmptyRange {
        /// First seq.
        first: Seq,
        /// Last seq.
        last: Seq,
    },
    /// An artifact reference with no store to read it from.
    #[error("{reference} cannot be read: this session has no artifact store configured")]
    NoArtifactStore {
        /// The reference.
        reference: String,
    },
    /// The artifact store could not give it.
    #[error("{reference} cannot be read: {reason}")]
    Artifact {
        /// The reference.
        reference: String,
        /// The store's error.
        reason: String,
    },
    /// A page past the last.
    #[error("{what} has {pages} page(s); page {page} does not exist")]
    NoPage {
        /// What was paged.
        what: String,
        /// The page asked for.
        page: usize,
        /// How many there are.
        pages: usize,
    },
    /// No read of that path is in the log.
    #[error("no read of {path} is in this session; read the file with your own tools")]
    NoRead {
        /// The path asked for.
        path: String,
    },
    /// A query with no searchable word.
    #[error("{}", super::EMPTY_QUERY)]
    EmptyQuery,
}
