//! The provider's own token counts, fetched ahead of measuring and cached
//! per message content, so the meter prices Claude messages with Anthropic's
//! count instead of an o200k estimate.
//!
//! The meter is synchronous and does no I/O; a counting endpoint is a
//! network call. So counting is split in two:
//!
//! 1. [`CountPrimer::prime`] (async, called by the [`Harness`](crate::Harness)
//!    before each maintenance pass) asks the endpoint about the surface's
//!    messages it has not seen and stores each figure in a [`CountCache`]
//!    under a hash of the message's content.
//! 2. The meter's cost model reads that cache ([`KnownCounts`]) when it
//!    first prices a message, and falls back to the corrected o200k
//!    estimate on a miss.
//!
//! # From whole-request counts to per-message figures
//!
//! The endpoint counts a whole request, and only a request the Messages API
//! would accept: one that ends with a user turn (an assistant message last
//! is a prefill, which some Claude lines refuse). So the primer counts the
//! history up to each user or tool message (a *boundary*) and takes
//! differences: `count(prefix up to boundary b) - count(prefix up to the
//! boundary before)` is exactly what the messages between them added. That
//! stretch is the user or tool message at `b` and the assistant (or
//! mid-history system) messages before it. The assistant messages keep the
//! meter's own estimate (the meter has usually priced them already, when
//! their reply was recorded, and a price is cached by seq for good), and the
//! user or tool message gets the rest of the difference. So the surface
//! total at a boundary is the provider's count, and the error of a single
//! figure is the error of our estimate of the assistant messages before it
//! (a few percent with the Claude correction), moved onto that message.
//!
//! Thinking is left out of what is sent (the meter adds its own estimate of
//! thinking by the turn rule), and so are the system prompt and tool
//! definitions, which the log never holds: they reach the meter through the
//! usage report, as before. The first message's figure includes the
//! request's own framing, a handful of tokens.
//!
//! A boundary already counted is never counted again: prefix totals are
//! kept by a hash chained over the messages' hashes, so each new boundary
//! costs one call (two after a compaction changed the prefix, to count the
//! prefix before it). A message already in the cache is never sent to be
//! counted again.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;

use abridge_llm::Block;
use abridge_llm::LlmError;
use abridge_llm::Message;
use abridge_llm::Purpose;
use abridge_llm::Request;
use abridge_llm::Role;
use abridge_meter::CostModel;
use abridge_meter::KnownCounts;
use async_trait::async_trait;
use sha2::Digest;
use sha2::Sha256;

/// Calls one [`CountPrimer::prime`] makes at most: a session opened with a
/// long history is counted a few boundaries per turn, oldest first, rather
/// than in one burst against the endpoint's per-minute limit.
pub const MAX_COUNT_CALLS_PER_PRIME: usize = 8;

/// A service that counts a whole request's input tokens the way its
/// provider will bill them.
///
/// # Contract
///
/// `count` returns the input tokens of `request` as sent (its messages,
/// and its system prompt and tools when present), or a classified
/// [`LlmError`]. The same request must count the same. Implemented for
/// Anthropic's `CountTokensClient` (feature `providers`); tests and benches script their own.
#[async_trait]
pub trait CountEndpoint: Send + Sync + fmt::Debug {
    /// The input tokens of `request`.
    async fn count(&self, request: &Request) -> Result<u64, LlmError>;
}

#[cfg(feature = "providers")]
#[async_trait]
impl CountEndpoint for abridge_providers::CountTokensClient {
    async fn count(&self, request: &Request) -> Result<u64, LlmError> {
        abridge_providers::CountTokensClient::count(self, request).await
    }
}

/// A content hash: SHA-256.
type Key = [u8; 32];

/// The provider's figures per message content. Shared by the primer, which
/// fills it, and the meter's cost model, which reads it.
#[derive(Debug, Default)]
pub struct CountCache {
    counts: Mutex<HashMap<Key, u64>>,
}

impl CountCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many messages have a figure.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True when no message has a figure.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, u64>> {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn get(&self, key: &Key) -> Option<u64> {
        self.lock().get(key).copied()
    }

    fn insert(&self, key: Key, tokens: u64) {
        self.lock().insert(key, tokens);
    }
}

impl KnownCounts for CountCache {
    fn tokens(&self, message: &Message) -> Option<u64> {
        if self.is_empty() {
            return None;
        }
        self.get(&content_key(message))
    }
}

/// The message as it is counted: thinking left out.
fn counted(message: &Message) -> Message {
    Message {
        role: message.role,
        content: message
            .content
            .iter()
            .filter(|b| !matches!(b, Block::Thinking { .. } | Block::RedactedThinking { .. }))
            .cloned()
            .collect(),
        meta: Default::default(),
    }
}

/// The hash of a message's role and content, thinking left out, metadata
/// (usage, origin) ignored: what decides its count.
fn content_key(message: &Message) -> Key {
    let mut hasher = Sha256::new();
    hasher.update(format!("{:?}", message.role).as_bytes());
    for block in &message.content {
        if matches!(
            block,
            Block::Thinking { .. } | Block::RedactedThinking { .. }
        ) {
            continue;
        }
        // Serializing a block cannot fail: its JSON values are already
        // JSON, and every map key is a string.
        let bytes = serde_json::to_vec(block).unwrap_or_default();
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(&bytes);
    }
    hasher.finalize().into()
}

/// The prefix hash after `previous` extended by a message with `key`.
fn chain(previous: &Key, key: &Key) -> Key {
    let mut hasher = Sha256::new();
    hasher.update(previous);
    hasher.update(key);
    hasher.finalize().into()
}

/// True for messages that end a user turn on the wire (a user message or
/// a tool result), after which a request may stop.
fn is_boundary(message: &Message) -> bool {
    matches!(message.role, Role::User | Role::Tool)
}

/// What one [`CountPrimer::prime`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PrimeReport {
    /// Calls made to the endpoint.
    pub calls: usize,
    /// Messages that got the provider's figure.
    pub counted: usize,
    /// Boundaries still uncounted because the call budget ran out.
    pub deferred: usize,
    /// The call that failed, if one did; priming stopped there and the
    /// meter counts what is left itself.
    pub error: Option<LlmError>,
}

/// Fills a [`CountCache`] from a [`CountEndpoint`], a few calls per turn.
#[derive(Debug)]
pub struct CountPrimer {
    endpoint: Arc<dyn CountEndpoint>,
    cache: Arc<CountCache>,
    /// Our estimate, for the assistant messages inside a counted stretch.
    cost: CostModel,
    max_calls: usize,
    /// The provider's count of each prefix counted, by chained hash.
    prefixes: Mutex<HashMap<Key, u64>>,
}

impl CountPrimer {
    /// A primer asking `endpoint`, storing into `cache`, with `cost` (the
    /// model's own cost model, without the cache) for the messages a count
    /// cannot separate.
    pub fn new(endpoint: Arc<dyn CountEndpoint>, cache: Arc<CountCache>, cost: CostModel) -> Self {
        CountPrimer {
            endpoint,
            cache,
            cost,
            max_calls: MAX_COUNT_CALLS_PER_PRIME,
            prefixes: Mutex::new(HashMap::new()),
        }
    }

    /// The same primer with another call budget per prime (at least 1).
    #[must_use]
    pub fn with_max_calls(mut self, max_calls: usize) -> Self {
        self.max_calls = max_calls.max(1);
        self
    }

    /// The cache it fills.
    pub fn cache(&self) -> &Arc<CountCache> {
        &self.cache
    }

    fn prefix_total(&self, key: &Key) -> Option<u64> {
        self.prefixes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .copied()
    }

    fn remember(&self, key: Key, total: u64) {
        self.prefixes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key, total);
    }

    async fn count_prefix(
        &self,
        model: &str,
        messages: &[Message],
        key: Key,
        report: &mut PrimeReport,
    ) -> Result<u64, LlmError> {
        if let Some(total) = self.prefix_total(&key) {
            return Ok(total);
        }
        if messages.is_empty() {
            return Ok(0);
        }
        report.calls += 1;
        let request = Request::new(model, messages.iter().map(counted).collect(), Purpose::Turn);
        let total = self.endpoint.count(&request).await?;
        self.remember(key, total);
        Ok(total)
    }

    /// Counts the boundaries of `messages` (the surface, in order) whose
    /// user or tool message has no figure yet, oldest first, at most the
    /// call budget, for `model`. Never fails: a failed call ends the prime
    /// and is reported; what was not counted falls back to the estimate.
    ///
    /// # Cancel safety
    /// Dropping the future loses at most the figure being fetched.
    pub async fn prime(&self, model: &str, messages: &[Arc<Message>]) -> PrimeReport {
        let mut report = PrimeReport::default();
        let keys: Vec<Key> = messages.iter().map(|m| content_key(m)).collect();
        let mut prefixes = Vec::with_capacity(messages.len() + 1);
        prefixes.push([0u8; 32]);
        for key in &keys {
            let last = prefixes[prefixes.len() - 1];
            prefixes.push(chain(&last, key));
        }
        let owned: Vec<Message> = messages.iter().map(|m| (**m).clone()).collect();
        let mut previous_boundary = 0usize;
        for end in 0..owned.len() {
            if !is_boundary(&owned[end]) {
                continue;
            }
            let start = previous_boundary;
            previous_boundary = end + 1;
            if self.cache.get(&keys[end]).is_some() {
                continue;
            }
            let needed = usize::from(self.prefix_total(&prefixes[start]).is_none() && start > 0)
                + usize::from(self.prefix_total(&prefixes[end + 1]).is_none());
            if report.calls + needed > self.max_calls {
                report.deferred += 1;
                continue;
            }
            let counts = match self
                .count_prefix(model, &owned[..start], prefixes[start], &mut report)
                .await
            {
                Ok(before) => self
                    .count_prefix(model, &owned[..=end], prefixes[end + 1], &mut report)
                    .await
                    .map(|after| (before, after)),
                Err(error) => Err(error),
            };
            let (before, after) = match counts {
                Ok(both) => both,
                Err(error) => {
                    tracing::warn!(%error, "token counting failed; the meter estimates the rest");
                    report.error = Some(error);
                    return report;
                }
            };
            // The stretch's other messages keep their own figure (ours,
            // or the provider's from an earlier count); the boundary
            // message takes the rest.
            let others: u64 = owned[start..end]
                .iter()
                .zip(&keys[start..end])
                .map(|(m, key)| self.cache.get(key).unwrap_or_else(|| self.cost.split(m).0))
                .sum();
            let added = after.saturating_sub(before);
            self.cache.insert(keys[end], added.saturating_sub(others));
            report.counted += 1;
        }
        report
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::AtomicUsize;
    use std::sync::atomic::Ordering;

    use abridge_llm::Catalog;

    use super::*;

    /// Counts 10 per message plus 3 of framing, so every boundary's figure
    /// is known in advance; counts each call.
    #[derive(Debug, Default)]
    struct Scripted {
        calls: AtomicUsize,
        fail_after: Option<usize>,
    }

    #[async_trait]
    impl CountEndpoint for Scripted {
        async fn count(&self, request: &Request) -> Result<u64, LlmError> {
            let call = self.calls.fetch_add(1, Ordering::SeqCst);
            if self.fail_after.is_some_and(|n| call >= n) {
                return Err(LlmError::RateLimited {
                    provider: "scripted".into(),
                    retry_after: None,
                    message: "slow down".into(),
                });
            }
            Ok(3 + 10 * request.messages.len() as u64)
        }
    }

    fn cost() -> CostModel {
        CostModel::for_model(&Catalog::builtin().lookup("claude-sonnet-4-5").entry)
    }

    fn surface(n: usize) -> Vec<Arc<Message>> {
        (0..n)
            .map(|i| {
                Arc::new(if i % 2 == 0 {
                    Message::user(format!("question {i}"))
                } else {
                    Message::assistant(format!("answer {i}"))
                })
            })
            .collect()
    }

    #[tokio::test]
    async fn each_boundary_is_counted_once_and_takes_the_difference() {
        let endpoint = Arc::new(Scripted::default());
        let cache = Arc::new(CountCache::new());
        let primer = CountPrimer::new(endpoint.clone(), cache.clone(), cost());
        let messages = surface(5); // u a u a u
        let report = primer.prime("claude-sonnet-4-5", &messages).await;
        assert_eq!(report.calls, 3);
        assert_eq!(report.counted, 3);
        // The first user message carries the framing.
        assert_eq!(cache.tokens(&messages[0]), Some(13));
        let answer = cost().split(&messages[1]).0;
        assert_eq!(cache.tokens(&messages[2]), Some(20 - answer));
        // Assistant messages are never given a figure.
        assert_eq!(cache.tokens(&messages[1]), None);
        // Nothing new: no call.
        let again = primer.prime("claude-sonnet-4-5", &messages).await;
        assert_eq!(again.calls, 0);
        // Two more messages: one call, for the new boundary only.
        let mut longer = messages.clone();
        longer.extend(surface(7).into_iter().skip(5));
        let more = primer.prime("claude-sonnet-4-5", &longer).await;
        assert_eq!((more.calls, more.counted), (1, 1));
        assert_eq!(endpoint.calls.load(Ordering::SeqCst), 4);
    }

    #[tokio::test]
    async fn a_message_seen_before_is_not_sent_again_after_a_compaction() {
        let endpoint = Arc::new(Scripted::default());
        let cache = Arc::new(CountCache::new());
        let primer = CountPrimer::new(endpoint.clone(), cache.clone(), cost());
        let messages = surface(5);
        primer.prime("m", &messages).await;
        // A checkpoint replaces the first three: only it is new.
        let mut compacted = vec![Arc::new(Message::user("summary of 0..2"))];
        compacted.extend(messages[3..].iter().cloned());
        let report = primer.prime("m", &compacted).await;
        assert_eq!((report.calls, report.counted), (1, 1));
        assert_eq!(cache.tokens(&compacted[0]), Some(13));
    }

    #[tokio::test]
    async fn thinking_and_metadata_do_not_change_the_key() {
        let mut plain = Message::assistant("done");
        let key = content_key(&plain);
        plain.content.insert(
            0,
            Block::Thinking {
                thinking: "hmm".into(),
                signature: Some("sig".into()),
            },
        );
        plain.meta.usage = Some(abridge_llm::Usage {
            input: 5,
            ..Default::default()
        });
        assert_eq!(content_key(&plain), key);
        assert_ne!(content_key(&Message::user("done")), key);
    }

    #[tokio::test]
    async fn a_failure_stops_the_prime_and_leaves_the_rest_to_the_estimate() {
        let endpoint = Arc::new(Scripted {
            fail_after: Some(1),
            ..Scripted::default()
        });
        let cache = Arc::new(CountCache::new());
        let primer = CountPrimer::new(endpoint, cache.clone(), cost());
        let report = primer.prime("m", &surface(5)).await;
        assert_eq!(report.counted, 1);
        assert!(matches!(report.error, Some(LlmError::RateLimited { .. })));
        assert_eq!(cache.len(), 1);
    }

    #[tokio::test]
    async fn a_stretch_after_a_cached_boundary_pays_for_its_own_start_within_the_budget() {
        // A shared cache already holds the first boundary's figure, but
        // this primer never counted the prefix before the second stretch:
        // counting that stretch takes two calls, one more than allowed.
        let cache = Arc::new(CountCache::new());
        let messages = surface(3); // u a u
        let warm = CountPrimer::new(Arc::new(Scripted::default()), cache.clone(), cost());
        warm.prime("m", &messages[..1]).await;
        assert!(cache.tokens(&messages[0]).is_some());
        let endpoint = Arc::new(Scripted::default());
        let primer = CountPrimer::new(endpoint.clone(), cache.clone(), cost()).with_max_calls(1);
        let report = primer.prime("m", &messages).await;
        assert_eq!((report.calls, report.counted, report.deferred), (0, 0, 1));
        assert_eq!(endpoint.calls.load(Ordering::SeqCst), 0);
        // With room for both calls it is counted.
        let roomy = CountPrimer::new(endpoint.clone(), cache.clone(), cost()).with_max_calls(2);
        let report = roomy.prime("m", &messages).await;
        assert_eq!((report.calls, report.counted, report.deferred), (2, 1, 0));
        assert_eq!(
            cache.tokens(&messages[2]),
            Some(20 - cost().split(&messages[1]).0)
        );
    }

    #[tokio::test]
    async fn the_call_budget_defers_the_rest_to_the_next_prime() {
        let endpoint = Arc::new(Scripted::default());
        let cache = Arc::new(CountCache::new());
        let primer = CountPrimer::new(endpoint, cache.clone(), cost()).with_max_calls(2);
        let messages = surface(9); // five boundaries
        let first = primer.prime("m", &messages).await;
        assert_eq!((first.calls, first.counted, first.deferred), (2, 2, 3));
        let second = primer.prime("m", &messages).await;
        assert_eq!((second.calls, second.counted, second.deferred), (2, 2, 1));
        let third = primer.prime("m", &messages).await;
        assert_eq!((third.calls, third.counted, third.deferred), (1, 1, 0));
        assert_eq!(cache.len(), 5);
    }
}
