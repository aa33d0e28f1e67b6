//! Conversation identity without an id: a rolling hash over a request's
//! head and then each history item, so that hash number `k` names the
//! first `k` items of one agent's conversation. An agent resends its
//! whole history each turn; the longest prefix whose hash is known finds
//! the session, and the items after it are what is new.
//!
//! Items are hashed as parsed JSON written back compactly, so spacing in
//! the agent's body does not matter, while any change to an item (an
//! edited message, a different tool result) does. Anthropic cache marks
//! (`cache_control`) are left out of the hash: agents move them to the
//! newest messages every turn, and a moved mark is the same history.

use serde_json::Value;
use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::dialect::Dialect;
use crate::encode::strip_cache_control;

/// The hash of a request's head in `dialect`: where every prefix hash
/// starts. The dialect is part of it, so the same words sent to two
/// endpoints are two conversations.
pub(crate) fn head_hash(dialect: Dialect, head: &Value) -> u64 {
    let seed = xxh3_64_with_seed(dialect.provider().as_bytes(), 0x0ab1);
    xxh3_64_with_seed(&serde_json::to_vec(head).unwrap_or_default(), seed)
}

/// `hashes[k]` names the head and the first `k + 1` items.
pub(crate) fn prefix_hashes(head: u64, items: &[Value]) -> Vec<u64> {
    let mut hashes = Vec::with_capacity(items.len());
    let mut rolling = head;
    for item in items {
        let mut item = item.clone();
        strip_cache_control(&mut item);
        let bytes = serde_json::to_vec(&item).unwrap_or_default();
        rolling = xxh3_64_with_seed(&bytes, rolling);
        hashes.push(rolling);
    }
    hashes
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_longer_history_shares_the_shorter_ones_hashes() {
        let head = head_hash(Dialect::Anthropic, &json!([null, null]));
        let one = prefix_hashes(head, &[json!({"role": "user", "content": "a"})]);
        let two = prefix_hashes(
            head,
            &[
                json!({"role": "user", "content": "a"}),
                json!({"role": "assistant", "content": "b"}),
            ],
        );
        assert_eq!(one[0], two[0]);
        assert_ne!(two[0], two[1]);
    }

    #[test]
    fn another_head_or_an_edited_item_changes_the_hash() {
        let items = [json!({"role": "user", "content": "a"})];
        let a = prefix_hashes(
            head_hash(Dialect::Anthropic, &json!(["system a", null])),
            &items,
        );
        let b = prefix_hashes(
            head_hash(Dialect::Anthropic, &json!(["system b", null])),
            &items,
        );
        assert_ne!(a, b);
        let edited = prefix_hashes(
            head_hash(Dialect::Anthropic, &json!(["system a", null])),
            &[json!({"role": "user", "content": "A"})],
        );
        assert_ne!(a, edited);
    }

    #[test]
    fn a_moved_cache_mark_is_the_same_history_but_another_dialect_is_not() {
        let head = head_hash(Dialect::Anthropic, &json!([null, null]));
        let plain = json!({"role": "user", "content": [{"type": "text", "text": "a"}]});
        let marked = json!({"role": "user", "content": [{"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}]});
        assert_eq!(
            prefix_hashes(head, std::slice::from_ref(&plain)),
            prefix_hashes(head, &[marked])
        );
        let chat = head_hash(Dialect::Chat, &json!([null, null]));
        assert_ne!(
            prefix_hashes(head, std::slice::from_ref(&plain)),
            prefix_hashes(chat, &[plain])
        );
    }
}
