//! Each message's wire items, serialized once and reused while the same
//! shared message is sent again.
//!
//! An agent resends its whole history every turn, and the history is made
//! of [`SharedMessage`]s that the session log, the surface and every request
//! share. Escaping that text into JSON is most of what building a body
//! costs, so a client keeps, per message, the JSON of the items that message
//! alone decides (never the ones its neighbours change: Anthropic's cache
//! markers and merged turns, Chat's run of tool images) and writes them
//! back verbatim.
//!
//! Why this is sound: an entry is keyed by the message's address and holds a
//! clone of its `Arc`, so the address cannot be freed and reused while the
//! entry lives, and a shared message cannot change (`Arc::make_mut` copies
//! once another clone exists). Each client has its own cache, and its
//! options are fixed when it is built, so the same message always encodes
//! to the same items. After every call the cache keeps only what that call
//! sent, so it holds at most one request's worth of JSON and keeps messages
//! alive no longer than until the next call.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::Mutex;

use serde::Serialize;
use serde_json::value::RawValue;

use abridge_llm::LlmError;
use abridge_llm::Message;
use abridge_llm::Request;
use abridge_llm::SharedMessage;

/// Cache entries keyed by the address of the shared message they encode.
type ByAddress = HashMap<usize, Entry, AddressHash>;

/// Hashes a message's address with one multiply. Addresses are unique
/// while the cache holds the message (each entry keeps its `Arc`), so the
/// default keyed SipHash buys nothing here; it was a tenth of a resent
/// request's build time (two lookups per message).
#[derive(Debug, Clone, Copy, Default)]
struct AddressHash;

impl std::hash::BuildHasher for AddressHash {
    type Hasher = AddressHasher;

    fn build_hasher(&self) -> AddressHasher {
        AddressHasher(0)
    }
}

/// See [`AddressHash`].
#[derive(Debug)]
struct AddressHasher(u64);

impl std::hash::Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(self.0 ^ u64::from(byte));
        }
    }

    fn write_usize(&mut self, address: usize) {
        self.write_u64(address as u64);
    }

    fn write_u64(&mut self, value: u64) {
        // Fibonacci hashing, with the high half folded down so both the
        // bucket bits (low) and the tag bits (high) vary with every
        // address bit, including the ones alignment keeps at zero.
        let mixed = value.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = mixed ^ (mixed >> 32);
    }
}

/// One wire item of a message, as JSON.
#[derive(Debug)]
pub(crate) struct Fragment {
    /// The item's JSON text.
    pub(crate) json: Box<RawValue>,
    /// Whether a cache marker may go on it (Anthropic; false elsewhere).
    pub(crate) markable: bool,
    /// The item's JSON with a cache marker inside, made the first time a
    /// call marks it and reused while the message is resent (Anthropic).
    pub(crate) marked: std::sync::OnceLock<Box<RawValue>>,
}

/// The items of one message.
pub(crate) type Items = Arc<Vec<Fragment>>;

#[derive(Clone)]
struct Entry {
    /// Keeps the address taken as the key from being reused.
    message: SharedMessage,
    items: Items,
}

/// A client's cache of message fragments: the last call's entries, in its
/// message order.
#[derive(Default)]
pub(crate) struct FragmentCache {
    entries: Mutex<Vec<Option<Entry>>>,
    /// What besides the message its items depend on (the image detail a
    /// model is sent): entries made under another key are dropped.
    key: std::sync::atomic::AtomicU64,
}

impl fmt::Debug for FragmentCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let len = self
            .entries
            .lock()
            .map_or(0, |entries| entries.iter().flatten().count());
        f.debug_struct("FragmentCache")
            .field("messages", &len)
            .finish()
    }
}

/// The entries left in `last`, by address: where a message is looked up
/// once it is not at the index it had in the last call.
fn by_address(last: &mut [Option<Entry>]) -> ByAddress {
    let mut map = ByAddress::with_capacity_and_hasher(last.len(), AddressHash);
    for entry in last.iter_mut().filter_map(Option::take) {
        map.insert(Arc::as_ptr(&entry.message) as usize, entry);
    }
    map
}

/// Bytes a body will take: its messages' JSON, plus room for the fields
/// around them (model, tools, options), so the buffer is allocated once.
pub(crate) fn body_capacity(items: &[Option<Items>], request: &Request) -> usize {
    let messages: usize = items
        .iter()
        .flatten()
        .flat_map(|items| items.iter())
        .map(|f| f.json.get().len() + 1)
        .sum();
    // Neighbour-dependent parts (system text, marked blocks, tool images)
    // are not in the fragments; leave a margin for them.
    messages + messages / 32 + 4096 + request.tools.len() * 512
}

/// Serializes one wire item.
///
/// # Errors
/// `InvalidConfig` if serde cannot write it.
pub(crate) fn fragment<T: Serialize>(
    provider: &str,
    item: &T,
    markable: bool,
) -> Result<Fragment, LlmError> {
    let json = serde_json::value::to_raw_value(item).map_err(|e| LlmError::InvalidConfig {
        provider: provider.to_string(),
        message: format!("could not serialize the request body: {e}"),
    })?;
    Ok(Fragment {
        json,
        markable,
        marked: std::sync::OnceLock::new(),
    })
}

impl FragmentCache {
    /// The items of each message in `messages` (`None` where `cacheable`
    /// says no), from the last call when the same shared message was in
    /// it, else from `encode` now. The cache then holds exactly these.
    ///
    /// # Errors
    /// What `encode` returns.
    pub(crate) fn items(
        &self,
        messages: &[SharedMessage],
        cacheable: impl Fn(usize, &Message) -> bool,
        mut encode: impl FnMut(&Message) -> Result<Vec<Fragment>, LlmError>,
    ) -> Result<Vec<Option<Items>>, LlmError> {
        // Taken out so no lock is held while encoding; a call running at
        // the same time finds it empty and encodes afresh.
        let mut last = match self.entries.lock() {
            Ok(mut entries) => std::mem::take(&mut *entries),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        };
        // An agent resends its history in the same order, growing at the
        // end, so a message is first looked for where it was in the last
        // call: a pointer comparison. Only once one is not (a compaction
        // moved the history) are the entries left put in a map.
        let mut moved: Option<ByAddress> = None;
        let mut next = Vec::with_capacity(messages.len());
        let mut out = Vec::with_capacity(messages.len());
        for (index, message) in messages.iter().enumerate() {
            if !cacheable(index, message) {
                out.push(None);
                next.push(None);
                continue;
            }
            let in_place = last
                .get_mut(index)
                .and_then(|slot| slot.take_if(|e| Arc::ptr_eq(&e.message, message)));
            let found = in_place.or_else(|| {
                let key = Arc::as_ptr(message) as usize;
                moved
                    .get_or_insert_with(|| by_address(&mut last))
                    .get(&key)
                    .cloned()
            });
            let entry = match found {
                Some(entry) => entry,
                None => Entry {
                    message: Arc::clone(message),
                    items: Arc::new(encode(message)?),
                },
            };
            out.push(Some(Arc::clone(&entry.items)));
            next.push(Some(entry));
        }
        if let Ok(mut entries) = self.entries.lock() {
            *entries = next;
        }
        Ok(out)
    }

    /// [`items`](Self::items) for encodings that also depend on `key` (a
    /// setting chosen per request, such as the image detail for the
    /// request's model): the cache is emptied when the key changes.
    ///
    /// # Errors
    /// What `encode` returns.
    pub(crate) fn items_keyed(
        &self,
        key: u64,
        messages: &[SharedMessage],
        cacheable: impl Fn(usize, &Message) -> bool,
        encode: impl FnMut(&Message) -> Result<Vec<Fragment>, LlmError>,
    ) -> Result<Vec<Option<Items>>, LlmError> {
        use std::sync::atomic::Ordering;
        if self.key.swap(key, Ordering::Relaxed) != key
            && let Ok(mut entries) = self.entries.lock()
        {
            entries.clear();
        }
        self.items(messages, cacheable, encode)
    }

    /// Encodes without reading or filling the cache (for `build_body`).
    ///
    /// # Errors
    /// What `encode` returns.
    pub(crate) fn uncached(
        messages: &[SharedMessage],
        cacheable: impl Fn(usize, &Message) -> bool,
        mut encode: impl FnMut(&Message) -> Result<Vec<Fragment>, LlmError>,
    ) -> Result<Vec<Option<Items>>, LlmError> {
        messages
            .iter()
            .enumerate()
            .map(|(index, message)| {
                if cacheable(index, message) {
                    encode(message).map(|items| Some(Arc::new(items)))
                } else {
                    Ok(None)
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode_counting(
        count: &std::cell::Cell<usize>,
    ) -> impl FnMut(&Message) -> Result<Vec<Fragment>, LlmError> + '_ {
        move |message| {
            count.set(count.get() + 1);
            Ok(vec![fragment("p", &message.plain_text(), false)?])
        }
    }

    #[test]
    fn a_shared_message_is_encoded_once_and_dropped_when_no_longer_sent() {
        let cache = FragmentCache::default();
        let a: SharedMessage = Arc::new(Message::user("a"));
        let b: SharedMessage = Arc::new(Message::user("b"));
        let count = std::cell::Cell::new(0);
        let all = |_: usize, _: &Message| true;
        let first = cache
            .items(&[a.clone(), b.clone()], all, encode_counting(&count))
            .unwrap();
        assert_eq!(count.get(), 2);
        assert_eq!(first[1].as_ref().unwrap()[0].json.get(), "\"b\"");
        cache
            .items(&[a.clone(), b], all, encode_counting(&count))
            .unwrap();
        assert_eq!(count.get(), 2, "the second call reuses both");
        // A copy with the same content is another message: encoded anew.
        let copy: SharedMessage = Arc::new((*a).clone());
        cache.items(&[copy], all, encode_counting(&count)).unwrap();
        assert_eq!(count.get(), 3);
        assert_eq!(Arc::strong_count(&a), 1, "entries not sent are dropped");
    }

    #[test]
    fn a_history_that_moved_is_still_reused() {
        // A compaction drops the head and the rest shift down: the entries
        // are no longer where the last call had them, and are found anyway.
        let cache = FragmentCache::default();
        let [a, b, c, d]: [SharedMessage; 4] =
            ["a", "b", "c", "d"].map(|t| Arc::new(Message::user(t)));
        let count = std::cell::Cell::new(0);
        let all = |_: usize, _: &Message| true;
        cache
            .items(
                &[a.clone(), b.clone(), c.clone()],
                all,
                encode_counting(&count),
            )
            .unwrap();
        let items = cache
            .items(&[b.clone(), c.clone(), d], all, encode_counting(&count))
            .unwrap();
        assert_eq!(count.get(), 4, "only the new message is encoded");
        let texts: Vec<&str> = items
            .iter()
            .map(|i| i.as_ref().unwrap()[0].json.get())
            .collect();
        assert_eq!(texts, ["\"b\"", "\"c\"", "\"d\""]);
        assert_eq!(Arc::strong_count(&a), 1, "the dropped head is let go");
        // The same message twice in one request: both get its items.
        let twice = cache
            .items(&[c.clone(), b, c], all, encode_counting(&count))
            .unwrap();
        assert_eq!(twice[0].as_ref().unwrap()[0].json.get(), "\"c\"");
        assert_eq!(twice[2].as_ref().unwrap()[0].json.get(), "\"c\"");
    }

    #[test]
    fn messages_that_are_not_cacheable_are_left_to_the_caller() {
        let cache = FragmentCache::default();
        let a: SharedMessage = Arc::new(Message::system("s"));
        let count = std::cell::Cell::new(0);
        let items = cache
            .items(&[a], |index, _| index > 0, encode_counting(&count))
            .unwrap();
        assert!(items[0].is_none());
        assert_eq!(count.get(), 0);
    }
}
