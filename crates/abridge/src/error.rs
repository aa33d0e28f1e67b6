//! The facade's error type.

use abridge_compact::check::PairingFault;
use abridge_compact::host::CompactError;
use abridge_llm::LlmError;
use abridge_session::Seq;
use abridge_session::SessionError;

use crate::settings::SettingsError;

/// What can go wrong in the harness.
///
/// On the turn path the two error types convert both ways: a model
/// call's [`LlmError`] becomes [`HarnessError::Llm`] with `?` (so one
/// function can build the request and send it), and
/// [`into_llm`](Self::into_llm) or [`as_llm`](Self::as_llm) take it back
/// out for [`Harness::on_error`](crate::Harness::on_error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    /// The settings cannot work (with this model's window).
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// The session rejected an event or could not write it.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// Compaction could not write its events.
    #[error(transparent)]
    Compact(#[from] CompactError),
    /// The model call failed; hand it to `Harness::on_error`.
    #[error(transparent)]
    Llm(#[from] LlmError),
    /// A message handed to `Harness::append` or `Harness::record` would
    /// break the tool-pairing rule `abridge check` enforces (a result for a
    /// call no earlier message makes, a call id already used, a second
    /// result for one call). Nothing was written.
    #[error("the message at surface position {position} was refused: {fault}; nothing was written")]
    Pairing {
        /// The surface position the message would have taken.
        position: usize,
        /// How it breaks the rule, naming the call id.
        fault: PairingFault,
    },
    /// `Harness::complete` needs a client.
    #[error("the harness has no client; build it with .client(...)")]
    NoClient,
    /// The kept-counts file could not be written (see
    /// `HarnessBuilder::kept_counts`).
    #[error(transparent)]
    Counts(#[from] abridge_meter::KeptError),
    /// A pin was refused: its seq is not a message on the active path, or
    /// its text is empty. Nothing was written.
    #[error("pin refused: {reason}; nothing was written")]
    Pin {
        /// What was wrong, naming the seq when there is one.
        reason: String,
    },
    /// A snapcompact checkpoint's frames cannot be drawn.
    #[error("checkpoint {seq}: {reason}")]
    Frames {
        /// The checkpoint's seq.
        seq: Seq,
        /// Why.
        reason: String,
    },
}

impl HarnessError {
    /// The model call's error, when this is one (for
    /// [`Harness::on_error`](crate::Harness::on_error)).
    pub fn as_llm(&self) -> Option<&LlmError> {
        match self {
            HarnessError::Llm(error) => Some(error),
            _ => None,
        }
    }

    /// The model call's error, or this error back when it is not one.
    ///
    /// # Errors
    /// `self`, unchanged, when it is not [`HarnessError::Llm`].
    pub fn into_llm(self) -> Result<LlmError, Self> {
        match self {
            HarnessError::Llm(error) => Ok(error),
            other => Err(other),
        }
    }
}
