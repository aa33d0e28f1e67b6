//! The token figure compaction acts on.
//!
//! The trigger, the retention walk, the shrink check and the "did it free
//! enough" check must all use the same figure, or compaction loops (the
//! trigger sees more than the check). Everything in this crate asks one
//! [`TokenCounter`], carried by the [`Policy`](crate::Policy) into every
//! [`Plan`](crate::Plan).

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::Mutex;

use abridge_llm::Message;
use abridge_session::Seq;
use abridge_session::Session;

/// Counts what messages cost in a request.
///
/// # Contract
///
/// - `message_tokens` is a pure function of the message: the same message
///   always costs the same. `seq` is a cache key only; implementors that
///   cache by seq must keep one cache per session log (a seq names one
///   immutable message within one log).
/// - `context_tokens` is the figure to act on for the whole surface: the
///   figure the trigger compares to the threshold and the figure the
///   success check compares after a commit. The default sums
///   `message_tokens` over the surface; a meter that anchors on reported
///   usage returns `max(anchored, estimated)` instead.
/// - `reported_ratio` is reported/estimated tokens (1.0 when unknown);
///   the retention walk divides its budget by it when it is above 1.
pub trait TokenCounter: Send + Sync + Debug {
    /// Tokens `message` costs, including per-message overhead.
    fn message_tokens(&self, seq: Option<Seq>, message: &Message) -> u64;

    /// The figure to act on for everything the model would see next.
    fn context_tokens(&self, session: &Session) -> u64 {
        session
            .surface()
            .seqs()
            .iter()
            .filter_map(|seq| {
                session
                    .message(*seq)
                    .map(|m| self.message_tokens(Some(*seq), m))
            })
            .sum()
    }

    /// Provider-reported over estimated tokens; 1.0 when unknown.
    fn reported_ratio(&self, _session: &Session) -> f64 {
        1.0
    }
}

impl<T: TokenCounter + ?Sized> TokenCounter for Arc<T> {
    fn message_tokens(&self, seq: Option<Seq>, message: &Message) -> u64 {
        (**self).message_tokens(seq, message)
    }
    fn context_tokens(&self, session: &Session) -> u64 {
        (**self).context_tokens(session)
    }
    fn reported_ratio(&self, session: &Session) -> f64 {
        (**self).reported_ratio(session)
    }
}

impl<T: TokenCounter + ?Sized> TokenCounter for Box<T> {
    fn message_tokens(&self, seq: Option<Seq>, message: &Message) -> u64 {
        (**self).message_tokens(seq, message)
    }
    fn context_tokens(&self, session: &Session) -> u64 {
        (**self).context_tokens(session)
    }
    fn reported_ratio(&self, session: &Session) -> f64 {
        (**self).reported_ratio(session)
    }
}

/// Tokens added per message for role and framing, as chat formats do: the
/// meter's figure, so the estimate and the meter agree on it.
pub const MESSAGE_OVERHEAD_TOKENS: u64 = abridge_meter::MESSAGE_OVERHEAD;

/// A fast estimate: content bytes / 4, rounded up, plus
/// [`MESSAGE_OVERHEAD_TOKENS`], cached by seq.
///
/// Bytes/4 over-counts English and code slightly and under-counts CJK; it
/// is the fallback when no tokenizer is configured, and what tests use
/// because its figures are easy to predict. Cached counts are keyed by seq
/// alone, so give each session its own estimator.
#[derive(Debug, Default)]
pub struct EstimateCounter {
    cache: Mutex<SeqCache>,
}

#[derive(Debug, Default)]
struct SeqCache {
    counts: Vec<u32>,
}

const UNKNOWN: u32 = u32::MAX;

impl EstimateCounter {
    /// A counter with an empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The uncached estimate of one message.
    pub fn estimate(message: &Message) -> u64 {
        (message.content_bytes() as u64).div_ceil(4) + MESSAGE_OVERHEAD_TOKENS
    }
}

impl TokenCounter for EstimateCounter {
    fn message_tokens(&self, seq: Option<Seq>, message: &Message) -> u64 {
        let Some(index) = seq.and_then(|s| usize::try_from(s).ok()) else {
            return Self::estimate(message);
        };
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(&count) = cache.counts.get(index)
            && count != UNKNOWN
        {
            return u64::from(count);
        }
        let count = Self::estimate(message);
        if cache.counts.len() <= index {
            cache.counts.resize(index + 1, UNKNOWN);
        }
        cache.counts[index] = u32::try_from(count).unwrap_or(UNKNOWN - 1);
        count
    }
}

/// The [`TokenMeter`](abridge_meter::TokenMeter) as a [`TokenCounter`]:
/// the workspace's single source of token figures.
///
/// `context_tokens` is the meter's `Measure::tokens` (`max(anchored,
/// estimate)`, O(1) after an append) and `reported_ratio` its ratio, so the
/// trigger, the retention walk and the success check all read the meter.
/// Message costs come from the meter's cost model, cached by seq: use one
/// `MeterCounter` per session.
#[derive(Debug)]
pub struct MeterCounter {
    meter: Mutex<abridge_meter::TokenMeter>,
    cost: abridge_meter::CostModel,
    cache: Mutex<SeqCache>,
}

impl MeterCounter {
    /// Wraps `meter`.
    pub fn new(meter: abridge_meter::TokenMeter) -> Self {
        MeterCounter {
            cost: meter.cost_model().clone(),
            meter: Mutex::new(meter),
            cache: Mutex::new(SeqCache::default()),
        }
    }

    /// A meter for a catalog entry (tokenizer and image billing).
    pub fn for_model(entry: &abridge_llm::ModelEntry) -> Self {
        Self::new(abridge_meter::TokenMeter::for_model(entry))
    }

    /// The meter's full measure of `session`.
    pub fn measure(&self, session: &Session) -> abridge_meter::Measure {
        self.meter
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .measure(session)
    }
}

impl TokenCounter for MeterCounter {
    fn message_tokens(&self, seq: Option<Seq>, message: &Message) -> u64 {
        let Some(index) = seq.and_then(|s| usize::try_from(s).ok()) else {
            return self.cost.message(message);
        };
        let mut cache = self
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(&count) = cache.counts.get(index)
            && count != UNKNOWN
        {
            return u64::from(count);
        }
        let count = self.cost.message(message);
        if cache.counts.len() <= index {
            cache.counts.resize(index + 1, UNKNOWN);
        }
        cache.counts[index] = u32::try_from(count).unwrap_or(UNKNOWN - 1);
        count
    }

    fn context_tokens(&self, session: &Session) -> u64 {
        self.measure(session).tokens
    }

    fn reported_ratio(&self, session: &Session) -> f64 {
        self.measure(session).ratio.unwrap_or(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meter_counter_agrees_with_the_meter() {
        let entry = abridge_llm::Catalog::builtin().lookup("gpt-5").entry;
        let counter = MeterCounter::for_model(&entry);
        let mut session = Session::in_memory("m");
        session
            .append_message(Message::user("fix the failing test in parser.rs"))
            .unwrap();
        session
            .append_message(Message::assistant("Looking at it now."))
            .unwrap();
        let sum: u64 = session
            .surface()
            .seqs()
            .iter()
            .map(|s| counter.message_tokens(Some(*s), session.message(*s).unwrap()))
            .sum();
        assert_eq!(counter.context_tokens(&session), sum);
        assert!((counter.reported_ratio(&session) - 1.0).abs() < f64::EPSILON);
    }

    #[test]
    fn estimate_is_bytes_over_four_plus_overhead() {
        let counter = EstimateCounter::new();
        let message = Message::user("12345678");
        assert_eq!(counter.message_tokens(None, &message), 2 + 4);
        assert_eq!(counter.message_tokens(Some(3), &message), 6);
        // cached by seq
        assert_eq!(counter.message_tokens(Some(3), &Message::user("")), 6);
    }
}
