//! Pinning: what a host calls to keep a message or a text in front of the
//! model through every compaction (see the request builder's guarantee in
//! `request/pins.rs`).

use abridge_compact::host::lock_session;
use abridge_session::ActivePin;
use abridge_session::Pin;
use abridge_session::Seq;
use abridge_session::Unpin;

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
        self.pin(&Pin::message(seq, USER_PIN))
    }

    /// Pins a free text (a standing instruction such as "never push to
    /// main"): every request carries it, verbatim. Returns the pin
    /// event's seq.
    ///
    /// # Errors
    /// [`HarnessError::Pin`] for an empty text; a store error when the log
    /// cannot be written. Nothing is written on an error.
    pub fn pin_text(&self, text: impl Into<String>) -> Result<Seq, HarnessError> {
        self.pin(&Pin::text(text, USER_PIN))
    }

    /// Writes `pin` after checking it ([`Session::check_pin`](abridge_session::Session::check_pin)).
    ///
    /// # Errors
    /// As [`pin_message`](Self::pin_message).
    pub fn pin(&self, pin: &Pin) -> Result<Seq, HarnessError> {
        let mut session = lock_session(self.session());
        session
            .check_pin(pin)
            .map_err(|reason| HarnessError::Pin { reason })?;
        let seq = session.append(pin.draft())?;
        drop(session);
        self.note_activity(std::time::Instant::now());
        Ok(seq)
    }

    /// Takes back the pin written at `pin` (the seq
    /// [`pin_message`](Self::pin_message) or [`pin_text`](Self::pin_text)
    /// returned, or a pin an importer wrote): an `unpin` event naming it,
    /// after which no request carries what it kept unless it is pinned
    /// again. The pin event stays in the log. Returns the unpin event's
    /// seq.
    ///
    /// # Errors
    /// [`HarnessError::Unpin`] when `pin` is not a pin on the active path
    /// or is already taken back; a store error when the log cannot be
    /// written. Nothing is written on an error.
    pub fn unpin(&self, pin: Seq) -> Result<Seq, HarnessError> {
        let unpin = Unpin::new(pin);
        let mut session = lock_session(self.session());
        session
            .check_unpin(&unpin)
            .map_err(|reason| HarnessError::Unpin { reason })?;
        let seq = session.append(unpin.draft())?;
        drop(session);
        self.note_activity(std::time::Instant::now());
        Ok(seq)
    }

    /// The pins on the active path, oldest first (see
    /// [`Session::pins`](abridge_session::Session::pins)).
    pub fn pins(&self) -> Vec<ActivePin> {
        lock_session(self.session()).pins()
    }
}
