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

/// What the meter says about a session's surface.
///
/// `tokens` is the one figure to act on: the compaction trigger and the
/// check that a compaction freed enough must both use it, so they can never
/// disagree about whether the history fits.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Measure {
    /// Our own count of every message on the surface.
    pub estimate: u64,
    /// The last anchor's reported usage plus our count of everything after
    /// it; `None` when there is no valid anchor (see [`Anchor`]).
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

impl Measure {
    fn from_parts(estimate: u64, anchor: Option<Anchor>) -> Measure {
        let anchored = anchor.map(|a| {
            a.reported
                .saturating_add(estimate.saturating_sub(a.estimated))
        });
        let ratio = anchor
            .filter(|a| a.estimated > 0)
            .map(|a| a.reported as f64 / a.estimated as f64);
        Measure {
            estimate,
            anchored,
            tokens: anchored.unwrap_or(0).max(estimate),
            anchor,
            ratio,
        }
    }
}

/// Marks a seq whose cost is not cached yet.
const UNCOUNTED: u64 = u64::MAX;

/// Measures one session's surface, caching each message's cost by seq and
/// keeping the surface total as the session changes.
///
/// Events are immutable once written, so a seq's cost never changes: the
/// cache is never invalidated. The surface total follows the session's
/// change journal: an append adds one cost (O(1), whatever the session's
/// length), a replace or rewrite subtracts what it hides and adds what it
/// shows. Navigation, a rolled-back batch or another session forces a full
/// recount from the cache.
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
    cache: Vec<u64>,
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
    total: u64,
    anchor: Option<Anchor>,
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

    /// Tokens of the message at `seq` (0 if `seq` holds no message), cached.
    pub fn seq_tokens(&mut self, session: &Session, seq: Seq) -> u64 {
        self.bind(session);
        self.cached(session, seq)
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

    fn cached(&mut self, session: &Session, seq: Seq) -> u64 {
        let Ok(index) = usize::try_from(seq) else {
            return 0;
        };
        if let Some(&cached) = self.cache.get(index)
            && cached != UNCOUNTED
        {
            return cached;
        }
        let cost = session.message(seq).map_or(0, |m| self.cost.message(m));
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
            .map(|&seq| self.cached(session, seq))
            .sum()
    }

    /// The measure of `session`'s surface now.
    ///
    /// Cheap when called after every change: each journal entry since the
    /// last call costs one cached lookup or one message count.
    pub fn measure(&mut self, session: &Session) -> Measure {
        let synced = self.sync(session);
        Measure::from_parts(synced.total, synced.anchor)
    }

    /// Counts the surface from scratch (through the cache), ignoring the
    /// running totals: what [`measure`](Self::measure) must always equal.
    pub fn measure_full(&mut self, session: &Session) -> Measure {
        self.bind(session);
        let (total, anchor) = self.recount(session);
        Measure::from_parts(total, anchor)
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
        for change in changes {
            let added = self.cached(session, change.seq);
            state.total = state.total.saturating_add(added);
            state.visible = (state.visible + 1).saturating_sub(change.removed.len());
            if change.removed.is_empty() {
                if let Some(reported) = anchor_report(session, change.seq) {
                    state.anchor = Some(Anchor {
                        seq: change.seq,
                        reported,
                        estimated: state.total,
                    });
                }
            } else {
                for &seq in &change.removed {
                    let hidden = self.cached(session, seq);
                    state.total = state.total.saturating_sub(hidden);
                }
                // A report older than this change describes a context that
                // is gone.
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
        let (total, anchor) = self.recount(session);
        let state = Synced {
            cursor: session.surface_cursor(),
            events: session.len(),
            visible: session.surface().len(),
            total,
            anchor,
        };
        self.state = Some(state.clone());
        state
    }

    fn recount(&mut self, session: &Session) -> (u64, Option<Anchor>) {
        let seqs = session.surface().seqs();
        let last_modified = seqs
            .iter()
            .copied()
            .filter(|&seq| !is_append(session, seq))
            .max();
        let mut total: u64 = 0;
        let mut anchor = None;
        for &seq in seqs {
            total = total.saturating_add(self.cached(session, seq));
            if last_modified.is_none_or(|m| seq > m)
                && let Some(reported) = anchor_report(session, seq)
            {
                anchor = Some(Anchor {
                    seq,
                    reported,
                    estimated: total,
                });
            }
        }
        (total, anchor)
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
        assert_eq!(after.tokens, 8);
        assert_eq!(m.measure_full(&s), after);
        // The next reply anchors again.
        let b = s.append_message(assistant("abcd", 900)).unwrap();
        let later = m.measure(&s);
        assert_eq!(later.anchor.map(|a| a.seq), Some(b));
        assert_eq!(later.tokens, 900);
        assert_eq!(m.measure_full(&s), later);
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
