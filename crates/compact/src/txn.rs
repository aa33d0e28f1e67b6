//! The transaction: `begin`, run the method elsewhere, `commit` or `abort`.
//!
//! `begin` appends `compaction/start` and hands back a [`Ticket`] that owns
//! the plan; the session is free again while the method runs. `commit`
//! checks that the planned span is still on the surface exactly as planned
//! (the same seqs at the same positions), then appends
//! `compaction/summary`, the replacing message and `compaction/end` in one
//! all-or-nothing batch. Every failure appends only `compaction/end` with
//! the error.
//!
//! # Stale starts
//!
//! A start is *live* while its [`Ticket`] exists: the ticket holds a lease
//! in the session's [`Leases`](abridge_session::Leases), and dropping it (a
//! crash, a dropped future) makes the start *stale*. The live set belongs
//! to the session, not the process. Only live starts
//! make `begin` answer [`CompactError::Busy`]. A session opened after a
//! crash therefore has only stale starts: they are inert, reported by
//! [`unmatched_starts`](crate::host::unmatched_starts) and the invariant checker,
//! and can be closed with [`close_stale`].
//!
//! # Several processes
//!
//! Leases are one process's knowledge. When the session's store has
//! several writers (PostgreSQL), `begin` also takes the store's
//! cross-process hold ([`Session::hold_compaction`]) before writing the
//! start, so a second worker's `begin` answers [`CompactError::Busy`]; the
//! ticket keeps the hold, `commit` confirms it is still held, and
//! [`close_stale`] leaves alone a start another process still holds.
//! `commit` and `abort` first catch up with events other writers appended
//! while the method ran ([`Session::catch_up`]), so their batch lands
//! after them and the span check sees the current surface.

use std::collections::HashSet;

use abridge_llm::Message;
use abridge_llm::Role;
use abridge_session::CompactionHold;
use abridge_session::Draft;
use abridge_session::Lease;
use abridge_session::Reference;
use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::StoreError;

use crate::contract::Checkpoint;
use crate::contract::MethodOutput;
use crate::contract::Rewrite;
use crate::details::Details;
use crate::error::CompactError;
use crate::events::EndData;
use crate::events::EndStatus;
use crate::events::StartData;
use crate::events::SummaryData;
use crate::events::TYPE_COMPACTION_END;
use crate::events::TYPE_COMPACTION_START;
use crate::events::TYPE_COMPACTION_SUMMARY;
use crate::events::unmatched_starts;
use crate::frame::frame_checkpoint;
use crate::plan::Plan;
use crate::saving::check_saving;
use crate::service::Outcome;
use abridge_redact::Redactor;

/// A compaction id unique within the session and, in practice, across
/// processes: process id, a clock reading, and the seq its start will take
/// (two compactions of one session never share a start seq).
fn new_compaction_id(start_seq: Seq) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    format!("cmp-{:x}-{:x}-{start_seq}", std::process::id(), nanos)
}

/// A begun compaction: owns the plan, holds no borrow of the session.
///
/// Pass it back to [`commit`] or [`abort`]. Dropping it instead leaves the
/// `compaction/start` unmatched and stale: inert, never blocking.
#[derive(Debug)]
pub struct Ticket {
    compaction_id: String,
    method: String,
    start_seq: Seq,
    tokens_before: u64,
    plan: Plan,
    /// Keeps the start live; dropping the ticket releases it.
    _lease: Lease,
    /// The store's cross-process hold, when the store has one; dropping
    /// the ticket frees it.
    hold: Option<Box<dyn CompactionHold>>,
}

impl Ticket {
    /// The plan the method runs on.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// The plan, for adding hook context before the method runs.
    pub fn plan_mut(&mut self) -> &mut Plan {
        &mut self.plan
    }

    /// The compaction's id.
    pub fn compaction_id(&self) -> &str {
        &self.compaction_id
    }

    /// The method named at `begin`.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// The `compaction/start` event.
    pub fn start_seq(&self) -> Seq {
        self.start_seq
    }

    /// The figure to act on when the compaction began.
    pub fn tokens_before(&self) -> u64 {
        self.tokens_before
    }
}

/// Opens a compaction of `plan` by `method`: appends `compaction/start`.
///
/// # Errors
/// [`CompactError::Busy`] when a live compaction of this session is open;
/// [`CompactError::Persistence`] when the start cannot be written.
pub fn begin(session: &mut Session, plan: Plan, method: &str) -> Result<Ticket, CompactError> {
    if let Some(open) = unmatched_starts(session).into_iter().find(|u| u.live) {
        return Err(CompactError::Busy {
            compaction_id: open.compaction_id,
            start_seq: open.seq,
        });
    }
    let compaction_id = new_compaction_id(session.len() as Seq);
    let hold = session
        .hold_compaction(&compaction_id)
        .map_err(|error| held_elsewhere(session, error))?;
    if hold.is_some() {
        // Holding the store's hold, every start no process holds is
        // stale (a worker died mid-compaction): close it now, so the log
        // says so. Log events only: the plan's surface is unchanged.
        close_stale(session)?;
    }
    let tokens_before = plan.counter.context_tokens(session);
    let data = StartData {
        compaction_id: compaction_id.clone(),
        method: method.to_string(),
        trigger: plan.trigger,
        span: plan.span,
        first_seq: plan.seqs.first().copied().unwrap_or_default(),
        last_seq: plan.seqs.last().copied().unwrap_or_default(),
        generation: plan.generation,
        tokens_before,
    };
    let start_seq = session.append(Draft::log(TYPE_COMPACTION_START, to_json(&data)?))?;
    let lease = session.leases().take(compaction_id.clone());
    tracing::info!(%compaction_id, method, start_seq, span = ?plan.span, tokens_before, "compaction began");
    Ok(Ticket {
        compaction_id,
        method: method.to_string(),
        start_seq,
        tokens_before,
        plan,
        _lease: lease,
        hold,
    })
}

/// A refused hold as the error `begin` answers: another process's
/// compaction is [`CompactError::Busy`] (with its start, once this session
/// has read it), anything else a persistence failure.
fn held_elsewhere(session: &Session, error: StoreError) -> CompactError {
    match error {
        StoreError::Held { compaction_id, .. } => {
            let start_seq = unmatched_starts(session)
                .into_iter()
                .find(|u| u.compaction_id == compaction_id)
                .map_or(0, |u| u.seq);
            CompactError::Busy {
                compaction_id,
                start_seq,
            }
        }
        other => CompactError::Persistence(other.into()),
    }
}

/// Brings `session` up to date with other writers and confirms the
/// ticket's hold is still its own: what `commit` checks before writing.
fn still_ours(session: &mut Session, ticket: &Ticket) -> Result<(), CompactError> {
    session.catch_up()?;
    if let Some(hold) = &ticket.hold {
        hold.check()
            .map_err(|error| CompactError::Persistence(error.into()))?;
    }
    Ok(())
}

/// An event's data as JSON. The event types here hold only strings,
/// numbers and already-JSON details, so this fails only on a bug; it is
/// still an error rather than a silent `null` in the log.
fn to_json<T: serde::Serialize>(value: &T) -> Result<serde_json::Value, CompactError> {
    serde_json::to_value(value).map_err(|error| CompactError::Commit {
        reason: format!("event data does not serialize: {error}"),
    })
}

/// Ends a compaction with `error`: appends `compaction/end` with status
/// error, and nothing else. Returns the end's seq.
///
/// # Errors
/// [`CompactError::Persistence`] when the end cannot be written (the start
/// then stays unmatched and becomes stale once the ticket is gone).
pub fn abort(
    session: &mut Session,
    ticket: Ticket,
    error: &CompactError,
) -> Result<Seq, CompactError> {
    let data = EndData {
        compaction_id: ticket.compaction_id.clone(),
        status: EndStatus::Error,
        kind: Some(error.kind().as_str().to_string()),
        error: Some(error.to_string()),
        checkpoint: None,
        usage: error.usage().copied(),
    };
    tracing::warn!(compaction_id = %ticket.compaction_id, method = %ticket.method, %error, "compaction failed");
    session.catch_up()?;
    let seq = session.append(Draft::log(TYPE_COMPACTION_END, to_json(&data)?))?;
    drop(ticket);
    Ok(seq)
}

/// Closes every stale unmatched start with a `compaction/end` of status
/// stale, in one batch. Returns the new seqs.
///
/// # Errors
/// [`CompactError::Persistence`].
pub fn close_stale(session: &mut Session) -> Result<Vec<Seq>, CompactError> {
    let mut stale = Vec::new();
    for start in unmatched_starts(session).into_iter().filter(|u| !u.live) {
        // In flight on another worker: not stale, whatever this process
        // knows.
        let held = session
            .compaction_held(&start.compaction_id)
            .map_err(|error| CompactError::Persistence(error.into()))?;
        if !held {
            stale.push(start);
        }
    }
    let drafts: Vec<Draft> = stale
        .into_iter()
        .map(|u| {
            Ok(Draft::log(
                TYPE_COMPACTION_END,
                to_json(&EndData {
                    compaction_id: u.compaction_id,
                    status: EndStatus::Stale,
                    kind: None,
                    error: Some(format!(
                        "start at seq {} was never ended (crash or dropped ticket)",
                        u.seq
                    )),
                    checkpoint: None,
                    usage: None,
                })?,
            ))
        })
        .collect::<Result<_, CompactError>>()?;
    if drafts.is_empty() {
        return Ok(Vec::new());
    }
    Ok(session.append_batch(drafts)?)
}

/// Checks and writes the method's output. On any error, writes only a
/// `compaction/end` with the error and returns the error.
///
/// # Errors
/// [`CompactError::Changed`] when the span moved; [`MethodError::NotSmaller`](crate::MethodError::NotSmaller)
/// when the checkpoint does not shrink the context; [`CompactError::Commit`]
/// for malformed output; [`CompactError::Persistence`] when the write fails.
pub fn commit(
    session: &mut Session,
    ticket: Ticket,
    output: MethodOutput,
) -> Result<Outcome, CompactError> {
    if let Err(error) = still_ours(session, &ticket) {
        return fail(session, ticket, error);
    }
    let is_checkpoint = matches!(output, MethodOutput::Checkpoint(_));
    let output = redact_output(&ticket.plan, output);
    let prepared = match output {
        MethodOutput::Checkpoint(checkpoint) => prepare_checkpoint(session, &ticket, checkpoint),
        MethodOutput::Rewrites { rewrites, details } => {
            prepare_rewrites(session, &ticket, rewrites, details)
        }
    };
    let prepared = match prepared {
        Ok(p) => p,
        Err(error) => return fail(session, ticket, error),
    };
    let short = prepared.short_summary.clone();
    let written = session.append_batch(prepared.drafts);
    let seqs = match written {
        Ok(seqs) => seqs,
        Err(error) => return fail(session, ticket, error.into()),
    };
    let tokens_after = ticket.plan.counter.context_tokens(session);
    let summary_seq = seqs[0];
    let end_seq = seqs[seqs.len() - 1];
    let middle = seqs[1..seqs.len() - 1].to_vec();
    let (checkpoint_seq, rewrite_seqs, hidden) = if is_checkpoint {
        (middle.first().copied(), Vec::new(), ticket.plan.seqs.len())
    } else {
        (None, middle.clone(), middle.len())
    };
    tracing::info!(compaction_id = %ticket.compaction_id, method = %ticket.method, tokens_before = ticket.tokens_before, tokens_after, "compaction committed");
    Ok(Outcome {
        compaction_id: ticket.compaction_id.clone(),
        method: ticket.method.clone(),
        trigger: ticket.plan.trigger,
        tokens_before: ticket.tokens_before,
        tokens_after,
        hidden,
        start_seq: ticket.start_seq,
        summary_seq,
        checkpoint_seq,
        rewrite_seqs,
        end_seq,
        short_summary: short,
        failures: Vec::new(),
    })
}

/// What a method wrote, through the plan's redactor once more before it
/// lands in the log: a method reads only redacted history, but a model can
/// still echo something secret-shaped from elsewhere (its own prompt, a
/// hook), and the checkpoint is what every later request carries.
///
/// Idempotent, so the driver can redact before it keeps a copy for the
/// method's `committed` (a handoff file must hold what the log holds) and
/// the commit can redact again for callers that commit directly.
pub(crate) fn redact_output(plan: &Plan, output: MethodOutput) -> MethodOutput {
    let Some(redactor) = &plan.redactor else {
        return output;
    };
    redact_with_redactor(redactor, output)
}

fn redact_with_redactor(redactor: &Redactor, output: MethodOutput) -> MethodOutput {
    match output {
        MethodOutput::Checkpoint(mut checkpoint) => {
            checkpoint.summary = redactor.redact(&checkpoint.summary).into_owned();
            checkpoint.short_summary = redactor.redact(&checkpoint.short_summary).into_owned();
            let body = Message::user(String::new());
            let body = Message {
                content: std::mem::take(&mut checkpoint.content),
                ..body
            };
            checkpoint.content = redactor.redact_message(&body).unwrap_or(body).content;
            MethodOutput::Checkpoint(checkpoint)
        }
        MethodOutput::Rewrites { rewrites, details } => MethodOutput::Rewrites {
            rewrites: rewrites
                .into_iter()
                .map(|mut rewrite| {
                    if let Some(message) = redactor.redact_message(&rewrite.message) {
                        rewrite.message = message;
                    }
                    rewrite
                })
                .collect(),
            details,
        },
    }
}

fn fail(
    session: &mut Session,
    ticket: Ticket,
    error: CompactError,
) -> Result<Outcome, CompactError> {
    if let Err(end_error) = abort(session, ticket, &error) {
        tracing::error!(%end_error, "could not record the failed compaction's end");
    }
    Err(error)
}

struct Prepared {
    drafts: Vec<Draft>,
    short_summary: String,
}

/// Verifies the span is on the surface exactly as planned.
pub(crate) fn check_span(session: &Session, plan: &Plan) -> Result<(), CompactError> {
    let surface = session.surface().seqs();
    let span = plan.span;
    let Some(now) = surface.get(span.start..=span.end) else {
        return Err(CompactError::Changed {
            reason: format!(
                "span {}..={} is past the end of the surface ({} messages now)",
                span.start,
                span.end,
                surface.len()
            ),
        });
    };
    if let Some(offset) = now.iter().zip(&plan.seqs).position(|(a, b)| a != b) {
        return Err(CompactError::Changed {
            reason: format!(
                "position {} now holds seq {} instead of seq {}",
                span.start + offset,
                now[offset],
                plan.seqs[offset]
            ),
        });
    }
    Ok(())
}

fn prepare_checkpoint(
    session: &Session,
    ticket: &Ticket,
    checkpoint: Checkpoint,
) -> Result<Prepared, CompactError> {
    let plan = &ticket.plan;
    check_span(session, plan)?;
    if checkpoint.content.is_empty() || checkpoint.summary.trim().is_empty() {
        return Err(CompactError::Commit {
            reason: format!("method {} returned an empty checkpoint", ticket.method),
        });
    }
    // A plan always hides at least one message (the planner refuses an
    // empty span), so the reference has both ends.
    let first = plan.seqs.first().copied().unwrap_or_default();
    let last = plan.seqs.last().copied().unwrap_or(first);
    let framed = frame_checkpoint(
        &ticket.compaction_id,
        &ticket.method,
        Reference::range(first, last),
        checkpoint.content,
        &plan.preserve,
    );
    let new_tokens = plan.counter.message_tokens(&framed);
    let hidden_tokens = plan.tokens.hidden;
    check_saving(
        &ticket.method,
        &ticket.plan,
        ticket.tokens_before,
        new_tokens,
        hidden_tokens,
    )?;
    let next = session.len() as Seq;
    let summary_seq = next;
    let checkpoint_seq = next + 1;
    let data = SummaryData {
        compaction_id: ticket.compaction_id.clone(),
        method: ticket.method.clone(),
        summary: checkpoint.summary,
        short_summary: checkpoint.short_summary,
        files: checkpoint.files,
        usage: checkpoint.usage,
        model: checkpoint.model,
        hidden_tokens,
        new_tokens,
        rewrites: Vec::new(),
        details: checkpoint.details,
        transcript: checkpoint.transcript,
    };
    let mut sources = plan.seqs.clone();
    sources.push(ticket.start_seq);
    sources.push(summary_seq);
    let end = EndData {
        compaction_id: ticket.compaction_id.clone(),
        status: EndStatus::Ok,
        kind: None,
        error: None,
        checkpoint: Some(checkpoint_seq),
        usage: None,
    };
    Ok(Prepared {
        drafts: vec![
            Draft::log(TYPE_COMPACTION_SUMMARY, to_json(&data)?),
            Draft::replace(framed, plan.span.start, plan.span.end, sources),
            Draft::log(TYPE_COMPACTION_END, to_json(&end)?),
        ],
        short_summary: data.short_summary,
    })
}

fn prepare_rewrites(
    session: &Session,
    ticket: &Ticket,
    rewrites: Vec<Rewrite>,
    details: Details,
) -> Result<Prepared, CompactError> {
    if rewrites.is_empty() {
        return Err(CompactError::Commit {
            reason: format!("method {} returned no rewrites", ticket.method),
        });
    }
    let counter = &ticket.plan.counter;
    let mut seen = HashSet::new();
    let mut hidden_tokens = 0;
    let mut new_tokens = 0;
    for rewrite in &rewrites {
        let target = rewrite.target;
        if !seen.insert(target) {
            return Err(CompactError::Commit {
                reason: format!("seq {target} is rewritten twice"),
            });
        }
        if !session.surface().contains(target) {
            return Err(CompactError::Changed {
                reason: format!("rewrite target seq {target} is no longer visible"),
            });
        }
        let Some(old) = session.message(target) else {
            return Err(CompactError::Changed {
                reason: format!("rewrite target seq {target} is not a message"),
            });
        };
        let old_id = old.tool_result_block().map(|b| b.0);
        let new_id = rewrite.message.tool_result_block().map(|b| b.0);
        if old.role != Role::Tool || rewrite.message.role != Role::Tool || old_id != new_id {
            return Err(CompactError::Commit {
                reason: format!(
                    "rewrite of seq {target} must be a tool result keeping call id {:?}",
                    old_id.unwrap_or("")
                ),
            });
        }
        hidden_tokens += counter.seq_tokens(session, target);
        new_tokens += counter.message_tokens(&rewrite.message);
    }
    check_saving(
        &ticket.method,
        &ticket.plan,
        ticket.tokens_before,
        new_tokens,
        hidden_tokens,
    )?;
    let data = SummaryData {
        compaction_id: ticket.compaction_id.clone(),
        method: ticket.method.clone(),
        summary: String::new(),
        short_summary: format!("rewrote {} tool results", rewrites.len()),
        files: Default::default(),
        usage: None,
        model: None,
        hidden_tokens,
        new_tokens,
        rewrites: rewrites.iter().map(|r| r.target).collect(),
        details,
        transcript: false,
    };
    let mut drafts = vec![Draft::log(TYPE_COMPACTION_SUMMARY, to_json(&data)?)];
    drafts.extend(
        rewrites
            .into_iter()
            .map(|r| Draft::rewrite(r.message, r.target)),
    );
    drafts.push(Draft::log(
        TYPE_COMPACTION_END,
        to_json(&EndData {
            compaction_id: ticket.compaction_id.clone(),
            status: EndStatus::Ok,
            kind: None,
            error: None,
            checkpoint: None,
            usage: None,
        })?,
    ));
    Ok(Prepared {
        short_summary: data.short_summary,
        drafts,
    })
}
