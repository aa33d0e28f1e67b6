//! The facade's error type.

use abridge_compact::CompactError;
use abridge_llm::LlmError;
use abridge_session::Seq;
use abridge_session::SessionError;

use crate::settings::SettingsError;

/// What can go wrong in the harness.
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
    /// `Harness::complete` needs a client.
    #[error("the harness has no client; build it with .client(...)")]
    NoClient,
    /// The kept-counts file could not be written (see
    /// `HarnessBuilder::kept_counts`).
    #[error(transparent)]
    Counts(#[from] abridge_meter::KeptError),
    /// A snapcompact checkpoint's frames cannot be drawn.
    #[error("checkpoint {seq}: {reason}")]
    Frames {
        /// The checkpoint's seq.
        seq: Seq,
        /// Why.
        reason: String,
    },
}
