//! The token meter: the figure compaction acts on, kept incrementally.

use std::collections::HashMap;

use abridge_llm::Message;
use abridge_llm::ModelEntry;
use abridge_llm::Role;
use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::SurfaceCursor;
use abridge_session::SurfaceOp;
use serde::Serialize;

use crate::cost::CostModel;
use crate::cost::PriorThinking;
use crate::kept::KeptCost;
use crate::kept::KeptCounts;
use crate::kept::content_hash;

/// What the meter says about a session's surface.
///
/// `tokens` is the one figure to act on: the compaction trigger and the
/// check that a compaction freed enough must both use it, so they can never
/// disagree about whether the history fits.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Measure {
    /// Our own count of every message on the surface.
    pub estimate: u64,
    /// The last anchor's reported usage plus our count of what changed
    /// since it; without a valid anchor (see [`Anchor`]) but with an
    /// [`overhead`](Self::overhead) carried from an earlier one (or fixed
    /// by the host), `estimate + overhead`; `None` when there is neither.
    pub anchored: Option<u64>,
    /// `max(anchored, estimate)`: the figure to act on.
    pub tokens: u64,
    /// The anchor, if any.
    pub anchor: Option<Anchor>,
    /// Reported tokens divided by our count of the same prefix: above 1 the
    /// provider sees more than we count (system prompt, tool definitions,
    /// a different tokenizer). Callers that size things in our units (keep
    /// the newest N tokens) divide by it. `None` without an anchor.
    pub ratio: Option<f64>,
    /// What the provider counts that the log never holds (system prompt,
    /// tool definitions): reported minus our estimate at the last anchor,
    /// zero when the report was below it. Carried across a compaction or
    /// pruning that drops the anchor (the last report before it, with our
    /// count of the surface it described, both read from the log), so the
    /// figures before and after stand on one basis until the next report,
    /// in this process and any later one. Without any report in the log,
    /// the overhead the host fixed
    /// ([`TokenMeter::with_fixed_overhead`]), else `None`.
    pub overhead: Option<u64>,
}

/// The last assistant message whose usage report the measure trusts.
///
/// Valid anchors are assistant messages appended (not checkpoints or
/// rewrites) with a non-zero usage report, and appended after the most
/// recent replace or rewrite on the surface: a report made before history
/// was compacted or pruned describes a context that no longer exists.
/// A zero report means "not reported" and is skipped; the previous valid
/// anchor stays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Anchor {
    /// The assistant message's seq.
    pub seq: Seq,
    /// Its usage `total()`: prompt plus output of the call that wrote it.
    pub reported: u64,
    /// Our count of the surface up to and including it.
    pub estimated: u64,
}

impl Anchor {
    /// Reported minus estimated, floored at zero: the unseen overhead.
    pub fn overhead(&self) -> u64 {
        self.reported.saturating_sub(self.estimated)
    }
}

impl Measure {
    fn from_parts(estimate: u64, anchor: Option<Anchor>, carried: Option<u64>) -> Measure {
        // Signed: the estimate can fall below the anchor's when a user
        // message ends a turn whose thinking the provider then drops.
        let anchored = match anchor {
            Some(a) => {
                let sum = i128::from(a.reported) + i128::from(estimate) - i128::from(a.estimated);
                Some(u64::try_from(sum.max(0)).unwrap_or(u64::MAX))
            }
            None => carried.map(|o| estimate.saturating_add(o)),
        };
        let ratio = anchor
            .filter(|a| a.estimated > 0)
            .map(|a| a.reported as f64 / a.estimated as f64);
        Measure {
            estimate,
            anchored,
            tokens: anchored.unwrap_or(0).max(estimate),
            anchor,
            ratio,
            overhead: anchor.map(|a| a.overhead()).or(carried),
        }
    }

    /// Adds the hidden pins' message to our own count. The anchored
    /// figure is left alone: a report made while pins were hidden already
    /// holds them, since the request carried them.
    fn with_pinned(mut self, pinned: u64) -> Measure {
        self.estimate = self.estimate.saturating_add(pinned);
        self.tokens = self.anchored.unwrap_or(0).max(self.estimate);
        self
    }
}

/// Marks a seq whose cost is not cached yet.
const UNCOUNTED: Cost = Cost {
    rest: u64::MAX,
    thinking: u64::MAX,
    user: false,
};

/// One message's cached cost, split as the turn rule needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cost {
    /// Everything but thinking.
    rest: u64,
    /// Thinking and redacted thinking: counted only while the turn lasts
    /// under [`PriorThinking::Dropped`].
    thinking: u64,
    /// A user message: it ends the turn.
    user: bool,
}

/// Measures one session's surface, caching each message's cost by seq and
/// keeping the surface total as the session changes.
///
/// Events are immutable once written, so a seq's cost never changes: the
/// cache is never invalidated. The surface total follows the session's
/// change journal: an append adds one cost (O(1), whatever the session's
/// length), a replace or rewrite subtracts what it hides and adds what it
/// shows. Navigation, a rolled-back batch or another session forces a full
/// recount from the cache; so does a replace or rewrite when earlier turns'
/// thinking is dropped, since which turn is the current one may change.
///
/// Thinking of earlier turns costs nothing under
/// [`PriorThinking::Dropped`]: the total is the sum of every message's
/// non-thinking cost plus the thinking of the assistant messages after the
/// last user message.
///
/// When a compaction drops the anchor, the meter carries the unseen
/// overhead of the last report before it (see [`Measure::overhead`]),
/// read from the log so that every meter opened on it agrees.
///
/// # Example
///
/// ```
/// use abridge_llm::Catalog;
/// use abridge_llm::Message;
/// use abridge_meter::TokenMeter;
/// use abridge_session::Session;
///
/// let mut session = Session::in_memory("demo");
/// session.append_message(Message::user("fix the build"))?;
/// let mut meter = TokenMeter::for_model(&Catalog::builtin().lookup("gpt-5").entry);
/// let before = meter.measure(&session).tokens;
/// session.append_message(Message::assistant("done"))?;
/// assert!(meter.measure(&session).tokens > before);
/// # Ok::<(), abridge_session::SessionError>(())
/// ```
#[derive(Debug, Clone)]
pub struct TokenMeter {
    cost: CostModel,
    /// The session the cache belongs to (by id).
    bound: Option<String>,
    cache: Vec<Cost>,
    /// Each tool call's cost, for messages with tool calls, by seq.
    calls: HashMap<Seq, Box<[u64]>>,
    /// Counts kept between processes, read before counting and given every
    /// new count.
    kept: Option<KeptCounts>,
    state: Option<Synced>,
    /// The overhead a host says its requests carry (system prompt, tool
    /// definitions), for a log with no usage report to show it.
    fixed_overhead: Option<u64>,
    /// The last stale anchor found in the log and its overhead: an anchor
    /// describes an immutable prefix, so this never goes stale itself.
    logged: Option<(Seq, u64)>,
}

/// The running totals and where in the journal they were taken.
#[derive(Debug, Clone)]
struct Synced {
    cursor: SurfaceCursor,
    /// Events in the session when synced: fewer later means another log.
    events: usize,
    /// Messages on the surface by our own bookkeeping, checked against the
    /// session's after every sync.
    visible: usize,
    /// Non-thinking cost of the surface (plus all thinking when it is
    /// kept).
    rest: u64,
    /// Thinking of the current turn, when earlier turns' is dropped.
    turn: u64,
    anchor: Option<Anchor>,
    /// The valid anchor's overhead, else the one carried from the log.
    overhead: Option<u64>,
}

impl Synced {
    /// Nothing counted yet, at `session`'s journal position.
    fn empty(session: &Session) -> Self {
        Synced {
            cursor: session.surface_cursor(),
            events: session.len(),
            visible: 0,
            rest: 0,
            turn: 0,
            anchor: None,
            overhead: None,
        }
    }

    fn total(&self) -> u64 {
        self.rest.saturating_add(self.turn)
    }

    /// Adds one message at the end of the surface.
    fn push(&mut self, cost: Cost, keep: PriorThinking) {
        if keep == PriorThinking::Kept {
            self.rest = self
                .rest
                .saturating_add(cost.rest.saturating_add(cost.thinking));
            return;
        }
        if cost.user {
            self.turn = 0;
        }
        self.rest = self.rest.saturating_add(cost.rest);
        self.turn = self.turn.saturating_add(cost.thinking);
    }

    fn set_anchor(&mut self, anchor: Anchor) {
        self.overhead = Some(anchor.overhead());
        self.anchor = Some(anchor);
    }
}

impl TokenMeter {
    /// A meter pricing messages with `cost`.
    pub fn new(cost: CostModel) -> Self {
        TokenMeter {
            cost,
            bound: None,
            cache: Vec::new(),
            calls: HashMap::new(),
            kept: None,
            state: None,
            fixed_overhead: None,
            logged: None,
        }
    }

    /// Reads message costs from `kept` before counting, and records there
    /// every message it counts (see [`KeptCounts`]). A kept count is used
    /// only when the message at its seq hashes the same as when it was
    /// counted; a stale one is counted again and replaced. Counts made for
    /// another cost model are never used: `kept` is ignored (and replaced
    /// by an empty set for this model) when its
    /// [`model`](KeptCounts::model) is not [`CostModel::kept_id`], or when
    /// this model keeps no counts.
    pub fn keep_counts(&mut self, kept: KeptCounts) {
        self.kept = match self.cost.kept_id() {
            Some(id) if id == kept.model() => Some(kept),
            Some(id) => Some(KeptCounts::new(id)),
            None => None,
        };
    }

    /// The kept counts, with every message counted since
    /// [`keep_counts`](Self::keep_counts) added: write them back when
    /// [`KeptCounts::changed`] says so.
    pub fn kept_counts(&self) -> Option<&KeptCounts> {
        self.kept.as_ref()
    }

    /// Takes the kept counts out of the meter (it keeps none after).
    pub fn take_kept_counts(&mut self) -> Option<KeptCounts> {
        self.kept.take()
    }

    /// Each tool call block's cost in the message at `seq`, in block order
    /// (empty when it calls no tool), from the same single count as
    /// [`seq_tokens`](Self::seq_tokens).
    pub fn call_tokens(&mut self, session: &Session, seq: Seq) -> &[u64] {
        self.bind(session);
        self.cached(session, seq);
        self.calls.get(&seq).map_or(&[], |calls| calls)
    }

    /// A meter for a catalog entry's tokenizer and image billing.
    pub fn for_model(entry: &ModelEntry) -> Self {
        Self::new(CostModel::for_model(entry))
    }

    /// The cost model in use.
    pub fn cost_model(&self) -> &CostModel {
        &self.cost
    }

    /// Tokens of the message at `seq` (0 if `seq` holds no message), cached:
    /// its whole cost, thinking included.
    pub fn seq_tokens(&mut self, session: &Session, seq: Seq) -> u64 {
        self.bind(session);
        let cost = self.cached(session, seq);
        cost.rest.saturating_add(cost.thinking)
    }

    /// Forgets everything when `session` is not the one the cache was
    /// built for. Sessions are told apart by their id.
    fn bind(&mut self, session: &Session) {
        let id = &session.header().session_id;
        if self.bound.as_ref() != Some(id) {
            self.cache.clear();
            self.calls.clear();
            self.state = None;
            self.logged = None;
            self.bound = Some(id.clone());
        }
    }

    fn cached(&mut self, session: &Session, seq: Seq) -> Cost {
        let none = Cost {
            rest: 0,
            thinking: 0,
            user: false,
        };
        let Ok(index) = usize::try_from(seq) else {
            return none;
        };
        if let Some(&cached) = self.cache.get(index)
            && cached != UNCOUNTED
        {
            return cached;
        }
        let cost = session
            .message(seq)
            .map_or(none, |m| self.count(seq, m.as_ref()));
        if index >= self.cache.len() {
            let want = (index + 1).max(session.len());
            self.cache.resize(want, UNCOUNTED);
        }
        self.cache[index] = cost;
        cost
    }

    /// Counts the message at `seq` once, or reads its kept count when its
    /// content hash matches; records its tool calls' costs.
    fn count(&mut self, seq: Seq, message: &Message) -> Cost {
        let user = message.role == Role::User;
        let hash = self.kept.as_ref().map(|_| content_hash(message));
        if let (Some(kept), Some(hash)) = (&self.kept, &hash)
            && let Some(found) = kept.get(seq, hash)
        {
            if !found.calls.is_empty() {
                self.calls.insert(seq, found.calls.clone());
            }
            return Cost {
                rest: found.rest,
                thinking: found.thinking,
                user,
            };
        }
        let priced = self.cost.priced(message);
        let calls: Box<[u64]> = priced.calls.into();
        if !calls.is_empty() {
            self.calls.insert(seq, calls.clone());
        }
        if let (Some(kept), Some(hash)) = (&mut self.kept, hash) {
            kept.put(
                seq,
                KeptCost {
                    hash,
                    rest: priced.rest,
                    thinking: priced.thinking,
                    calls,
                },
            );
        }
        Cost {
            rest: priced.rest,
            thinking: priced.thinking,
            user,
        }
    }

    /// Tokens of the surface positions `start..end` (clamped to the
    /// surface), from the cache.
    pub fn span_tokens(&mut self, session: &Session, start: usize, end: usize) -> u64 {
        self.bind(session);
        let seqs = session.surface().seqs();
        let end = end.min(seqs.len());
        let start = start.min(end);
        seqs[start..end]
            .iter()
            .map(|&seq| {
                let cost = self.cached(session, seq);
                cost.rest.saturating_add(cost.thinking)
            })
            .sum()
    }

    /// The measure of `session`'s surface now.
    ///
    /// Cheap when called after every change: each journal entry since the
    /// last call costs one cached lookup or one message count.
    pub fn measure(&mut self, session: &Session) -> Measure {
        let synced = self.sync(session);
        Measure::from_parts(synced.total(), synced.anchor, synced.overhead)
            .with_pinned(self.pinned_tokens(session))
    }

    /// Tokens of the message that carries the pins the surface does not
    /// show ([`Session::pinned_message`]), priced like any message; 0
    /// without one. Not cached: it changes whenever a pin is hidden.
    pub fn pinned_tokens(&self, session: &Session) -> u64 {
        session
            .pinned_message()
            .map_or(0, |message| self.cost_model().message(&message))
    }

    /// Counts the surface from scratch (through the cache), ignoring the
    /// running totals: what [`measure`](Self::measure) must always equal.
    /// The overhead carried from a dropped anchor is read from the log
    /// (see [`Measure::overhead`]), so a fresh meter, in this process or
    /// the next, agrees with this one.
    pub fn measure_full(&mut self, session: &Session) -> Measure {
        self.bind(session);
        let carried = self.carried_overhead(session);
        let recount = self.recount(session, carried);
        Measure::from_parts(recount.total(), recount.anchor, recount.overhead)
            .with_pinned(self.pinned_tokens(session))
    }

    fn sync(&mut self, session: &Session) -> Synced {
        self.bind(session);
        let Some(mut state) = self.state.take() else {
            return self.full_sync(session);
        };
        if session.len() < state.events {
            return self.full_sync(session);
        }
        let Some(changes) = session.surface_changes_since(state.cursor) else {
            return self.full_sync(session);
        };
        let keep = self.cost.prior_thinking();
        for change in changes {
            let added = self.cached(session, change.seq);
            state.visible = (state.visible + 1).saturating_sub(change.removed.len());
            if change.removed.is_empty() {
                state.push(added, keep);
                if let Some(reported) = anchor_report(session, change.seq) {
                    state.set_anchor(Anchor {
                        seq: change.seq,
                        reported,
                        estimated: state.total(),
                    });
                }
            } else if keep == PriorThinking::Dropped {
                // Which messages belong to the current turn may have
                // changed: recount, keeping the overhead.
                return self.full_sync(session);
            } else {
                state.rest = state
                    .rest
                    .saturating_add(added.rest.saturating_add(added.thinking));
                for &seq in &change.removed {
                    let hidden = self.cached(session, seq);
                    state.rest = state
                        .rest
                        .saturating_sub(hidden.rest.saturating_add(hidden.thinking));
                }
                // A report older than this change describes a context that
                // is gone; its overhead stays.
                state.anchor = None;
            }
        }
        // The journal cannot prove it belongs to this `Session` value (a
        // log reopened under the same id restarts its journal); a surface
        // of another length means it did not.
        if state.visible != session.surface().len() {
            tracing::debug!("surface length disagrees with the journal; recounting");
            return self.full_sync(session);
        }
        state.cursor = session.surface_cursor();
        state.events = session.len();
        self.state = Some(state.clone());
        state
    }

    fn full_sync(&mut self, session: &Session) -> Synced {
        let carried = self.carried_overhead(session);
        let state = self.recount(session, carried);
        self.state = Some(state.clone());
        state
    }

    /// The totals of the surface from the cache; `carried` is the overhead
    /// to keep when no anchor is valid.
    fn recount(&mut self, session: &Session, carried: Option<u64>) -> Synced {
        let seqs = session.surface().seqs();
        let last_modified = seqs
            .iter()
            .copied()
            .filter(|&seq| !is_append(session, seq))
            .max();
        let keep = self.cost.prior_thinking();
        let mut state = Synced {
            visible: seqs.len(),
            overhead: carried,
            ..Synced::empty(session)
        };
        for &seq in seqs {
            let cost = self.cached(session, seq);
            state.push(cost, keep);
            if last_modified.is_none_or(|m| seq > m)
                && let Some(reported) = anchor_report(session, seq)
            {
                state.set_anchor(Anchor {
                    seq,
                    reported,
                    estimated: state.total(),
                });
            }
        }
        state
    }
}

fn is_append(session: &Session, seq: Seq) -> bool {
    session
        .event(seq)
        .and_then(|e| e.message_event())
        .is_some_and(|m| m.op == SurfaceOp::Append)
}

/// The usage an appended assistant message at `seq` reports, if it can
/// anchor: non-zero, and not a checkpoint or a rewrite.
fn anchor_report(session: &Session, seq: Seq) -> Option<u64> {
    let event = session.event(seq)?.message_event()?;
    if event.op != SurfaceOp::Append {
        return None;
    }
    reported_usage(&event.message)
}

/// An assistant message's non-zero reported usage total.
fn reported_usage(message: &Message) -> Option<u64> {
    if message.role != Role::Assistant {
        return None;
    }
    message
        .meta
        .usage
        .filter(|u| !u.is_zero())
        .map(|u| u.total())
}

mod carried;
#[cfg(test)]
mod tests;
