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

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;
use serde_json::value::RawValue;
use xxhash_rust::xxh3::xxh3_64;
use xxhash_rust::xxh3::xxh3_64_with_seed;
use xxhash_rust::xxh3::xxh3_128_with_seed;

use crate::dialect::Dialect;
use crate::encode::strip_cache_control;
use crate::outline::Outline;

/// How many item digests [`Digests`] keeps before it starts over: about
/// 50 MB, and only a cost (items are read again), never a wrong answer.
const MAX_REMEMBERED: usize = 1 << 20;

/// The hash of a request's head in `dialect`: where every prefix hash
/// starts. The dialect is part of it, so the same words sent to two
/// endpoints are two conversations.
pub(crate) fn head_hash(dialect: Dialect, head: &Value) -> u64 {
    let seed = xxh3_64_with_seed(dialect.provider().as_bytes(), 0x0ab1);
    xxh3_64_with_seed(&serde_json::to_vec(head).unwrap_or_default(), seed)
}

/// One item's digest: its parsed JSON written back compactly, without
/// cache marks, hashed.
fn item_digest(raw: &RawValue) -> u64 {
    let mut item: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
    strip_cache_control(&mut item);
    xxh3_64(&serde_json::to_vec(&item).unwrap_or_default())
}

/// Digests already computed, by a 128-bit hash of the bytes the agent
/// sent. Why: an agent resends the same items, byte for byte, every
/// turn; reading each one into a tree and writing it out again to hash
/// it was the largest cost of a request (`cargo xtask bench proxy`).
/// Hashing the bytes as they came is some fifty times cheaper, and only
/// items never seen in these exact bytes (the new ones, or one whose
/// cache mark moved) are read.
#[derive(Debug, Default)]
pub(crate) struct Digests {
    seen: Mutex<HashMap<u128, u64>>,
}

impl Digests {
    fn remembered(&self) -> std::sync::MutexGuard<'_, HashMap<u128, u64>> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// [`head_hash`] of `outline`'s head, read only when these bytes
    /// were never seen.
    pub(crate) fn head(&self, dialect: Dialect, outline: &Outline<'_>) -> u64 {
        let text = |raw: Option<&RawValue>| raw.map_or("null", RawValue::get).to_string();
        let seed = xxh3_64_with_seed(dialect.provider().as_bytes(), 0x4ead);
        let key = xxh3_128_with_seed(
            text(outline.tools).as_bytes(),
            xxh3_64_with_seed(text(outline.system).as_bytes(), seed),
        );
        if let Some(hash) = self.remembered().get(&key) {
            return *hash;
        }
        let hash = head_hash(dialect, &outline.head());
        keep(&mut self.remembered(), key, hash);
        hash
    }

    /// `hashes[k]` names the head (hashed to `head`) and the first
    /// `k + 1` items.
    pub(crate) fn prefix_hashes(&self, head: u64, items: &[impl AsRef<RawValue>]) -> Vec<u64> {
        let mut seen = self.remembered();
        let mut hashes = Vec::with_capacity(items.len());
        let mut rolling = head;
        for item in items {
            let raw = item.as_ref();
            let key = xxh3_128_with_seed(raw.get().as_bytes(), 0x17e3);
            let digest = match seen.get(&key) {
                Some(digest) => *digest,
                None => {
                    let digest = item_digest(raw);
                    keep(&mut seen, key, digest);
                    digest
                }
            };
            rolling = xxh3_64_with_seed(&digest.to_le_bytes(), rolling);
            hashes.push(rolling);
        }
        hashes
    }
}

/// Notes a digest, starting over past [`MAX_REMEMBERED`].
fn keep(seen: &mut HashMap<u128, u64>, key: u128, digest: u64) {
    if seen.len() >= MAX_REMEMBERED {
        seen.clear();
    }
    seen.insert(key, digest);
}

#[cfg(test)]
mod tests;
