//! One compaction attempt: plan, check availability, begin, run the hooks
//! and the method, commit or abort, guarded against drop.
//!
//! This is the only place the transaction is driven. Deciding which
//! method to try next, and whether a pass made enough progress, is not the
//! seam's job: that walk lives in the `abridge` crate's Maintenance, which
//! calls [`attempt`] once per method.

use abridge_session::Session;

use crate::contract::Availability;
use crate::contract::CompactionMethod;
use crate::contract::MethodOutput;
use crate::contract::Prospect;
use crate::error::CompactError;
use crate::error::MethodError;
use crate::hooks::Before;
use crate::hooks::CompactionHooks;
use crate::hooks::NoHooks;
use crate::plan::Plan;
use crate::planner::plan_maximal;
use crate::planner::plan_region;
use crate::planner::plan_with_keep;
use crate::policy::Policy;
use crate::service::Outcome;
use crate::service::SharedSession;
use crate::service::lock_session;
use crate::txn::Ticket;
use crate::txn::abort;
use crate::txn::begin;
use crate::txn::commit;
use crate::txn::redact_output;
use crate::types::Span;
use crate::types::Trigger;

/// Plans for `trigger`: overflow and incomplete output keep only the newest
/// unit; every other trigger keeps the policy's retention budget.
pub fn plan_for(session: &Session, policy: &Policy, trigger: Trigger) -> Option<Plan> {
    let mut plan = match trigger {
        Trigger::Overflow | Trigger::IncompleteOutput => plan_maximal(session, policy),
        _ => plan_with_keep(session, policy, policy.effective_keep(session), trigger),
    }?;
    plan.trigger = trigger;
    Some(plan)
}

/// What an attempt compacts: the policy's plan for a trigger, or exactly
/// one span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Plan afresh for this trigger (see [`plan_for`]).
    Trigger(Trigger),
    /// Exactly this span of surface positions (see
    /// `plan_region`: the span must not split a tool call from its
    /// result).
    Region(Span),
}

impl Target {
    fn plan(self, session: &Session, policy: &Policy) -> Result<Plan, CompactError> {
        match self {
            Target::Trigger(trigger) => {
                plan_for(session, policy, trigger).ok_or_else(|| nothing_to_compact(session))
            }
            Target::Region(span) => plan_region(session, policy, span),
        }
    }
}

/// Compacts `session`, which the caller owns outright, with one method and
/// no hooks. For callers that need no concurrency (tests, one-shot tools);
/// an agent with turns in flight uses [`attempt`] on a [`SharedSession`].
///
/// # Errors
/// As [`attempt`].
pub async fn compact_session(
    session: &mut Session,
    method: &dyn CompactionMethod,
    policy: &Policy,
    trigger: Trigger,
) -> Result<Outcome, CompactError> {
    run_attempt(
        Owned(session),
        method,
        policy,
        Target::Trigger(trigger),
        &NoHooks,
    )
    .await
}

/// [`compact_session`] with hooks and any [`Target`].
///
/// # Errors
/// As [`attempt`].
pub async fn compact_session_with(
    session: &mut Session,
    method: &dyn CompactionMethod,
    policy: &Policy,
    target: Target,
    hooks: &dyn CompactionHooks,
) -> Result<Outcome, CompactError> {
    run_attempt(Owned(session), method, policy, target, hooks).await
}

/// One attempt on a shared session: plans afresh for `target`, refuses an
/// unavailable method, begins, asks the hooks, runs the method and commits
/// (or records the failure in `compaction/end`). The lock is taken only to
/// plan, begin and commit, so the agent can append while the method runs.
/// Dropping the returned future while the method runs ends the compaction
/// as `cancelled` with the surface unchanged.
///
/// # Errors
/// [`MethodError::NothingToCompact`] when there is no plan or the method's
/// [`prospect`](CompactionMethod::prospect) finds nothing in it (nothing
/// is written); [`MethodError::Unavailable`] when the method says so (nothing
/// is written); any error of the method or the commit, already recorded as
/// `compaction/end`.
pub async fn attempt(
    session: &SharedSession,
    method: &dyn CompactionMethod,
    policy: &Policy,
    target: Target,
    hooks: &dyn CompactionHooks,
) -> Result<Outcome, CompactError> {
    run_attempt(Shared(session), method, policy, target, hooks).await
}

fn nothing_to_compact(session: &Session) -> CompactError {
    CompactError::nothing_to_compact(format!(
        "the surface of {} messages fits the retention budget or holds only a checkpoint",
        session.surface().len()
    ))
}

/// How an attempt reaches the session: owned outright, or through the lock.
trait Access {
    fn with<R>(&mut self, f: impl FnOnce(&mut Session) -> R) -> R;
}

struct Owned<'a>(&'a mut Session);

impl Access for Owned<'_> {
    fn with<R>(&mut self, f: impl FnOnce(&mut Session) -> R) -> R {
        f(self.0)
    }
}

struct Shared<'a>(&'a SharedSession);

impl Access for Shared<'_> {
    fn with<R>(&mut self, f: impl FnOnce(&mut Session) -> R) -> R {
        f(&mut lock_session(self.0))
    }
}

async fn run_attempt<A: Access>(
    mut access: A,
    method: &dyn CompactionMethod,
    policy: &Policy,
    target: Target,
    hooks: &dyn CompactionHooks,
) -> Result<Outcome, CompactError> {
    let name = method.name().to_string();
    if let Availability::Unavailable { reason } = method.available() {
        return Err(MethodError::Unavailable {
            method: name,
            reason,
        }
        .into());
    }
    let ticket = access.with(|session| {
        // Other writers of a shared store may have appended since this
        // session last looked: plan on the current log.
        session.catch_up()?;
        let plan = target.plan(session, policy)?;
        if let Prospect::Nothing { reason } = method.prospect(&plan) {
            return Err(CompactError::nothing_to_compact(reason));
        }
        begin(session, plan, &name)
    })?;
    let mut guard = AbortOnDrop {
        access,
        ticket: Some(ticket),
    };
    let output = match guard.ticket.as_mut() {
        Some(ticket) => produce(method, ticket, hooks)
            .await
            .map_err(CompactError::from),
        None => Err(CompactError::Commit {
            reason: "the compaction's ticket was lost".to_string(),
        }),
    };
    let Some(ticket) = guard.ticket.take() else {
        return output.and(Err(CompactError::Commit {
            reason: "the compaction's ticket was lost".to_string(),
        }));
    };
    // Redacted before a copy is kept for the method's `committed` (which
    // runs only once the commit has landed): what a method saves beside the
    // session, such as a handoff file, holds what the log holds.
    let output = output.map(|output| redact_output(ticket.plan(), output));
    let landed = output.as_ref().ok().cloned();
    let outcome = guard.access.with(|session| match output {
        Ok(output) => commit(session, ticket, output),
        Err(error) => abort(session, ticket, &error).and(Err(error)),
    })?;
    if let Some(output) = &landed {
        method.committed(output, &outcome).await;
    }
    hooks.after_compaction(&outcome).await;
    Ok(outcome)
}

/// Runs the hooks and the method on the ticket's plan. A hook's cancel
/// ends the attempt the way a method's own cancel does.
async fn produce(
    method: &dyn CompactionMethod,
    ticket: &mut Ticket,
    hooks: &dyn CompactionHooks,
) -> Result<MethodOutput, MethodError> {
    match hooks.before_compaction(ticket.plan(), method.name()).await {
        Before::Cancel { reason } => {
            return Err(MethodError::Cancelled {
                by: format!("hook ({reason})"),
            });
        }
        Before::Supply(output) => return Ok(output),
        Before::Proceed => {}
    }
    let extra = hooks.while_compacting(ticket.plan()).await;
    let plan = ticket.plan_mut();
    extra
        .context
        .into_iter()
        .for_each(|c| plan.add_extra_context(c));
    extra
        .preserve
        .into_iter()
        .for_each(|p| plan.add_preserve(p));
    method.run(ticket.plan()).await
}

/// Ends the compaction as cancelled if the future running it is dropped.
struct AbortOnDrop<A: Access> {
    access: A,
    ticket: Option<Ticket>,
}

impl<A: Access> Drop for AbortOnDrop<A> {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            let error = CompactError::cancelled("the caller (the compaction's future was dropped)");
            if let Err(end_error) = self.access.with(|session| abort(session, ticket, &error)) {
                tracing::error!(%end_error, "could not record the cancelled compaction's end");
            }
        }
    }
}
