//! What a landing must save before the commit writes it: less than it
//! replaces, at least the plan's floor (unless it reclaims as much as it
//! leaves), and no more left than the plan's ceiling. Checked before
//! anything is written, since a landed change cannot be taken back.

use crate::error::CompactError;
use crate::error::MethodError;
use crate::plan::Plan;

/// Refuses `method`'s output, which costs `new_tokens` where the
/// replaced part cost `hidden_tokens`, when it does not shrink it, when it
/// reclaims less than `plan`'s floor, or when it leaves the context (from
/// `tokens_before`) above the plan's ceiling.
pub(crate) fn check_saving(
    method: &str,
    plan: &Plan,
    tokens_before: u64,
    new_tokens: u64,
    hidden_tokens: u64,
) -> Result<(), CompactError> {
    if new_tokens >= hidden_tokens {
        return Err(MethodError::NotSmaller {
            method: method.to_string(),
            checkpoint_tokens: new_tokens,
            hidden_tokens,
        }
        .into());
    }
    let reclaimed = hidden_tokens - new_tokens;
    let after = tokens_before.saturating_sub(reclaimed);
    // The cache break re-writes what is left: a landing that reclaims at
    // least that much pays for it within a few turns, however small the
    // context is against the threshold the floor is taken from.
    let floor = plan.min_reclaim();
    if reclaimed < floor && reclaimed < after {
        return Err(CompactError::TooLittle {
            method: method.to_string(),
            reclaimed,
            floor,
        });
    }
    if let Some(ceiling) = plan.ceiling()
        && after > ceiling
    {
        return Err(CompactError::OverWindow {
            method: method.to_string(),
            after,
            ceiling,
        });
    }
    Ok(())
}
