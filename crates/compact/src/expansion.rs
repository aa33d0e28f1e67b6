//! Send-time expansion: how a checkpoint that stores more than text
//! becomes what a request sends.
//!
//! The log keeps what a method wrote, in the form that is cheapest to keep
//! and safe to show anywhere: snapcompact stores the source text of its
//! frames, never PNG bytes; provider-native compaction stores the
//! provider's opaque items beside a text summary. Turning that back into
//! request content is the method's own knowledge, so the method's crate
//! implements [`CheckpointExpansion`] and the host registers it beside the
//! method; the request builder only asks each registered expansion in turn
//! and knows no backend.

use std::fmt::Debug;

use abridge_llm::Message;
use abridge_session::Seq;
use abridge_session::Session;

/// A message of the surface, as an expansion sees it.
#[derive(Debug, Clone, Copy)]
pub struct SurfaceMessage<'a> {
    /// The session the message is on (for its `compaction/summary`
    /// event, see [`summary_of_checkpoint`](crate::host::summary_of_checkpoint)).
    pub session: &'a Session,
    /// The message's seq.
    pub seq: Seq,
    /// The message as the log stores it.
    pub message: &'a Message,
}

/// Where a request goes, for expansions that replay provider data: the
/// wire format the client speaks and the account it speaks for. Given
/// only when both are known; a request for an unknown destination (or a
/// plain view of the surface) gets `None`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Destination<'a> {
    /// The provider whose native items the client's wire format carries
    /// (`LlmClient::native_dialect`).
    pub dialect: &'a str,
    /// The endpoint and credentials of the client
    /// (`LlmClient::native_account`).
    pub account: &'a str,
}

/// A checkpoint that cannot be expanded: its record is missing or
/// unreadable, or drawing it failed. The request is refused rather than
/// sent with a checkpoint the model cannot read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct ExpansionError {
    /// What went wrong, in words that name the record.
    pub reason: String,
}

impl ExpansionError {
    /// An error saying `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        ExpansionError {
            reason: reason.into(),
        }
    }
}

/// How one method's checkpoints expand into request content.
///
/// # Contract
///
/// - [`expand`](Self::expand) is asked for every message of the surface,
///   in order, and answers `Ok(None)` for any message it does not own
///   (most of them): it must be cheap for those, checking the message's
///   origin before anything else.
/// - The first expansion that answers `Some` decides the message; the
///   others are not asked.
/// - It never changes the log and never calls out: a request is built on
///   every turn.
/// - The same message, session and destination give the same answer, so
///   a request built twice is the same request.
pub trait CheckpointExpansion: Send + Sync + Debug {
    /// The message as the request to `destination` should carry it, or
    /// `None` to leave it as it is.
    ///
    /// # Errors
    /// [`ExpansionError`] when the message is this method's checkpoint but
    /// cannot be expanded.
    fn expand(
        &self,
        at: SurfaceMessage<'_>,
        destination: Option<Destination<'_>>,
    ) -> Result<Option<Message>, ExpansionError>;
}
