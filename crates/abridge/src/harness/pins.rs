//! Pinning: what a host calls to keep a message or a text in front of the
//! model through every compaction (see the request builder's guarantee in
//! `request/pins.rs`).

use abridge_compact::lock_session;
use abridge_session::ActivePin;
use abridge_session::Pin;
use abridge_session::Seq;

use crate::error::HarnessError;

/// The origin a host's own pins are recorded under.
pub const USER_PIN: &str = "user";

impl super::Harness {
    /// Pins the message at `seq`: from now on every request carries its
    /// text, on the surface while it is there and in the pinned message
    /// once compaction hides it. Returns the pin event's seq.
    ///
    /// # Errors
    /// [`HarnessError::Pin`] when `seq` is not a message on the active
    /// path or has no text; a store error when the log cannot be written.
    /// Nothing is written on an error.
    pub fn pin_message(&self, seq: Seq) -> Result<Seq, HarnessError> {
        let mut session = lock_session(self.session());
        let on_path = session.active_path().contains(&seq);
        let message =
            session
                .message(seq)
                .filter(|_| on_path)
                .ok_or_else(|| HarnessError::Pin {
                    reason: format!("seq {seq} is not a message on the active path"),
                })?;
        if abridge_session::pinned_text(message).trim().is_empty() {
            return Err(HarnessError::Pin {
                reason: format!("the message at seq {seq} has no text to pin"),
            });
        }
        Ok(session.append(Pin::message(seq, USER_PIN).draft())?)
    }

    /// Pins a free text (a standing instruction such as "never push to
    /// main"): every request carries it, verbatim. Returns the pin
    /// event's seq.
    ///
    /// # Errors
    /// [`HarnessError::Pin`] for an empty text; a store error when the log
    /// cannot be written. Nothing is written on an error.
    pub fn pin_text(&self, text: impl Into<String>) -> Result<Seq, HarnessError> {
        let text = text.into();
        if text.trim().is_empty() {
            return Err(HarnessError::Pin {
                reason: "the text is empty".to_string(),
            });
        }
        Ok(lock_session(self.session()).append(Pin::text(text, USER_PIN).draft())?)
    }

    /// The pins on the active path, oldest first (see
    /// [`Session::pins`](abridge_session::Session::pins)).
    pub fn pins(&self) -> Vec<ActivePin> {
        lock_session(self.session()).pins()
    }
}
