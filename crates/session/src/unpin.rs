//! Unpins: a pin taken back without touching the log.
//!
//! The log is append-only, so a pin is never edited or removed: an
//! `unpin` event names the pin event (by its seq) and, from there on
//! along the active path, what that pin kept (its message, block or
//! text) is no longer pinned, whichever earlier pin events named the
//! same thing. A later pin of it pins it again. An unpin that names no
//! honoured pin on the active path, or a pin already taken back, is a
//! fault [`Session::pin_faults`] reports (and `check` refuses); it
//! changes nothing.

use serde::Deserialize;
use serde::Serialize;

use crate::Draft;
use crate::Seq;
use crate::Session;

/// Event type of an unpin.
pub const TYPE_UNPIN: &str = "unpin";

/// What an unpin event says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unpin {
    /// The seq of the pin event taken back.
    pub pin: Seq,
}

impl Unpin {
    /// An unpin of the pin event at `pin`.
    pub fn new(pin: Seq) -> Self {
        Unpin { pin }
    }

    /// The unpin event's data.
    pub fn data(&self) -> serde_json::Value {
        serde_json::json!({ "pin": self.pin })
    }

    /// The log event that records it.
    pub fn draft(&self) -> Draft {
        Draft::log(TYPE_UNPIN, self.data())
    }
}

impl Session {
    /// Whether `unpin`, appended now, would be honoured: it must name a
    /// pin event on the active path whose pin is still live.
    ///
    /// # Errors
    /// What is wrong, naming the seq, in words for a person.
    pub fn check_unpin(&self, unpin: &Unpin) -> Result<(), String> {
        self.read_pin_events()
            .unpin_fault(unpin.pin)
            .map_or(Ok(()), Err)
    }
}
