//! What a landing must save before the commit writes it: less than it
//! replaces, at least the plan's floor (unless it reclaims as much as it
//! leaves), and no more left than the plan's ceiling. Checked before
//! anything is written, since a landed change cannot be taken back.
//!
//! A pinned message a landing hides is not reclaimed: the request sends
//! its pin again, in the message carrying hidden pins. So what a landing
//! costs is its own output plus what that message grows by
//! ([`pins_growth`]); without it a landing could pass every check here
//! and still leave a request over the window.

use std::collections::HashSet;

use abridge_meter::TokenCounter;
use abridge_session::Seq;
use abridge_session::Session;

use crate::error::CompactError;
use crate::error::MethodError;
use crate::plan::Plan;

/// What the message carrying hidden pins costs once the messages at
/// `hidden` leave the surface (`Session::pinned_message_hiding`); 0
/// without hidden pins.
pub(crate) fn pinned_after(session: &Session, counter: &dyn TokenCounter, hidden: &[Seq]) -> u64 {
    let hidden: HashSet<Seq> = hidden.iter().copied().collect();
    session
        .pinned_message_hiding(&hidden)
        .map_or(0, |message| counter.message_tokens(&message))
}

/// How many tokens the message carrying hidden pins grows by once the
/// messages at `hidden` leave the surface.
pub(crate) fn pins_growth(session: &Session, counter: &dyn TokenCounter, hidden: &[Seq]) -> u64 {
    pinned_after(session, counter, hidden).saturating_sub(counter.pinned_tokens(session))
}

/// Refuses `method`'s output, which costs `new_tokens` (plus
/// `pins_growth`, the pins it hides coming back) where the replaced part
/// cost `hidden_tokens`, when it does not shrink it, when it reclaims
/// less than `plan`'s floor, or when it leaves the context (from
/// `tokens_before`) above the plan's ceiling.
pub(crate) fn check_saving(
    method: &str,
    plan: &Plan,
    tokens_before: u64,
    new_tokens: u64,
    pins_growth: u64,
    hidden_tokens: u64,
) -> Result<(), CompactError> {
    let cost = new_tokens.saturating_add(pins_growth);
    if cost >= hidden_tokens {
        return Err(MethodError::NotSmaller {
            method: method.to_string(),
            checkpoint_tokens: cost,
            hidden_tokens,
        }
        .into());
    }
    let reclaimed = hidden_tokens - cost;
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
