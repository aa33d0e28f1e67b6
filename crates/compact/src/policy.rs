//! What to keep and how to count: the [`Policy`] every plan is made under.

use std::sync::Arc;

use abridge_meter::EstimateCounter;
use abridge_meter::TokenCounter;
use abridge_session::Session;

use crate::redact::Redactor;

/// How many of the newest tokens a compaction keeps verbatim by default.
pub const DEFAULT_KEEP_RECENT_TOKENS: u64 = 20_000;

/// What to keep and how to count.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Newest tokens kept verbatim (whole units). Default
    /// [`DEFAULT_KEEP_RECENT_TOKENS`]. Zero keeps only the newest unit.
    pub keep_recent_tokens: u64,
    /// Reported/estimated ratio to scale `keep_recent_tokens` by; `None`
    /// asks the counter.
    pub reported_ratio: Option<f64>,
    /// The one counter for trigger, walk, shrink check and success check.
    pub counter: Arc<dyn TokenCounter>,
    /// What the user asked the checkpoint to focus on.
    pub instructions: Option<String>,
    /// The figure the compaction must bring the context down to, when the
    /// caller has one: the retention budget then shrinks by the share of
    /// it the unseen overhead takes (see [`effective_keep`](Self::effective_keep)).
    pub goal: Option<u64>,
    /// Takes secrets out of every message a plan hands a method (see
    /// [`Redactor`]); `None` hands them over as logged. The `abridge`
    /// crate's settings turn it on by default.
    pub redactor: Option<Arc<Redactor>>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy::new(Arc::new(EstimateCounter::new()))
    }
}

impl Policy {
    /// Defaults, counting with `counter`.
    pub fn new(counter: Arc<dyn TokenCounter>) -> Self {
        Policy {
            keep_recent_tokens: DEFAULT_KEEP_RECENT_TOKENS,
            reported_ratio: None,
            counter,
            instructions: None,
            goal: None,
            redactor: None,
        }
    }

    /// Sets `keep_recent_tokens`.
    pub fn with_keep_recent_tokens(mut self, tokens: u64) -> Self {
        self.keep_recent_tokens = tokens;
        self
    }

    /// Sets the figure the compaction must reach.
    pub fn with_goal(mut self, goal: u64) -> Self {
        self.goal = Some(goal);
        self
    }

    /// Redacts what plans made under this policy hand a method.
    pub fn with_redactor(mut self, redactor: Arc<Redactor>) -> Self {
        self.redactor = Some(redactor);
        self
    }

    /// Sets the focus instructions.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// The retention budget for `session`, never more than
    /// `keep_recent_tokens`:
    ///
    /// 1. With a [`goal`](Self::goal), shrunk in proportion to the share
    ///    of the goal the unseen overhead takes (the system prompt and tool
    ///    definitions a usage report counts and the log never holds: the
    ///    counter's context figure minus the surface's own estimate).
    ///    Without it, a session whose overhead is large against the goal
    ///    keeps so much verbatim that no checkpoint can reach the goal.
    /// 2. Scaled down by the reported/estimated ratio when the provider
    ///    counts more than we estimate, so the kept part really costs what
    ///    was asked.
    pub fn effective_keep(&self, session: &Session) -> u64 {
        let keep = match self.goal {
            Some(goal) => keep_beside_overhead(
                self.keep_recent_tokens,
                self.counter.context_tokens(session),
                self.counter.surface_tokens(session),
                goal,
            ),
            None => self.keep_recent_tokens,
        };
        let ratio = self
            .reported_ratio
            .unwrap_or_else(|| self.counter.reported_ratio(session));
        scale_keep(keep, ratio)
    }
}

/// `keep` times the share of `goal` left once the overhead (`context`
/// minus `surface`) is taken out of it; at least 1 and at most `keep`.
fn keep_beside_overhead(keep: u64, context: u64, surface: u64, goal: u64) -> u64 {
    let overhead = context.saturating_sub(surface);
    if overhead == 0 || goal == 0 {
        return keep;
    }
    let room = goal.saturating_sub(overhead);
    let scaled = u128::from(keep) * u128::from(room) / u128::from(goal);
    u64::try_from(scaled).unwrap_or(keep).clamp(1, keep.max(1))
}

/// `keep / ratio` when `ratio > 1` (and finite), else `keep`.
pub(crate) fn scale_keep(keep: u64, ratio: f64) -> u64 {
    if ratio.is_finite() && ratio > 1.0 {
        (keep as f64 / ratio).floor() as u64
    } else {
        keep
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overhead_takes_its_share_of_the_goal_out_of_the_budget() {
        // No overhead, or no goal: the budget as configured.
        assert_eq!(keep_beside_overhead(20_000, 50_000, 50_000, 80_000), 20_000);
        assert_eq!(keep_beside_overhead(20_000, 90_000, 50_000, 0), 20_000);
        // 40k of overhead against an 80k goal leaves half the budget.
        assert_eq!(keep_beside_overhead(20_000, 90_000, 50_000, 80_000), 10_000);
        // Overhead past the goal keeps one token, never zero or more.
        assert_eq!(keep_beside_overhead(20_000, 200_000, 50_000, 80_000), 1);
    }
}
