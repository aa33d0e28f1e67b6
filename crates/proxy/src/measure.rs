//! What a request body costs as the proxy counts it: the same byte
//! estimate the sessions are measured with, over the head (system prompt
//! and tools, never logged) and every history item.

use abridge_llm::Message;
use abridge_meter::EstimateCounter;
use serde_json::Value;

use crate::decode::item_messages;
use crate::dialect::Dialect;

/// Estimated tokens of `body`'s head and history in `dialect`; `None`
/// when the body has no history this proxy reads.
pub fn request_tokens(dialect: Dialect, body: &Value) -> Option<u64> {
    let items = dialect.items(body)?;
    let head = EstimateCounter::estimate(&Message::system(dialect.head(body).to_string()));
    let history: u64 = items
        .iter()
        .flat_map(|item| item_messages(dialect, item))
        .map(|message| EstimateCounter::estimate(&message))
        .sum();
    Some(head + history)
}
