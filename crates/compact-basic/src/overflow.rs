//! Recovering from a full context: one maximal reduction after an
//! overflow, and repeated compaction while still over the threshold.

use std::sync::Arc;

use abridge_compact::CompactError;
use abridge_compact::CompactionMethod;
use abridge_compact::Outcome;
use abridge_compact::Policy;
use abridge_compact::Trigger;
use abridge_compact::compact_session;
use abridge_session::Session;

/// Rounds [`compact_under_pressure`] tries by default.
pub const DEFAULT_PRESSURE_ROUNDS: usize = 3;

/// After the provider refused a request as too large: one compaction that
/// keeps only the newest indivisible unit (a user message, or an assistant
/// message with all its tool results). Succeeds only if the surface
/// actually changed.
///
/// # Errors
/// As [`compact_session`]; [`CompactError::Commit`] when the surface did
/// not change.
pub async fn recover_overflow(
    session: &mut Session,
    methods: &[Arc<dyn CompactionMethod>],
    policy: &Policy,
) -> Result<Outcome, CompactError> {
    let before = session.surface().seqs().to_vec();
    let outcome = compact_session(session, methods, policy, Trigger::Overflow).await?;
    if session.surface().seqs() == before.as_slice() {
        return Err(CompactError::Commit {
            reason: "overflow recovery left the surface unchanged".to_string(),
        });
    }
    Ok(outcome)
}

/// What [`compact_under_pressure`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pressure {
    /// Each compaction that landed, in order.
    pub outcomes: Vec<Outcome>,
    /// The figure to act on at the end.
    pub tokens: u64,
    /// The threshold compared against.
    pub threshold: u64,
}

impl Pressure {
    /// True when the context ended at or under the threshold.
    pub fn relieved(&self) -> bool {
        self.tokens <= self.threshold
    }
}

/// Compacts while the counter's figure is over `threshold`, up to
/// `max_rounds` times, stopping early when a round frees nothing. The
/// figure compared is the policy counter's, the same one the trigger used.
///
/// # Errors
/// A round's error when no round landed; later rounds' errors end the loop
/// quietly (what landed stays landed).
pub async fn compact_under_pressure(
    session: &mut Session,
    methods: &[Arc<dyn CompactionMethod>],
    policy: &Policy,
    threshold: u64,
    max_rounds: usize,
) -> Result<Pressure, CompactError> {
    let mut outcomes: Vec<Outcome> = Vec::new();
    let mut tokens = policy.counter.context_tokens(session);
    for round in 0..max_rounds {
        if tokens <= threshold {
            break;
        }
        let trigger = if round == 0 {
            Trigger::Threshold
        } else {
            Trigger::Overflow
        };
        match compact_session(session, methods, policy, trigger).await {
            Ok(outcome) => {
                let progressed = outcome.tokens_after < outcome.tokens_before;
                tokens = outcome.tokens_after;
                outcomes.push(outcome);
                if !progressed {
                    break;
                }
            }
            Err(error) if outcomes.is_empty() => return Err(error),
            Err(error) => {
                tracing::warn!(%error, round, "pressure compaction stopped");
                break;
            }
        }
    }
    Ok(Pressure {
        outcomes,
        tokens,
        threshold,
    })
}
