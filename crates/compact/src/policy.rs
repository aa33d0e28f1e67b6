//! What to keep and how to count: the [`Policy`] every plan is made under.

use std::sync::Arc;

use abridge_meter::EstimateCounter;
use abridge_meter::TokenCounter;
use abridge_session::Session;

use abridge_redact::Redactor;

/// How many of the newest tokens a compaction keeps verbatim by default.
pub const DEFAULT_KEEP_RECENT_TOKENS: u64 = 20_000;

/// What to keep and how to count.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Newest tokens kept verbatim (whole units). Default
    /// [`DEFAULT_KEEP_RECENT_TOKENS`]. Zero keeps only the newest unit.
    pub keep_recent_tokens: u64,
    /// The one counter for trigger, walk, shrink check and success check.
    pub counter: Arc<dyn TokenCounter>,
    /// What the user asked the checkpoint to focus on.
    pub instructions: Option<String>,
    /// The figure the compaction must bring the context down to, when the
    /// caller has one: the retention budget then shrinks by the share of
    /// it the unseen overhead takes (see [`effective_keep`](Self::effective_keep)).
    pub goal: Option<u64>,
    /// The least a landing must reclaim, in tokens: less would not pay
    /// for the prompt-cache break a change to the history causes, and the
    /// commit refuses it ([`CompactError::TooLittle`](crate::host::CompactError::TooLittle)),
    /// unless it reclaims at least as much as it leaves (the break
    /// re-writes only what is left, so on a small context that pays).
    /// Default 0: any saving lands.
    pub min_reclaim: u64,
    /// The most a landing may leave, in tokens (the window): a landing
    /// that leaves a request that cannot be sent is refused
    /// ([`CompactError::OverWindow`](crate::host::CompactError::OverWindow)).
    /// Default `None`: no ceiling.
    pub ceiling: Option<u64>,
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
            counter,
            min_reclaim: 0,
            ceiling: None,
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

    /// Sets the least a landing must reclaim.
    pub fn with_min_reclaim(mut self, tokens: u64) -> Self {
        self.min_reclaim = tokens;
        self
    }

    /// Sets the most a landing may leave.
    pub fn with_ceiling(mut self, tokens: u64) -> Self {
        self.ceiling = Some(tokens);
        self
    }

    /// The retention budget for `session`: tokens of recent history kept
    /// verbatim, never more than `keep_recent_tokens`.
    ///
    /// The budget applies to the history, not to the fixed overhead (the
    /// system prompt and tool definitions a usage report counts and the
    /// log never holds, [`TokenCounter::overhead_tokens`]). With a
    /// [`goal`](Self::goal), the kept part takes the same share of the
    /// room the overhead leaves under the goal as the settings give it of
    /// the whole goal; without that, a session whose overhead is large
    /// against the goal keeps so much verbatim that no checkpoint can
    /// reach it.
    pub fn effective_keep(&self, session: &Session) -> u64 {
        match self.goal {
            Some(goal) => keep_beside_overhead(
                self.keep_recent_tokens,
                self.counter.overhead_tokens(session),
                goal,
            ),
            None => self.keep_recent_tokens,
        }
    }
}

/// `keep` times the share of `goal` left once `overhead` is taken out of
/// it; at least 1 and at most `keep`.
fn keep_beside_overhead(keep: u64, overhead: u64, goal: u64) -> u64 {
    if overhead == 0 || goal == 0 {
        return keep;
    }
    let room = goal.saturating_sub(overhead);
    let scaled = u128::from(keep) * u128::from(room) / u128::from(goal);
    u64::try_from(scaled).unwrap_or(keep).clamp(1, keep.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 27, point 5: the overhead a usage report shows (system
    /// prompt, tools) shrank the keep budget twice, once by its share of
    /// the goal and again through the reported/estimated ratio it
    /// inflates, so digest on Claude Code sessions kept one message. It
    /// counts once.
    #[test]
    fn the_keep_budget_applies_to_the_history_not_to_the_overhead() {
        use abridge_llm::Catalog;
        use abridge_llm::Message;
        use abridge_llm::Meta;
        use abridge_llm::Usage;
        use abridge_meter::MeterCounter;

        let counter = Arc::new(MeterCounter::for_model(
            &Catalog::builtin().lookup("gpt-5").entry,
        ));
        let mut session = Session::in_memory("keep");
        let user = Message::user("port the parser to the new grammar ".repeat(200));
        let reply = Message::assistant("done");
        let estimate = counter.message_tokens(&user) + counter.message_tokens(&reply);
        session.append_message(user).unwrap();
        session
            .append_message(reply.with_meta(Meta {
                usage: Some(Usage {
                    input: estimate + 40_000,
                    ..Usage::default()
                }),
                ..Meta::default()
            }))
            .unwrap();
        assert_eq!(counter.overhead_tokens(&session), 40_000);
        let policy = Policy::new(counter)
            .with_keep_recent_tokens(20_000)
            .with_goal(80_000);
        // 40k of overhead against an 80k goal: half the budget, no less.
        assert_eq!(policy.effective_keep(&session), 10_000);
    }

    #[test]
    fn overhead_takes_its_share_of_the_goal_out_of_the_budget() {
        // No overhead, or no goal: the budget as configured.
        assert_eq!(keep_beside_overhead(20_000, 0, 80_000), 20_000);
        assert_eq!(keep_beside_overhead(20_000, 40_000, 0), 20_000);
        // 40k of overhead against an 80k goal leaves half the budget.
        assert_eq!(keep_beside_overhead(20_000, 40_000, 80_000), 10_000);
        // Overhead past the goal keeps one token, never zero or more.
        assert_eq!(keep_beside_overhead(20_000, 150_000, 80_000), 1);
    }
}
