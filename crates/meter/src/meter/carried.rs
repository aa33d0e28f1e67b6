//! The overhead a measure carries when no usage report describes the
//! surface as it is now.
//!
//! A usage report counts what the log never holds (the system prompt and
//! the tool definitions). After a replace or a rewrite the report is
//! stale, but that overhead is still in every request. It is read back
//! from the log itself, not kept in the meter's memory: the last report
//! on the active path before the latest change, minus our count of the
//! surface as it stood when that report was made. So `compact`, a later
//! `stats`, a server and a report opened on the same log give one figure.

use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::SurfaceOp;

use super::Synced;
use super::TokenMeter;
use super::anchor_report;

impl TokenMeter {
    /// Carries `tokens` of overhead (the system prompt and tool
    /// definitions a host sends with every request) when the log holds no
    /// usage report to show it; a report, current or stale, takes
    /// precedence. For a replay that left the reports out (`abridge
    /// simulate`), so its figures stand on the same basis as the source's.
    #[must_use]
    pub fn with_fixed_overhead(mut self, tokens: u64) -> Self {
        self.fixed_overhead = Some(tokens);
        self.state = None;
        self
    }

    /// The overhead to add when no report is valid: the log's, else the
    /// one the host fixed.
    pub(super) fn carried_overhead(&mut self, session: &Session) -> Option<u64> {
        self.logged_overhead(session).or(self.fixed_overhead)
    }

    /// The overhead of the last usage report on the active path that a
    /// later replace or rewrite made stale; `None` when there is none.
    fn logged_overhead(&mut self, session: &Session) -> Option<u64> {
        let path = session.active_path();
        let last_change = path.iter().rposition(|&seq| is_change(session, seq))?;
        let at = path[..last_change]
            .iter()
            .rposition(|&seq| anchor_report(session, seq).is_some())?;
        let seq = path[at];
        if let Some((memo, overhead)) = self.logged
            && memo == seq
        {
            return Some(overhead);
        }
        let reported = anchor_report(session, seq)?;
        let keep = self.cost.prior_thinking();
        let mut then = Synced::empty(session);
        for surface_seq in surface_after(session, &path[..=at]) {
            let cost = self.cached(session, surface_seq);
            then.push(cost, keep);
        }
        let overhead = reported.saturating_sub(then.total());
        self.logged = Some((seq, overhead));
        Some(overhead)
    }
}

/// True for a message event that changes the surface other than by an
/// append: a checkpoint or a rewrite.
fn is_change(session: &Session, seq: Seq) -> bool {
    session
        .event(seq)
        .and_then(|e| e.message_event())
        .is_some_and(|m| m.op != SurfaceOp::Append)
}

/// The surface `path` (a prefix of the active path) folds to. Every event
/// on it was checked when it was written; an operation that does not fit
/// is skipped, as the session's own fold would refuse it.
fn surface_after(session: &Session, path: &[Seq]) -> Vec<Seq> {
    let mut surface: Vec<Seq> = Vec::new();
    for &seq in path {
        let Some(event) = session.event(seq).and_then(|e| e.message_event()) else {
            continue;
        };
        match event.op {
            SurfaceOp::Append => surface.push(seq),
            SurfaceOp::Replace { start, end } => {
                if start <= end && end < surface.len() {
                    surface.splice(start..=end, [seq]);
                }
            }
            SurfaceOp::Rewrite { target } => {
                if let Some(slot) = surface.iter_mut().rev().find(|s| **s == target) {
                    *slot = seq;
                }
            }
        }
    }
    surface
}
