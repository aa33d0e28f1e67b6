//! Counts a provider gave for whole messages, consulted before our own.

use std::fmt::Debug;

use abridge_llm::Message;

/// The provider's own count of messages it has counted (a token-counting
/// endpoint, filled ahead of measuring by the composition layer).
///
/// # Contract
///
/// - [`tokens`](Self::tokens) is what `message` adds to a request, its
///   thinking left out: the meter adds its own estimate of the thinking,
///   since whether thinking counts depends on the turn (see
///   [`PriorThinking`](crate::PriorThinking)), not on the message.
/// - It is keyed by the message's content, not by where it sits, and must
///   answer the same for the same message every time it answers at all:
///   the meter caches a message's cost by seq the first time it prices it.
/// - `None` means "not counted": the cost model counts the message itself.
/// - It is called from synchronous measuring code, under the meter's lock:
///   it must not block on I/O. Filling it is the caller's job, before
///   measuring.
pub trait KnownCounts: Send + Sync + Debug {
    /// The provider's count of `message` without its thinking, if known.
    fn tokens(&self, message: &Message) -> Option<u64>;
}
