//! The host's guarantee for pins: every request carries every pin on the
//! active path, verbatim, exactly once, whichever methods have run.
//!
//! No compaction method knows about pins. A pin whose message is still on
//! the surface reaches the model there; every other one (hidden by a
//! checkpoint or frames, rewritten by pruning or masking, or a pin of
//! free text) goes in the one message [`Session::pinned_message`] builds,
//! placed after the leading system and developer messages, where it
//! changes only when a pin is hidden or added (the prompt cache's prefix
//! breaks there, as a checkpoint breaks it anyway). The meter prices the
//! same message ([`TokenCounter::pinned_tokens`](abridge_compact::TokenCounter::pinned_tokens)),
//! so the count and the request agree.

use abridge_llm::Message;
use abridge_llm::Role;
use abridge_session::Session;

/// Where the message carrying the hidden pins goes in a history whose
/// messages have `roles`: after the leading system and developer
/// messages.
fn pins_at(roles: impl Iterator<Item = Role>) -> usize {
    roles
        .take_while(|role| matches!(role, Role::System | Role::Developer))
        .count()
}

/// Inserts the message carrying the hidden pins, when there is one, after
/// the leading system and developer messages of `messages`.
pub(crate) fn insert_pins(session: &Session, messages: &mut Vec<Message>) {
    let Some(pinned) = session.pinned_message() else {
        return;
    };
    let at = pins_at(messages.iter().map(|m| m.role));
    messages.insert(at, pinned);
}

/// The message carrying the hidden pins, when there is one, with the
/// surface position it goes before: the same message in the same place
/// as [`build_request`](crate::build_request) sends it, for a face that
/// rebuilds a request from the surface its own way (the proxy keeps the
/// agent's own bytes for every message abridge did not change).
pub fn hidden_pins(session: &Session) -> Option<(usize, Message)> {
    let pinned = session.pinned_message()?;
    let roles = session
        .surface()
        .seqs()
        .iter()
        .filter_map(|seq| session.message(*seq))
        .map(|m| m.role);
    Some((pins_at(roles), pinned))
}
