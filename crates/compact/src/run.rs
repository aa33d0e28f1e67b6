//! Drivers: plan, then begin/run/commit each method in turn until one
//! lands (a plain fall-through, each failure recorded and reported).

use std::sync::Arc;

use abridge_llm::SharedMessage;
use abridge_session::Session;

use crate::error::CompactError;
use crate::hooks::Before;
use crate::hooks::CompactionHooks;
use crate::hooks::NoHooks;
use crate::method::Availability;
use crate::method::CompactionMethod;
use crate::method::MethodContext;
use crate::method::MethodOutput;
use crate::method::Trigger;
use crate::plan::Plan;
use crate::plan::Policy;
use crate::plan::plan_maximal;
use crate::plan::plan_with_keep;
use crate::service::Outcome;
use crate::service::SharedSession;
use crate::service::lock_session;
use crate::txn::Ticket;
use crate::txn::abort;
use crate::txn::begin;
use crate::txn::commit;

/// Exactly the messages the model would receive next, in order. Checkpoints
/// are already framed when committed, so this is the surface.
pub fn build_context(session: &Session) -> Vec<SharedMessage> {
    session.surface_messages()
}

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

/// Compacts `session` with the first of `methods` that lands, holding the
/// `&mut Session` throughout (for the command line and other callers that
/// own the session outright). See [`compact_session_with`].
///
/// # Errors
/// See [`compact_session_with`].
pub async fn compact_session(
    session: &mut Session,
    methods: &[Arc<dyn CompactionMethod>],
    policy: &Policy,
    trigger: Trigger,
) -> Result<Outcome, CompactError> {
    compact_session_with(
        session,
        methods,
        policy,
        trigger,
        &NoHooks,
        &MethodContext::default(),
    )
    .await
}

/// Plans once, then for each method in order: skips it when unavailable,
/// begins, runs the hooks and the method, commits. A failure is recorded
/// as `compaction/end` and the next method is tried, except after
/// `Busy`, `Cancelled` or `Persistence`, which end the attempt.
///
/// # Errors
/// [`CompactError::NothingToCompact`] when there is no plan;
/// [`CompactError::AllFailed`] listing each method's failure; `Busy`,
/// `Cancelled`, `Persistence` as they happen.
pub async fn compact_session_with(
    session: &mut Session,
    methods: &[Arc<dyn CompactionMethod>],
    policy: &Policy,
    trigger: Trigger,
    hooks: &dyn CompactionHooks,
    context: &MethodContext,
) -> Result<Outcome, CompactError> {
    let Some(plan) = plan_for(session, policy, trigger) else {
        return Err(nothing_to_compact(session));
    };
    let mut failures: Vec<(String, String)> = Vec::new();
    for method in methods {
        let name = method.name().to_string();
        if let Availability::Unavailable { reason } = method.available(context) {
            failures.push((name, format!("unavailable: {reason}")));
            continue;
        }
        let mut ticket = begin(session, plan.clone(), &name)?;
        let output = produce(method.as_ref(), &mut ticket, hooks).await;
        let result = match output {
            Ok(output) => commit(session, ticket, output),
            Err(error) => {
                abort(session, ticket, &error)?;
                Err(error)
            }
        };
        match result {
            Ok(mut outcome) => {
                outcome.failures = failures;
                hooks.after_compaction(&outcome).await;
                return Ok(outcome);
            }
            Err(error) if error.stops_fallthrough() => return Err(error),
            Err(error) => failures.push((name, error.to_string())),
        }
    }
    Err(CompactError::AllFailed { failures })
}

fn nothing_to_compact(session: &Session) -> CompactError {
    CompactError::NothingToCompact {
        reason: format!(
            "the surface of {} messages fits the retention budget or holds only a checkpoint",
            session.surface().len()
        ),
    }
}

/// Runs the hooks and the method on the ticket's plan.
async fn produce(
    method: &dyn CompactionMethod,
    ticket: &mut Ticket,
    hooks: &dyn CompactionHooks,
) -> Result<MethodOutput, CompactError> {
    match hooks.before_compaction(ticket.plan(), method.name()).await {
        Before::Cancel { reason } => {
            return Err(CompactError::Cancelled {
                by: format!("hook ({reason})"),
            });
        }
        Before::Supply(output) => return Ok(output),
        Before::Proceed => {}
    }
    let extra = hooks.while_compacting(ticket.plan()).await;
    let plan = ticket.plan_mut();
    plan.extra_context.extend(extra.context);
    plan.preserve.extend(extra.preserve);
    method.run(ticket.plan()).await
}

/// Ends the compaction as cancelled if the future running it is dropped.
#[derive(Debug)]
struct AbortOnDrop<'a> {
    session: &'a SharedSession,
    ticket: Option<Ticket>,
}

impl Drop for AbortOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(ticket) = self.ticket.take() {
            let mut session = lock_session(self.session);
            let error = CompactError::Cancelled {
                by: "the caller (the compaction's future was dropped)".to_string(),
            };
            if let Err(end_error) = abort(&mut session, ticket, &error) {
                tracing::error!(%end_error, "could not record the cancelled compaction's end");
            }
        }
    }
}

/// Like [`compact_session_with`] on a shared session: the lock is taken
/// only to plan, begin and commit, so the agent can append while a method
/// runs. If the returned future is dropped while a method runs, the
/// compaction ends with kind `cancelled` and the surface is unchanged.
///
/// # Errors
/// As [`compact_session_with`]; [`CompactError::Changed`] (recorded, then
/// falling through) when the session moved under the plan.
pub async fn compact_shared(
    session: &SharedSession,
    methods: &[Arc<dyn CompactionMethod>],
    policy: &Policy,
    trigger: Trigger,
    hooks: &dyn CompactionHooks,
    context: &MethodContext,
) -> Result<Outcome, CompactError> {
    let mut failures: Vec<(String, String)> = Vec::new();
    for method in methods {
        let name = method.name().to_string();
        if let Availability::Unavailable { reason } = method.available(context) {
            failures.push((name, format!("unavailable: {reason}")));
            continue;
        }
        let ticket = {
            let mut guard = lock_session(session);
            let Some(plan) = plan_for(&guard, policy, trigger) else {
                return Err(nothing_to_compact(&guard));
            };
            begin(&mut guard, plan, &name)?
        };
        let mut holder = AbortOnDrop {
            session,
            ticket: Some(ticket),
        };
        let output = match holder.ticket.as_mut() {
            Some(ticket) => produce(method.as_ref(), ticket, hooks).await,
            None => continue,
        };
        let Some(ticket) = holder.ticket.take() else {
            continue;
        };
        let result = {
            let mut guard = lock_session(session);
            match output {
                Ok(output) => commit(&mut guard, ticket, output),
                Err(error) => abort(&mut guard, ticket, &error).and(Err(error)),
            }
        };
        match result {
            Ok(mut outcome) => {
                outcome.failures = failures;
                hooks.after_compaction(&outcome).await;
                return Ok(outcome);
            }
            Err(error) if error.stops_fallthrough() => return Err(error),
            Err(error) => failures.push((name, error.to_string())),
        }
    }
    Err(CompactError::AllFailed { failures })
}
