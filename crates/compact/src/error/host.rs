//! What the host's transaction and passes can fail with.

use abridge_llm::Usage;
use abridge_session::Seq;
use abridge_session::SessionError;
use serde::Deserialize;
use serde::Serialize;

use super::ErrorKind;
use super::MethodError;

/// Why a compaction did not land: what [`attempt`](crate::host::attempt),
/// the transaction and a host's passes return.
///
/// Every variant except [`CompactError::Persistence`] leaves the surface
/// exactly as it was: a failed compaction writes at most a
/// `compaction/end` event carrying this error's text. A method's own
/// failure arrives as [`CompactError::Method`], its text and kind
/// unchanged. Callers that try several methods in turn fall through on
/// every failure except `Busy`, `Persistence` and a cancelled method,
/// which say the session itself cannot take a compaction right now (see
/// [`stops_fallthrough`](Self::stops_fallthrough)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompactError {
    /// Another compaction of this session is in flight (its
    /// `compaction/start` is unmatched and its ticket is alive). Wait for
    /// it, or drop its ticket.
    #[error(
        "compaction {compaction_id} (started at seq {start_seq}) is still running; wait for it to end"
    )]
    Busy {
        /// The running compaction.
        compaction_id: String,
        /// Its `compaction/start` event.
        start_seq: Seq,
    },
    /// The span the plan covered is no longer on the surface as planned
    /// (a message was hidden, rewritten or the branch changed while the
    /// method ran). Plan again.
    #[error("the session changed while compacting: {reason}")]
    Changed {
        /// What differs, naming positions and seqs.
        reason: String,
    },
    /// The output would reclaim less than the policy's floor, and less
    /// than the context it leaves: too little to pay for the prompt-cache
    /// break that changing the history causes (the next request writes
    /// the context from the change on into the cache again).
    #[error(
        "method {method}: reclaims only {reclaimed} tokens, under the floor of {floor} that pays for the prompt-cache break; rejected"
    )]
    TooLittle {
        /// The method.
        method: String,
        /// Tokens the output would reclaim.
        reclaimed: u64,
        /// The least a landing must reclaim.
        floor: u64,
    },
    /// The output would leave the context above the policy's ceiling (the
    /// window): the next request still could not be sent, so the landing
    /// would break the prompt cache for nothing.
    #[error(
        "method {method}: would leave {after} tokens, over the {ceiling}-token window; rejected"
    )]
    OverWindow {
        /// The method.
        method: String,
        /// The context the landing would leave.
        after: u64,
        /// The most a landing may leave.
        ceiling: u64,
    },
    /// The method's output cannot be committed (a rewrite of a seq that is
    /// not a visible tool result, an empty checkpoint, a region that splits
    /// a tool call from its result).
    #[error("cannot commit: {reason}")]
    Commit {
        /// What is wrong, naming the seq or span.
        reason: String,
    },
    /// The session log refused or failed the write; the in-memory session
    /// was rolled back by the log.
    #[error("session write failed: {0}")]
    Persistence(#[from] SessionError),
    /// Every method tried failed; each failure is listed in order.
    #[error("every method failed: {}", failures.iter().map(|f| format!("{}: {}", f.method, f.message)).collect::<Vec<_>>().join("; "))]
    AllFailed {
        /// What each method did, in the order tried.
        failures: Vec<MethodFailure>,
    },
    /// The method failed (or the host ended it the way a method ends:
    /// cancelled, unavailable, nothing to compact). Its text and kind are
    /// the method error's; the method's name is in its text.
    #[error(transparent)]
    Method(#[from] MethodError),
}

impl CompactError {
    /// What kind of failure this is, written into `compaction/end`
    /// events and reports: a method's failure keeps its own kind.
    pub fn kind(&self) -> ErrorKind {
        match self {
            CompactError::Busy { .. } => ErrorKind::Busy,
            CompactError::Changed { .. } => ErrorKind::Changed,
            CompactError::TooLittle { .. } => ErrorKind::TooLittle,
            CompactError::OverWindow { .. } => ErrorKind::OverWindow,
            CompactError::Commit { .. } => ErrorKind::Commit,
            CompactError::Persistence(_) => ErrorKind::Persistence,
            CompactError::AllFailed { .. } => ErrorKind::AllFailed,
            CompactError::Method(error) => error.kind(),
        }
    }

    /// What the failed attempt's model calls cost, when the method said
    /// (see [`MethodError::with_usage`]).
    pub fn usage(&self) -> Option<&Usage> {
        match self {
            CompactError::Method(error) => error.usage(),
            _ => None,
        }
    }

    /// The method's failure, without any attached usage, when this is
    /// one.
    pub fn method_error(&self) -> Option<&MethodError> {
        match self {
            CompactError::Method(error) => Some(error.inner()),
            _ => None,
        }
    }

    /// True when trying the next method cannot help either: the session
    /// is busy or cannot be written, or the compaction was cancelled.
    pub fn stops_fallthrough(&self) -> bool {
        match self {
            CompactError::Busy { .. } | CompactError::Persistence(_) => true,
            CompactError::Method(error) => error.stops_fallthrough(),
            _ => false,
        }
    }

    /// The compaction was cancelled by `by` (a hook, the caller): ended
    /// the way a method's cancel ends it.
    pub fn cancelled(by: impl Into<String>) -> Self {
        CompactError::Method(MethodError::Cancelled { by: by.into() })
    }

    /// Nothing to compact, for `reason`: ended the way a method that
    /// finds nothing ends it.
    pub fn nothing_to_compact(reason: impl Into<String>) -> Self {
        CompactError::Method(MethodError::NothingToCompact {
            reason: reason.into(),
        })
    }
}

/// One method that did not land in a pass: which, what kind of failure,
/// and the message for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MethodFailure {
    /// The method's name.
    pub method: String,
    /// What kind of failure; match on this, not on `message`.
    pub kind: ErrorKind,
    /// What happened, for people.
    pub message: String,
}

impl MethodFailure {
    /// A failure of `kind` with `message`.
    pub fn new(method: impl Into<String>, kind: ErrorKind, message: impl Into<String>) -> Self {
        MethodFailure {
            method: method.into(),
            kind,
            message: message.into(),
        }
    }

    /// The failure `error` describes, met by `method`.
    pub fn from_error(method: impl Into<String>, error: &CompactError) -> Self {
        MethodFailure::new(method, error.kind(), error.to_string())
    }
}
