//! Pins in the proxy's sessions: what puts them there, and where a
//! rebuilt request carries them.
//!
//! - The agent's instruction files are pinned as they arrive, as an
//!   importer pins them ([`abridge::import::instruction_pins`]): Claude
//!   Code's CLAUDE.md reminder blocks and Codex's AGENTS.md message. The
//!   agent does not know the proxy compacted, so it never sends them
//!   again; without a pin a checkpoint would hide them for good. These
//!   are message pins, on the surface until a compaction hides them, so
//!   a request the proxy has not rebuilt carries them as the agent sent
//!   them. (`abridge pin` on a proxy's log is read by `stats`, `report`
//!   and `context`, not by a running proxy, which keeps its sessions in
//!   memory.)
//! - A rebuilt request carries the hidden pins exactly once, in the
//!   message and at the place the request builder uses
//!   ([`abridge::hidden_pins`]): the proxy walks the surface itself, to
//!   keep the agent's bytes, so it asks for the message and its position
//!   rather than building either.

use abridge::Harness;
use abridge::HarnessError;
use abridge_llm::Message;
use abridge_session::Seq;
use abridge_session::Session;

/// Appends `message` to the log and pins the instruction files it
/// carries; returns its seq.
///
/// # Errors
/// When the log refuses the message or a pin.
pub(crate) fn append_marked(harness: &Harness, message: Message) -> Result<Seq, HarnessError> {
    // Found before the append, which takes the message; each names the
    // message's seq once it has one.
    let pins = abridge::import::instruction_pins(&message, 0);
    let seq = harness.append(message)?;
    for mut pin in pins {
        pin.seq = Some(seq);
        harness.pin(&pin)?;
    }
    Ok(seq)
}

/// The message carrying the hidden pins, waiting for its place in a
/// rebuilt history.
#[derive(Debug)]
pub(crate) struct HiddenPins {
    at: usize,
    message: Option<Message>,
}

impl HiddenPins {
    /// The hidden pins of `session` now, if any.
    pub(crate) fn of(session: &Session) -> Self {
        match abridge::hidden_pins(session) {
            Some((at, message)) => HiddenPins {
                at,
                message: Some(message),
            },
            None => HiddenPins {
                at: 0,
                message: None,
            },
        }
    }

    /// Before the surface message at `index` goes out: the pinned message
    /// joins `loose` (the messages abridge wrote, encoded together) when
    /// its place is here.
    pub(crate) fn before(&mut self, index: usize, loose: &mut Vec<Message>) {
        if index >= self.at {
            loose.extend(self.message.take());
        }
    }

    /// After the walk: a surface of leading system messages only puts it
    /// last.
    pub(crate) fn rest(self, loose: &mut Vec<Message>) {
        loose.extend(self.message);
    }
}
