//! Planning: which span of the surface to compact.
//!
//! # Rules
//!
//! - **Head-anchored.** The span starts right after any leading system or
//!   developer messages (standing instructions are never compacted), so a
//!   previous checkpoint, which sits there, is folded into the next one.
//! - **Retention walk.** From the newest message backwards, whole units are
//!   kept while they fit in the policy's retention budget
//!   ([`Policy::effective_keep`]); the newest unit is always kept.
//! - **Room.** With a goal, the plan says how many tokens the replacing
//!   checkpoint may cost: the goal minus the fixed part (the overhead a
//!   usage report counts, the leading system messages, and the pins the
//!   request will carry once the span is hidden) minus the kept part
//!   ([`Plan::room`]).
//! - **Units.** A cut is allowed only where the running balance of tool
//!   calls minus tool results is zero: an assistant message and all of its
//!   results form one unit. A result whose call is nowhere on the surface
//!   (a damaged import) is ignored for balancing rather than blocking every
//!   cut.
//! - **Split turns.** When the kept part begins inside a turn (its first
//!   message is not a user message), the plan says where that turn began,
//!   so a summarizer can describe the turn's start separately.

use std::collections::HashSet;
use std::sync::Arc;

use abridge_llm::Role;
use abridge_llm::SharedMessage;
use abridge_meter::TokenCounter;
use abridge_session::Reference;
use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::SurfaceOp;

use crate::details::Details;
use crate::error::CompactError;
use crate::frame::checkpoint_body;
use crate::frame::frame_checkpoint;
use crate::plan::CheckpointSource;
use crate::plan::Plan;
use crate::plan::PlanTokens;
use crate::plan::PreviousCheckpoint;
use crate::plan::SplitTurn;
use crate::policy::Policy;
use crate::types::FileOps;
use crate::types::Span;
use crate::types::Trigger;

/// The leading system and developer messages: never compacted.
fn head_len(session: &Session) -> usize {
    session
        .surface()
        .seqs()
        .iter()
        .take_while(|seq| {
            session
                .message(**seq)
                .is_some_and(|m| matches!(m.role, Role::System | Role::Developer))
        })
        .count()
}

/// The part of the context no compaction can reclaim: the overhead a
/// usage report counts beyond the surface (system prompt, tool
/// definitions), the pins the surface does not show (every request
/// carries them; see [`Session::pinned_message`]) and the leading system
/// and developer messages.
pub fn fixed_tokens(session: &Session, counter: &dyn TokenCounter) -> u64 {
    let head: u64 = session.surface().seqs()[..head_len(session)]
        .iter()
        .map(|&seq| counter.seq_tokens(session, seq))
        .sum();
    counter
        .overhead_tokens(session)
        .saturating_add(counter.pinned_tokens(session))
        .saturating_add(head)
}

/// Plans a compaction under `policy`, or `None` when nothing can be
/// compacted (everything fits the retention budget, or the span would hide
/// only the previous checkpoint).
///
/// Costs O(kept part) token lookups plus O(span) pointer copies; with a
/// counter that caches per message (as the meter does), planning again
/// after one append is cheap.
pub fn plan(session: &Session, policy: &Policy) -> Option<Plan> {
    plan_with_keep(
        session,
        policy,
        policy.effective_keep(session),
        Trigger::Threshold,
    )
}

/// Plans the most reduction possible: keep only the newest unit. Used to
/// recover from an overflow.
pub(crate) fn plan_maximal(session: &Session, policy: &Policy) -> Option<Plan> {
    plan_with_keep(session, policy, 0, Trigger::Overflow)
}

/// Plans with an explicit retention budget (already scaled).
pub(crate) fn plan_with_keep(
    session: &Session,
    policy: &Policy,
    keep: u64,
    trigger: Trigger,
) -> Option<Plan> {
    let surface = session.surface().seqs();
    let head = head_len(session);
    if surface.len() < head + 2 {
        return None;
    }
    let cut = retention_cut(session, policy, head, keep)?;
    if cut <= head {
        return None;
    }
    let span = Span {
        start: head,
        end: cut - 1,
    };
    if span.len() == 1 && is_checkpoint_seq(session, surface[head]) {
        return None;
    }
    Some(build(session, policy, span, trigger))
}

/// Plans a caller-chosen span (for `compact_region`).
///
/// # Errors
/// [`CompactError::Commit`] when the span is off the surface or splits a
/// tool call from its result.
pub(crate) fn plan_region(
    session: &Session,
    policy: &Policy,
    span: Span,
) -> Result<Plan, CompactError> {
    let surface = session.surface().seqs();
    if span.start > span.end || span.end >= surface.len() {
        return Err(CompactError::Commit {
            reason: format!(
                "span {}..={} is not on the surface of {} messages",
                span.start,
                span.end,
                surface.len()
            ),
        });
    }
    let messages: Vec<&SharedMessage> = surface
        .iter()
        .filter_map(|seq| session.message(*seq))
        .collect();
    let mut calls: HashSet<&str> = HashSet::new();
    for message in &messages[span.start..=span.end] {
        calls.extend(message.tool_calls().map(|(id, _, _)| id));
    }
    let all_calls: HashSet<&str> = messages
        .iter()
        .flat_map(|m| m.tool_calls().map(|(id, _, _)| id))
        .collect();
    for (offset, message) in messages[span.start..=span.end].iter().enumerate() {
        if let Some((id, _, _)) = message.tool_result_block()
            && !calls.contains(id)
            && all_calls.contains(id)
        {
            return Err(CompactError::Commit {
                reason: format!(
                    "span {}..={} splits call {id} from its result at position {}",
                    span.start,
                    span.end,
                    span.start + offset
                ),
            });
        }
    }
    for (offset, message) in messages[span.end + 1..].iter().enumerate() {
        if let Some((id, _, _)) = message.tool_result_block()
            && calls.contains(id)
        {
            return Err(CompactError::Commit {
                reason: format!(
                    "span {}..={} splits call {id} from its result at position {}",
                    span.start,
                    span.end,
                    span.end + 1 + offset
                ),
            });
        }
    }
    Ok(build(session, policy, span, Trigger::Manual))
}

fn is_checkpoint_seq(session: &Session, seq: Seq) -> bool {
    session
        .event(seq)
        .and_then(|e| e.message_event())
        .is_some_and(|m| matches!(m.op, SurfaceOp::Replace { .. }))
}

/// The first kept position: walk back from the newest message, keeping
/// whole units while they fit in `keep`, always at least one.
fn retention_cut(session: &Session, policy: &Policy, head: usize, keep: u64) -> Option<usize> {
    let surface = session.surface().seqs();
    let mut ignore: HashSet<String> = HashSet::new();
    for _attempt in 0..2 {
        let mut pending: HashSet<&str> = HashSet::new();
        let mut kept = 0u64;
        let mut cut: Option<usize> = None;
        for index in (head..surface.len()).rev() {
            let seq = surface[index];
            let message = session.message(seq)?;
            kept += policy.counter.seq_tokens(session, seq);
            if let Some((id, _, _)) = message.tool_result_block()
                && !ignore.contains(id)
            {
                pending.insert(id);
            }
            for (id, _, _) in message.tool_calls() {
                pending.remove(id);
            }
            if !pending.is_empty() {
                continue;
            }
            if cut.is_none() || kept <= keep {
                cut = Some(index);
            }
            if kept > keep {
                break;
            }
        }
        if cut.is_some() || pending.is_empty() {
            return cut;
        }
        // Results whose calls are not on the surface: ignore them and walk
        // again, rather than refusing every cut.
        ignore = pending.iter().map(|s| (*s).to_string()).collect();
    }
    None
}

fn build(session: &Session, policy: &Policy, span: Span, trigger: Trigger) -> Plan {
    let surface = session.surface();
    let all = surface.seqs();
    // The messages at `seqs`, with what each costs.
    let priced = |seqs: &[Seq]| -> (Vec<SharedMessage>, Vec<u64>) {
        seqs.iter()
            .filter_map(|&seq| {
                let message = session.message(seq)?.clone();
                Some((message, policy.counter.seq_tokens(session, seq)))
            })
            .unzip()
    };
    let seqs = all[span.start..=span.end].to_vec();
    let (messages, message_costs) = priced(&seqs);
    let kept_seqs = all[span.end + 1..].to_vec();
    let (kept, kept_costs) = priced(&kept_seqs);
    let (head, head_costs) = priced(&all[..span.start]);
    let mut previous = previous_checkpoint(session, seqs[0]);
    let split_turn = split_turn(&messages, kept.first(), previous.is_some());
    let tokens = PlanTokens {
        hidden: message_costs.iter().sum(),
        kept: kept_costs.iter().sum(),
        head: head_costs.iter().sum(),
        pinned: crate::saving::pinned_after(session, policy.counter.as_ref(), &seqs),
    };
    // The pins the span holds come back beside the checkpoint: room left
    // for them keeps a landing sized to its room under the goal.
    let fixed = policy
        .counter
        .overhead_tokens(session)
        .saturating_add(tokens.head)
        .saturating_add(tokens.pinned);
    // The framing the commit wraps around any checkpoint costs too.
    let room = policy.goal.map(|goal| {
        let framing = policy.counter.message_tokens(&frame_checkpoint(
            "",
            "",
            Reference::range(
                seqs.first().copied().unwrap_or_default(),
                seqs.last().copied().unwrap_or_default(),
            ),
            Vec::new(),
            &[],
        ));
        goal.saturating_sub(fixed.saturating_add(tokens.kept).saturating_add(framing))
    });
    // The redacted view: what every method reads. Costs stay those of the
    // logged messages, which are what the surface holds.
    let (messages, head, kept) = match &policy.redactor {
        Some(redactor) => {
            if let Some(previous) = previous.as_mut() {
                previous.redact(redactor);
            }
            (
                redactor.redact_messages(&messages),
                redactor.redact_messages(&head),
                redactor.redact_messages(&kept),
            )
        }
        None => (messages, head, kept),
    };
    Plan {
        session_id: session.header().session_id.clone(),
        span,
        seqs,
        messages,
        message_costs,
        head,
        kept,
        kept_seqs,
        kept_costs,
        previous,
        split_turn,
        generation: surface.generation(),
        tokens,
        room,
        min_reclaim: policy.min_reclaim,
        ceiling: policy.ceiling,
        trigger,
        instructions: policy.instructions.clone(),
        extra_context: Vec::new(),
        preserve: Vec::new(),
        counter: Arc::clone(&policy.counter),
        redactor: policy.redactor.clone(),
    }
}

fn previous_checkpoint(session: &Session, seq: Seq) -> Option<PreviousCheckpoint> {
    if !is_checkpoint_seq(session, seq) {
        return None;
    }
    let message = session.message(seq)?;
    Some(match crate::events::summary_of_checkpoint(session, seq) {
        Some(data) if !data.summary.is_empty() => PreviousCheckpoint {
            seq,
            summary: data.summary,
            files: data.files,
            details: data.details,
            source: data
                .transcript
                .then(|| Box::new(checkpoint_source(session, seq))),
        },
        _ => PreviousCheckpoint {
            seq,
            summary: checkpoint_body(message),
            files: FileOps::default(),
            details: Details::new(),
            source: None,
        },
    })
}

/// The messages the checkpoint at `seq` hid, and the checkpoint it folded
/// in (which sits first, head-anchored), read from its `sources`.
fn checkpoint_source(session: &Session, seq: Seq) -> CheckpointSource {
    let mut source = CheckpointSource {
        earlier: None,
        messages: Vec::new(),
    };
    let hidden = session
        .event(seq)
        .and_then(|e| e.message_event())
        .map_or(&[][..], |m| &m.sources[..]);
    for (index, &hid) in hidden.iter().enumerate() {
        if index == 0 && is_checkpoint_seq(session, hid) {
            source.earlier = previous_checkpoint(session, hid);
        } else if let Some(message) = session.message(hid) {
            source.messages.push(message.clone());
        }
    }
    source
}

fn split_turn(
    messages: &[SharedMessage],
    first_kept: Option<&SharedMessage>,
    has_previous: bool,
) -> Option<SplitTurn> {
    let first_kept = first_kept?;
    if first_kept.role == Role::User {
        return None;
    }
    let floor = usize::from(has_previous);
    let turn_start = (floor..messages.len())
        .rev()
        .find(|i| messages[*i].role == Role::User)?;
    Some(SplitTurn { turn_start })
}

#[cfg(test)]
mod tests {
    use super::*;
    use abridge_llm::Message;

    fn call(id: &str) -> Message {
        Message::tool_call(id, "read", serde_json::json!({"path": "a.rs"}))
    }

    fn policy(keep: u64) -> Policy {
        Policy::default().with_keep_recent_tokens(keep)
    }

    #[test]
    fn never_cuts_between_call_and_result() {
        let mut s = Session::in_memory("t");
        s.append_message(Message::user("go")).unwrap();
        s.append_message(call("c1")).unwrap();
        s.append_message(Message::tool_result("c1", "x".repeat(400), false))
            .unwrap();
        s.append_message(call("c2")).unwrap();
        s.append_message(Message::tool_result("c2", "y".repeat(400), false))
            .unwrap();
        // Keep budget fits only the last result: the cut must move to the call.
        let plan = plan(&s, &policy(110)).unwrap();
        assert_eq!(plan.span, Span { start: 0, end: 2 });
        assert_eq!(plan.kept_seqs, vec![3, 4]);
        assert_eq!(plan.split_turn, Some(SplitTurn { turn_start: 0 }));
        assert_eq!(plan.turn_prefix().len(), 3);
        assert!(plan.history().is_empty());
    }

    #[test]
    fn keeps_system_head_and_returns_none_when_all_fits() {
        let mut s = Session::in_memory("t");
        s.append_message(Message::system("be brief")).unwrap();
        s.append_message(Message::user("a")).unwrap();
        s.append_message(Message::assistant("b")).unwrap();
        assert!(plan(&s, &policy(10_000)).is_none());
        let p = plan_maximal(&s, &policy(0)).unwrap();
        assert_eq!(p.span, Span { start: 1, end: 1 });
        assert_eq!(p.head.len(), 1);
    }

    #[test]
    fn orphan_result_does_not_block_cuts() {
        let mut s = Session::in_memory("t");
        s.append_message(Message::user("a")).unwrap();
        s.append_message(Message::assistant("b")).unwrap();
        s.append_message(Message::tool_result("ghost", "?", false))
            .unwrap();
        let p = plan_maximal(&s, &policy(0)).unwrap();
        assert_eq!(p.kept_seqs, vec![2]);
    }

    #[test]
    fn region_refuses_to_split_a_pair() {
        let mut s = Session::in_memory("t");
        s.append_message(Message::user("go")).unwrap();
        s.append_message(call("c1")).unwrap();
        s.append_message(Message::tool_result("c1", "x", false))
            .unwrap();
        let error = plan_region(&s, &policy(0), Span { start: 0, end: 1 }).unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot commit: span 0..=1 splits call c1 from its result at position 2"
        );
        assert!(plan_region(&s, &policy(0), Span { start: 0, end: 2 }).is_ok());
    }
}
