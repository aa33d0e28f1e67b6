//! The token figure compaction acts on, behind one trait.
//!
//! The trigger, the retention walk, the shrink check and the "did it free
//! enough" check must all use the same figure, or compaction loops (the
//! trigger sees more than the check). Everything downstream asks one
//! [`TokenCounter`]; [`MeterCounter`] answers from a [`TokenMeter`], and
//! [`EstimateCounter`] is the bytes/4 fallback that tests use.
//!
//! The trait lives beside the meter so that counting has one owner: the
//! meter already caches each message's cost per session, and a counter that
//! kept a second cache beside it could (and did) disagree with it.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;

use abridge_llm::Message;
use abridge_llm::ModelEntry;
use abridge_session::Seq;
use abridge_session::Session;

use crate::cost::CostModel;
use crate::cost::MESSAGE_OVERHEAD;
use crate::meter::Measure;
use crate::meter::TokenMeter;
use crate::tokenizer::estimate_tokens;

/// Counts what messages cost in a request.
///
/// # Contract
///
/// - [`message_tokens`](Self::message_tokens) is a pure function of the
///   message: the same message always costs the same, whatever was counted
///   before. It is for messages that are not in a log yet (a checkpoint
///   being framed, the replacement a rewrite proposes), so it never
///   caches.
/// - [`seq_tokens`](Self::seq_tokens) is the cost of the message at `seq`
///   in `session`, and must equal `message_tokens` of that message (0
///   when `seq` holds no message). Implementations may cache it, but a
///   cache must be keyed by the session (its `header().session_id`) as well
///   as the seq: a seq names one immutable message within one log, and
///   nothing across logs. One counter shared by several sessions must
///   answer each with its own messages. Callers in turn must not give two
///   different logs one id: to a cache they are one session.
/// - [`context_tokens`](Self::context_tokens) is the figure to act on for
///   the whole surface: the figure the trigger compares to the threshold
///   and the figure the success check compares after a commit. The default
///   sums `seq_tokens` over the surface; a counter that knows more returns
///   its own figure instead (the meter's is `max(anchored, estimated)`,
///   with earlier turns' thinking free where the provider drops it).
/// - [`surface_tokens`](Self::surface_tokens) sums `seq_tokens` over the
///   surface; `context_tokens` minus it is the overhead a usage report
///   counts and the log never holds.
/// - [`overhead_tokens`](Self::overhead_tokens) is what `context_tokens`
///   holds beyond the surface's own messages: the system prompt and tool
///   definitions a usage report counts. It is fixed: no compaction can
///   reclaim it, so retention budgets and the room a checkpoint may fill
///   are taken from what is left of a goal after it.
///
/// Only `message_tokens` is required; the defaults are correct for any
/// implementation, and counters override them to be faster (a cache) or
/// better informed (a usage report). A wrapper must forward every method,
/// or it silently drops the inner counter's cache and anchoring.
pub trait TokenCounter: Send + Sync + Debug {
    /// Tokens `message` costs, including per-message overhead. Uncached.
    fn message_tokens(&self, message: &Message) -> u64;

    /// Tokens the message at `seq` in `session` costs (0 if `seq` holds no
    /// message). The default counts it afresh with
    /// [`message_tokens`](Self::message_tokens).
    fn seq_tokens(&self, session: &Session, seq: Seq) -> u64 {
        session
            .message(seq)
            .map_or(0, |message| self.message_tokens(message))
    }

    /// The surface's own messages, summed: what the log holds of the
    /// next request, without anything a usage report adds (the system
    /// prompt and tool definitions the log never sees). Not meant to be
    /// overridden; [`context_tokens`](Self::context_tokens) minus this is
    /// that unseen overhead.
    fn surface_tokens(&self, session: &Session) -> u64 {
        session
            .surface()
            .seqs()
            .iter()
            .map(|seq| self.seq_tokens(session, *seq))
            .sum()
    }

    /// The message that carries the pins the surface does not show
    /// ([`Session::pinned_message`]): every request sends it, so every
    /// figure of the context counts it, once. 0 without hidden pins.
    fn pinned_tokens(&self, session: &Session) -> u64 {
        session
            .pinned_message()
            .map_or(0, |message| self.message_tokens(&message))
    }

    /// The figure to act on for everything the model would see next. The
    /// default is [`surface_tokens`](Self::surface_tokens) plus
    /// [`pinned_tokens`](Self::pinned_tokens).
    fn context_tokens(&self, session: &Session) -> u64 {
        self.surface_tokens(session)
            .saturating_add(self.pinned_tokens(session))
    }

    /// What [`context_tokens`](Self::context_tokens) counts beyond the
    /// surface's own messages and the hidden pins (the system prompt and
    /// tool definitions a usage report brings in). The default is the
    /// difference.
    fn overhead_tokens(&self, session: &Session) -> u64 {
        self.context_tokens(session)
            .saturating_sub(self.surface_tokens(session))
            .saturating_sub(self.pinned_tokens(session))
    }
}

/// Implements [`TokenCounter`] for smart pointers by forwarding every
/// method, defaults included, so a counter behind a pointer keeps its own
/// cache and anchoring.
macro_rules! forward_token_counter {
    ($($pointer:ident),+) => {$(
        impl<T: TokenCounter + ?Sized> TokenCounter for $pointer<T> {
            fn message_tokens(&self, message: &Message) -> u64 {
                (**self).message_tokens(message)
            }
            fn seq_tokens(&self, session: &Session, seq: Seq) -> u64 {
                (**self).seq_tokens(session, seq)
            }
            fn surface_tokens(&self, session: &Session) -> u64 {
                (**self).surface_tokens(session)
            }
            fn pinned_tokens(&self, session: &Session) -> u64 {
                (**self).pinned_tokens(session)
            }
            fn context_tokens(&self, session: &Session) -> u64 {
                (**self).context_tokens(session)
            }
            fn overhead_tokens(&self, session: &Session) -> u64 {
                (**self).overhead_tokens(session)
            }
        }
    )+};
}

forward_token_counter!(Arc, Box);

/// A fast estimate: content bytes / 4, rounded up, plus
/// [`MESSAGE_OVERHEAD`] per message, cached per session and seq.
///
/// Bytes/4 over-counts English and code slightly and under-counts CJK; it
/// is the fallback when no tokenizer is configured, and what tests use
/// because its figures are easy to predict. It ignores the per-block
/// overheads and image billing the [`CostModel`] applies, so its figures
/// are not the meter's, only close to them.
///
/// The cache holds one session at a time, told apart by session id, and
/// starts again when another session is asked about: sharing one estimator
/// between sessions is correct, only slower.
#[derive(Debug, Default)]
pub struct EstimateCounter {
    cache: Mutex<SessionCache>,
}

/// Counts of one session's messages, by seq.
#[derive(Debug, Default)]
struct SessionCache {
    /// The id of the session the counts belong to.
    session_id: Option<String>,
    /// Four bytes a message, so a long log's cache stays small;
    /// [`UNCOUNTED`] marks a seq not counted yet.
    counts: Vec<u32>,
}

/// A cache slot not counted yet. A count this large (16 GiB of text) is
/// not cached.
const UNCOUNTED: u32 = u32::MAX;

impl EstimateCounter {
    /// A counter with an empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The uncached estimate of one message: what
    /// [`message_tokens`](TokenCounter::message_tokens) returns, without a
    /// counter at hand.
    pub fn estimate(message: &Message) -> u64 {
        estimate_tokens(message.content_bytes()) + MESSAGE_OVERHEAD
    }
}

impl TokenCounter for EstimateCounter {
    fn message_tokens(&self, message: &Message) -> u64 {
        Self::estimate(message)
    }

    fn seq_tokens(&self, session: &Session, seq: Seq) -> u64 {
        let Some(message) = session.message(seq) else {
            return 0;
        };
        let Ok(index) = usize::try_from(seq) else {
            return Self::estimate(message);
        };
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        let id = &session.header().session_id;
        if cache.session_id.as_ref() != Some(id) {
            cache.session_id = Some(id.clone());
            cache.counts.clear();
        }
        if let Some(&count) = cache.counts.get(index)
            && count != UNCOUNTED
        {
            return u64::from(count);
        }
        let count = Self::estimate(message);
        if let Ok(slot) = u32::try_from(count) {
            if cache.counts.len() <= index {
                cache.counts.resize(index + 1, UNCOUNTED);
            }
            cache.counts[index] = slot;
        }
        count
    }
}

/// The [`TokenMeter`] as a [`TokenCounter`]: the workspace's single source
/// of token figures.
///
/// `context_tokens` is the meter's [`Measure::tokens`] (`max(anchored,
/// estimate)`, O(1) after an append) and `overhead_tokens` what it adds to
/// the estimate, so the trigger, the retention walk and the success check
/// all read the meter.
/// `seq_tokens` is the meter's own [`TokenMeter::seq_tokens`]: one cache,
/// bound to a session by its id. `message_tokens` prices a loose message
/// with the meter's cost model, without taking the meter's lock.
///
/// The meter follows one session at a time: sharing a `MeterCounter`
/// between sessions gives each its own figures, but every switch starts the
/// meter's cache and totals again. Give each session its own counter.
#[derive(Debug)]
pub struct MeterCounter {
    meter: Mutex<TokenMeter>,
    /// A copy of the meter's cost model, for counting without the lock.
    cost: CostModel,
}

impl MeterCounter {
    /// Wraps `meter`.
    pub fn new(meter: TokenMeter) -> Self {
        MeterCounter {
            cost: meter.cost_model().clone(),
            meter: Mutex::new(meter),
        }
    }

    /// A meter for a catalog entry (tokenizer and image billing).
    pub fn for_model(entry: &ModelEntry) -> Self {
        Self::new(TokenMeter::for_model(entry))
    }

    /// The meter's full measure of `session`.
    pub fn measure(&self, session: &Session) -> Measure {
        self.meter().measure(session)
    }

    /// Runs `f` on the meter, under its lock (for example to save its kept
    /// counts with [`KeptFile::save`](crate::KeptFile::save)).
    pub fn with_meter<R>(&self, f: impl FnOnce(&mut TokenMeter) -> R) -> R {
        f(&mut self.meter())
    }

    fn meter(&self) -> std::sync::MutexGuard<'_, TokenMeter> {
        self.meter.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl TokenCounter for MeterCounter {
    fn message_tokens(&self, message: &Message) -> u64 {
        self.cost.message(message)
    }

    fn seq_tokens(&self, session: &Session, seq: Seq) -> u64 {
        self.meter().seq_tokens(session, seq)
    }

    fn context_tokens(&self, session: &Session) -> u64 {
        self.measure(session).tokens
    }

    fn overhead_tokens(&self, session: &Session) -> u64 {
        let measure = self.measure(session);
        measure.tokens.saturating_sub(measure.estimate)
    }
}

#[cfg(test)]
mod tests {
    use abridge_llm::Catalog;
    use pretty_assertions::assert_eq;

    use super::*;

    fn gpt5() -> ModelEntry {
        Catalog::builtin().lookup("gpt-5").entry
    }

    fn session(id: &str, texts: &[&str]) -> Session {
        let mut session = Session::in_memory(id);
        for text in texts {
            session.append_message(Message::user(*text)).unwrap();
        }
        session
    }

    /// Two sessions whose messages differ at the same seqs.
    fn two_sessions() -> (Session, Session) {
        (
            session("first", &["short", "also short"]),
            session(
                "second",
                &[
                    "a much longer message than the first session's, by far",
                    "and a second one, longer again than anything in the first session",
                ],
            ),
        )
    }

    /// Asks `counter` about both sessions, alternating, and checks every
    /// answer against the message's own uncached cost.
    fn counts_each_session_by_its_own_messages(counter: &dyn TokenCounter) {
        let (first, second) = two_sessions();
        for _round in 0..2 {
            for session in [&first, &second] {
                for &seq in session.surface().seqs() {
                    let own = counter.message_tokens(session.message(seq).unwrap());
                    assert_eq!(
                        counter.seq_tokens(session, seq),
                        own,
                        "seq {seq} of {}",
                        session.header().session_id
                    );
                }
            }
        }
        assert!(counter.context_tokens(&first) < counter.context_tokens(&second));
    }

    /// Regression (issue 10, point 4): the per-message cache was keyed by
    /// seq alone, so one counter shared by two sessions returned the first
    /// session's counts for the second.
    #[test]
    fn one_meter_counter_counts_each_session_by_its_own_messages() {
        counts_each_session_by_its_own_messages(&MeterCounter::for_model(&gpt5()));
    }

    /// The same regression for the estimate's cache.
    #[test]
    fn one_estimate_counter_counts_each_session_by_its_own_messages() {
        counts_each_session_by_its_own_messages(&EstimateCounter::new());
    }

    #[test]
    fn meter_counter_seq_tokens_is_the_meters() {
        let (first, second) = two_sessions();
        let counter = MeterCounter::for_model(&gpt5());
        let mut meter = TokenMeter::for_model(&gpt5());
        for session in [&first, &second, &first] {
            for &seq in session.surface().seqs() {
                assert_eq!(
                    counter.seq_tokens(session, seq),
                    meter.seq_tokens(session, seq)
                );
            }
            // A seq past the log holds no message.
            assert_eq!(counter.seq_tokens(session, 99), 0);
        }
    }

    #[test]
    fn meter_counter_agrees_with_the_meter() {
        let counter = MeterCounter::for_model(&gpt5());
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
            .map(|s| counter.seq_tokens(&session, *s))
            .sum();
        assert_eq!(counter.context_tokens(&session), sum);
        assert_eq!(counter.measure(&session).estimate, sum);
        assert_eq!(counter.overhead_tokens(&session), 0);
    }

    #[test]
    fn estimate_is_bytes_over_four_plus_overhead() {
        let counter = EstimateCounter::new();
        let message = Message::user("12345678");
        assert_eq!(counter.message_tokens(&message), 2 + 4);
        assert_eq!(EstimateCounter::estimate(&message), 6);
        let session = session("e", &["", "", "", "12345678"]);
        assert_eq!(counter.seq_tokens(&session, 3), 6);
        assert_eq!(counter.seq_tokens(&session, 0), 4);
        assert_eq!(counter.seq_tokens(&session, 4), 0);
        assert_eq!(counter.context_tokens(&session), 4 * 3 + 6);
    }
}
