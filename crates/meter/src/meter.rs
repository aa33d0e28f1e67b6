//! The token meter: the figure compaction acts on, kept incrementally.

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
    /// [`overhead`](Self::overhead) carried from an earlier one, `estimate
    /// + overhead`; `None` when the meter has seen no report.
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
    /// zero when the report was below it. Kept by the meter across a
    /// compaction or pruning that drops the anchor, so the figures before
    /// and after stand on one basis until the next report. `None` until
    /// the meter has seen a report.
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
/// The meter also keeps the unseen overhead of the last anchor (see
/// [`Measure::overhead`]) when a compaction drops that anchor.
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
    state: Option<Synced>,
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
    /// The overhead of the last anchor seen, kept after it is dropped.
    overhead: Option<u64>,
}

impl Synced {
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
            state: None,
        }
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
            self.state = None;
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
        let cost = session.message(seq).map_or(none, |m| {
            let (rest, thinking) = self.cost.split(m);
            Cost {
                rest,
                thinking,
                user: m.role == Role::User,
            }
        });
        if index >= self.cache.len() {
            let want = (index + 1).max(session.len());
            self.cache.resize(want, UNCOUNTED);
        }
        self.cache[index] = cost;
        cost
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
    }

    /// Counts the surface from scratch (through the cache), ignoring the
    /// running totals: what [`measure`](Self::measure) must always equal.
    /// The overhead carried from a dropped anchor is the meter's own state
    /// (the log no longer shows it), so a fresh meter's recount agrees with
    /// this one's until the first report.
    pub fn measure_full(&mut self, session: &Session) -> Measure {
        self.bind(session);
        let carried = self.state.as_ref().and_then(|s| s.overhead);
        let recount = self.recount(session, carried);
        Measure::from_parts(recount.total(), recount.anchor, recount.overhead)
    }

    fn sync(&mut self, session: &Session) -> Synced {
        self.bind(session);
        let Some(mut state) = self.state.take() else {
            return self.full_sync(session, None);
        };
        if session.len() < state.events {
            return self.full_sync(session, state.overhead);
        }
        let Some(changes) = session.surface_changes_since(state.cursor) else {
            return self.full_sync(session, state.overhead);
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
                return self.full_sync(session, state.overhead);
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
            return self.full_sync(session, state.overhead);
        }
        state.cursor = session.surface_cursor();
        state.events = session.len();
        self.state = Some(state.clone());
        state
    }

    fn full_sync(&mut self, session: &Session, carried: Option<u64>) -> Synced {
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
            cursor: session.surface_cursor(),
            events: session.len(),
            visible: seqs.len(),
            rest: 0,
            turn: 0,
            anchor: None,
            overhead: carried,
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use abridge_llm::ImageBilling;
    use abridge_llm::Meta;
    use abridge_llm::Usage;
    use abridge_session::Draft;
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::tokenizer::Estimate;

    /// bytes/4 with a 4-token message overhead and 2 per block: "abcd" costs
    /// 4 + 2 + 1 = 7.
    fn meter() -> TokenMeter {
        TokenMeter::new(CostModel::new(Arc::new(Estimate), ImageBilling::Anthropic))
    }

    fn assistant(text: &str, reported: u64) -> Message {
        Message::assistant(text).with_meta(Meta {
            usage: Some(Usage {
                input: reported.saturating_sub(1),
                output: reported.min(1),
                ..Usage::default()
            }),
            ..Meta::default()
        })
    }

    #[test]
    fn estimate_without_reports() {
        let mut s = Session::in_memory("t");
        let mut m = meter();
        assert_eq!(m.measure(&s).tokens, 0);
        s.append_message(Message::user("abcd")).unwrap();
        s.append_message(Message::assistant("abcdabcd")).unwrap();
        let measure = m.measure(&s);
        assert_eq!(measure.estimate, 7 + 8);
        assert_eq!(measure.anchored, None);
        assert_eq!(measure.ratio, None);
        assert_eq!(measure.tokens, 15);
    }

    #[test]
    fn anchoring_adds_what_came_after_the_report() {
        let mut s = Session::in_memory("t");
        let mut m = meter();
        s.append_message(Message::user("abcd")).unwrap(); // 7
        let a = s.append_message(assistant("abcd", 70)).unwrap(); // 7
        s.append_message(Message::user("abcdabcd")).unwrap(); // 8
        let measure = m.measure(&s);
        assert_eq!(measure.estimate, 22);
        assert_eq!(
            measure.anchor,
            Some(Anchor {
                seq: a,
                reported: 70,
                estimated: 14
            })
        );
        assert_eq!(measure.anchored, Some(78));
        assert_eq!(measure.tokens, 78);
        assert_eq!(measure.ratio, Some(5.0));
    }

    #[test]
    fn a_report_below_the_estimate_never_lowers_the_figure() {
        let mut s = Session::in_memory("t");
        let mut m = meter();
        s.append_message(Message::user("abcd".repeat(10))).unwrap(); // 16
        s.append_message(assistant("abcd", 3)).unwrap(); // 7
        let measure = m.measure(&s);
        assert_eq!(measure.anchored, Some(3));
        assert_eq!(measure.tokens, 23);
        assert_eq!(measure.ratio, Some(3.0 / 23.0));
    }

    #[test]
    fn zero_reports_are_no_reports() {
        let mut s = Session::in_memory("t");
        let mut m = meter();
        s.append_message(Message::user("abcd")).unwrap();
        let a = s.append_message(assistant("abcd", 50)).unwrap();
        s.append_message(assistant("abcd", 0)).unwrap();
        let measure = m.measure(&s);
        assert_eq!(measure.anchor.map(|a| a.seq), Some(a));
        assert_eq!(measure.anchored, Some(57));
        assert_eq!(m.measure_full(&s), measure);
    }

    #[test]
    fn compaction_drops_the_stale_anchor() {
        let mut s = Session::in_memory("t");
        let mut m = meter();
        let u = s.append_message(Message::user("abcd".repeat(100))).unwrap();
        let a = s.append_message(assistant("abcd", 5000)).unwrap();
        assert_eq!(m.measure(&s).tokens, 5000);
        s.append(Draft::replace(Message::user("summary!"), 0, 1, vec![u, a]))
            .unwrap();
        let after = m.measure(&s);
        assert_eq!(after.anchor, None);
        assert_eq!(after.estimate, 8);
        // The overhead the report showed (5000 - 113) stays.
        assert_eq!(after.overhead, Some(5000 - 113));
        assert_eq!(after.tokens, 8 + 5000 - 113);
        assert_eq!(m.measure_full(&s), after);
        // The next reply anchors again.
        let b = s.append_message(assistant("abcd", 900)).unwrap();
        let later = m.measure(&s);
        assert_eq!(later.anchor.map(|a| a.seq), Some(b));
        assert_eq!(later.tokens, 900);
        assert_eq!(m.measure_full(&s), later);
    }

    /// Issue 16, point 2: a usage report far above our estimate (a system
    /// prompt and tool definitions the log never holds), then a compaction
    /// hiding most messages. Before and after must stand on one basis: the
    /// figure after is the estimate after plus the overhead, not a bare
    /// estimate, so "before -> after" reports what the compaction freed.
    #[test]
    fn compaction_keeps_the_unseen_overhead_until_the_next_report() {
        let mut s = Session::in_memory("t");
        let mut m = meter();
        let mut hidden = Vec::new();
        for _ in 0..10 {
            hidden.push(s.append_message(Message::user("abcd".repeat(400))).unwrap()); // 406
            hidden.push(
                s.append_message(Message::assistant("abcd".repeat(100)))
                    .unwrap(),
            ); // 106
        }
        let kept = s.append_message(Message::user("abcd".repeat(40))).unwrap(); // 46
        let _ = kept;
        let overhead = 38_000;
        let estimate_before = 10 * (406 + 106) + 46 + 7;
        s.append_message(assistant("abcd", estimate_before + overhead))
            .unwrap();
        let before = m.measure(&s);
        assert_eq!(before.estimate, estimate_before);
        assert_eq!(before.tokens, estimate_before + overhead);
        assert_eq!(before.overhead, Some(overhead));

        // A compaction hides the first twenty messages behind a checkpoint.
        s.append(Draft::replace(Message::user("summary!"), 0, 19, hidden))
            .unwrap();
        let after = m.measure(&s);
        assert_eq!(after.anchor, None);
        assert_eq!(after.estimate, 8 + 46 + 7);
        assert_eq!(after.overhead, Some(overhead));
        assert_eq!(after.anchored, Some(after.estimate + overhead));
        assert_eq!(after.tokens, after.estimate + overhead);
        assert_eq!(m.measure_full(&s), after);
        // What the compaction freed is what it hid, on either basis.
        assert_eq!(
            before.tokens - after.tokens,
            before.estimate - after.estimate
        );

        // Appends before the next report stay on the same basis.
        s.append_message(Message::user("abcd")).unwrap();
        assert_eq!(m.measure(&s).tokens, after.tokens + 7);

        // The next report takes over, with its own overhead.
        s.append_message(assistant("abcd", 1000)).unwrap();
        let next = m.measure(&s);
        assert_eq!(next.anchor.map(|a| a.reported), Some(1000));
        assert_eq!(next.overhead, Some(1000 - (after.estimate + 7 + 7)));
        assert_eq!(next.tokens, 1000);
    }

    #[test]
    fn earlier_turns_thinking_is_free_when_dropped() {
        let thinking = |text: &str| {
            let mut m = Message::assistant("abcd");
            m.content.insert(
                0,
                abridge_llm::Block::Thinking {
                    thinking: text.into(),
                    signature: Some("x".repeat(1600)),
                },
            );
            m
        };
        let mut s = Session::in_memory("t");
        let mut m = meter();
        s.append_message(Message::user("abcd")).unwrap(); // 7
        s.append_message(thinking("abcd")).unwrap(); // 7 + (2 + 300)
        // The current turn's thinking is read: the signature sizes it.
        assert_eq!(m.measure(&s).estimate, 7 + 7 + 302);
        // A tool result does not end the turn.
        s.append_message(Message::tool_result("c1", "abcd", false))
            .unwrap(); // 4 + 2 + 10 + 2 + 1 = 19
        assert_eq!(m.measure(&s).estimate, 7 + 7 + 302 + 19);
        // A user message does: the thinking before it costs nothing.
        s.append_message(Message::user("abcd")).unwrap();
        let dropped = m.measure(&s);
        assert_eq!(dropped.estimate, 7 + 7 + 19 + 7);
        assert_eq!(m.measure_full(&s), dropped);

        // Lines that keep earlier thinking count it.
        let mut kept = TokenMeter::new(
            CostModel::new(Arc::new(Estimate), ImageBilling::Anthropic)
                .with_prior_thinking(PriorThinking::Kept),
        );
        assert_eq!(kept.measure(&s).estimate, 7 + 7 + 302 + 19 + 7);
    }

    #[test]
    fn rewrites_swap_costs() {
        let mut s = Session::in_memory("t");
        let mut m = meter();
        let mut call = Message::assistant("");
        call.content = vec![abridge_llm::Block::ToolCall {
            id: "c1".into(),
            name: "read".into(),
            arguments: serde_json::json!({}),
        }];
        s.append_message(call).unwrap();
        let r = s
            .append_message(Message::tool_result("c1", "x".repeat(4000), false))
            .unwrap();
        let before = m.measure(&s).estimate;
        s.append(Draft::rewrite(
            Message::tool_result("c1", "[pruned]", false),
            r,
        ))
        .unwrap();
        let after = m.measure(&s);
        assert_eq!(before - after.estimate, 1000 - 2);
        assert_eq!(m.measure_full(&s), after);
    }

    #[test]
    fn another_session_is_recounted() {
        let mut a = Session::in_memory("a");
        a.append_message(Message::user("abcd")).unwrap();
        let mut b = Session::in_memory("b");
        b.append_message(Message::user("abcdabcd")).unwrap();
        let mut m = meter();
        assert_eq!(m.measure(&a).estimate, 7);
        // Same seqs and journal position, other session: nothing cached
        // for `a` may leak into `b`.
        assert_eq!(m.measure(&b).estimate, 8);
        assert_eq!(m.seq_tokens(&a, 0), 7);
    }
}
