//! The invariant checker: what must hold of any session after any
//! sequence of appends and compactions.

use std::collections::HashMap;

use abridge_llm::Message;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_session::Event;
use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::SurfaceOp;
use abridge_session::TYPE_UNPIN;

use crate::events::TYPE_COMPACTION_SUMMARY;
use crate::events::UnmatchedStart;
use crate::events::unmatched_starts;
use crate::frame::is_checkpoint;

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Violation {
    /// A tool result on the surface with no earlier call.
    ResultWithoutCall {
        /// Surface position.
        position: usize,
        /// Its seq.
        seq: Seq,
        /// The call id it answers.
        call_id: String,
    },
    /// A tool call on the surface whose result never follows (calls of the
    /// trailing turn still in flight excepted).
    CallWithoutResult {
        /// Surface position of the assistant message.
        position: usize,
        /// Its seq.
        seq: Seq,
        /// The call id.
        call_id: String,
    },
    /// A tool call on the surface whose id an earlier call on it has.
    DuplicateCall {
        /// Surface position of the message with the second call.
        position: usize,
        /// Its seq.
        seq: Seq,
        /// The id used twice.
        call_id: String,
    },
    /// A second tool result on the surface for a call already answered.
    AnsweredTwice {
        /// Surface position of the second result.
        position: usize,
        /// Its seq.
        seq: Seq,
        /// The call id.
        call_id: String,
    },
    /// A replace whose sources omit a seq it hid.
    SourcesMissing {
        /// The replacing message.
        seq: Seq,
        /// The hidden seq missing from its sources.
        missing: Seq,
    },
    /// The live surface differs from a fold of the active path.
    SurfaceMismatch {
        /// What the fold gives.
        folded: Vec<Seq>,
        /// What the session holds.
        live: Vec<Seq>,
    },
    /// A compaction is open (a live ticket exists).
    OpenCompaction {
        /// Its id.
        compaction_id: String,
        /// Its start event.
        seq: Seq,
    },
    /// A checkpoint written by a compaction lacks the framing.
    UnframedCheckpoint {
        /// The checkpoint's seq.
        seq: Seq,
    },
    /// A pin event on the active path that cannot be honoured (see
    /// [`Session::pin_faults`]).
    BadPin {
        /// The pin event's seq.
        seq: Seq,
        /// What is wrong with it.
        reason: String,
    },
    /// An unpin event on the active path that takes back no pin: it
    /// names no pin, or one already taken back (see
    /// [`Unpin`](abridge_session::Unpin)).
    BadUnpin {
        /// The unpin event's seq.
        seq: Seq,
        /// The seq it names, when its data names one.
        names: Option<Seq>,
        /// What is wrong with it.
        reason: String,
    },
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Violation::ResultWithoutCall {
                position,
                seq,
                call_id,
            } => write!(
                f,
                "surface position {position} (seq {seq}): result for call {call_id} has no earlier call"
            ),
            Violation::CallWithoutResult {
                position,
                seq,
                call_id,
            } => write!(
                f,
                "surface position {position} (seq {seq}): call {call_id} has no result"
            ),
            Violation::DuplicateCall {
                position,
                seq,
                call_id,
            } => write!(
                f,
                "surface position {position} (seq {seq}): call id {call_id} is used by an earlier call"
            ),
            Violation::AnsweredTwice {
                position,
                seq,
                call_id,
            } => write!(
                f,
                "surface position {position} (seq {seq}): call {call_id} was already answered"
            ),
            Violation::SourcesMissing { seq, missing } => {
                write!(
                    f,
                    "seq {seq}: replace hides seq {missing} but does not list it in sources"
                )
            }
            Violation::SurfaceMismatch { folded, live } => write!(
                f,
                "live surface {live:?} differs from the fold of the active path {folded:?}"
            ),
            Violation::OpenCompaction { compaction_id, seq } => {
                write!(f, "compaction {compaction_id} (seq {seq}) is still open")
            }
            Violation::UnframedCheckpoint { seq } => {
                write!(f, "seq {seq}: checkpoint lacks the checkpoint framing")
            }
            Violation::BadPin { seq, reason } => write!(f, "seq {seq}: pin {reason}"),
            Violation::BadUnpin { seq, reason, .. } => write!(f, "seq {seq}: unpin {reason}"),
        }
    }
}

/// What [`check_invariants`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InvariantReport {
    /// Broken rules, in surface/log order.
    pub violations: Vec<Violation>,
    /// Unmatched starts left by crashes or dropped tickets: inert, reported.
    pub stale_starts: Vec<UnmatchedStart>,
}

impl InvariantReport {
    /// True when no rule is broken.
    pub fn is_ok(&self) -> bool {
        self.violations.is_empty()
    }
}

/// Checks every invariant of `session`:
///
/// - tool pairing on the surface: no result without an earlier call, no
///   call without a later result (except calls of the trailing assistant
///   turn, which may still be running);
/// - every replace lists every seq it hides in its sources, and the live
///   surface equals a fold of the active path;
/// - no live compaction is open (stale starts are listed, not violations);
/// - every checkpoint a compaction committed (its sources name a
///   `compaction/summary` event) carries the framing;
/// - every pin on the active path names an earlier message with text, or
///   a text (pins are log events: they never touch pairing).
pub fn check_invariants(session: &Session) -> InvariantReport {
    let mut report = InvariantReport::default();
    check_pairing(session, &mut report.violations);
    check_fold(session, &mut report.violations);
    for start in unmatched_starts(session) {
        if start.live {
            report.violations.push(Violation::OpenCompaction {
                compaction_id: start.compaction_id.clone(),
                seq: start.seq,
            });
        } else {
            report.stale_starts.push(start);
        }
    }
    for seq in session.surface().seqs() {
        let Some(event) = session.event(*seq).and_then(Event::message_event) else {
            continue;
        };
        // Checkpoints this crate committed list their compaction/summary
        // event in their sources; imported ones reproduce another agent's
        // text verbatim and are not ours to frame.
        let written_by_compaction =
            matches!(event.message.meta.origin, Some(Origin::Checkpoint { .. }))
                && event.sources.iter().any(|s| {
                    session
                        .event(*s)
                        .and_then(Event::log)
                        .is_some_and(|l| l.kind == TYPE_COMPACTION_SUMMARY)
                });
        if matches!(event.op, SurfaceOp::Replace { .. })
            && written_by_compaction
            && !is_checkpoint(&event.message)
        {
            report
                .violations
                .push(Violation::UnframedCheckpoint { seq: *seq });
        }
    }
    for fault in session.pin_faults() {
        report.violations.push(if fault.kind == TYPE_UNPIN {
            Violation::BadUnpin {
                seq: fault.at,
                names: fault.unpin_of,
                reason: fault.reason,
            }
        } else {
            Violation::BadPin {
                seq: fault.at,
                reason: fault.reason,
            }
        });
    }
    report
}

fn check_pairing(session: &Session, out: &mut Vec<Violation>) {
    let seqs = session.surface().seqs();
    let mut pairing = Pairing::default();
    for (position, seq) in seqs.iter().enumerate() {
        let Some(message) = session.message(*seq) else {
            continue;
        };
        for fault in pairing.push(position, message) {
            out.push(match fault {
                PairingFault::ResultWithoutCall { call_id } => Violation::ResultWithoutCall {
                    position,
                    seq: *seq,
                    call_id,
                },
                PairingFault::DuplicateCall { call_id } => Violation::DuplicateCall {
                    position,
                    seq: *seq,
                    call_id,
                },
                PairingFault::AnsweredTwice { call_id } => Violation::AnsweredTwice {
                    position,
                    seq: *seq,
                    call_id,
                },
            });
        }
    }
    // Calls of the trailing assistant message, followed only by tool
    // results, may still be running.
    let trailing = seqs
        .iter()
        .rposition(|seq| session.message(*seq).is_some_and(|m| m.role != Role::Tool))
        .filter(|p| {
            session
                .message(seqs[*p])
                .is_some_and(|m| m.role == Role::Assistant)
        });
    let mut missing: Vec<(usize, Seq, String)> = pairing
        .unanswered()
        .filter(|(position, _)| Some(*position) != trailing)
        .map(|(position, id)| (position, seqs[position], id.to_string()))
        .collect();
    missing.sort();
    out.extend(
        missing
            .into_iter()
            .map(|(position, seq, call_id)| Violation::CallWithoutResult {
                position,
                seq,
                call_id,
            }),
    );
}

/// The tool-pairing rule, walked one message at a time in surface order:
/// a tool result answers a call made earlier and not answered yet, and no
/// two calls share an id. [`check_invariants`] walks a session's surface
/// with it; [`check_appended_pairing`] walks a batch about to be appended
/// after the surface, so what a host appends obeys the same rule the
/// checker reports.
#[derive(Debug, Clone, Default)]
pub struct Pairing {
    /// Every call seen: its surface position and whether it was answered.
    calls: HashMap<String, (usize, bool)>,
}

/// How a message breaks the tool-pairing rule.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PairingFault {
    /// A tool result whose call is not before it (a result before its
    /// call, or for a call never made).
    ResultWithoutCall {
        /// The call id it answers.
        call_id: String,
    },
    /// A tool call whose id an earlier call has.
    DuplicateCall {
        /// The id.
        call_id: String,
    },
    /// A second result for a call already answered.
    AnsweredTwice {
        /// The call id.
        call_id: String,
    },
}

impl std::fmt::Display for PairingFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PairingFault::ResultWithoutCall { call_id } => write!(
                f,
                "a tool result for call {call_id:?}, which no earlier message makes"
            ),
            PairingFault::DuplicateCall { call_id } => write!(
                f,
                "a tool call with id {call_id:?}, which an earlier call already has"
            ),
            PairingFault::AnsweredTwice { call_id } => {
                write!(f, "a second tool result for call {call_id:?}")
            }
        }
    }
}

impl Pairing {
    /// The pairing state after `session`'s surface (whatever faults it
    /// holds already: those are history, reported by the checker).
    pub fn of_surface(session: &Session) -> Self {
        let mut pairing = Pairing::default();
        for (position, seq) in session.surface().seqs().iter().enumerate() {
            if let Some(message) = session.message(*seq) {
                pairing.push(position, message);
            }
        }
        pairing
    }

    /// Walks `message`, at surface position `position`; returns how it
    /// breaks the rule (nothing when it does not).
    pub fn push(&mut self, position: usize, message: &Message) -> Vec<PairingFault> {
        let mut faults = Vec::new();
        for (id, _, _) in message.tool_calls() {
            if self.calls.contains_key(id) {
                faults.push(PairingFault::DuplicateCall {
                    call_id: id.to_string(),
                });
            } else {
                self.calls.insert(id.to_string(), (position, false));
            }
        }
        if let Some((id, _, _)) = message.tool_result_block() {
            match self.calls.get_mut(id) {
                Some((_, answered)) if *answered => faults.push(PairingFault::AnsweredTwice {
                    call_id: id.to_string(),
                }),
                Some((_, answered)) => *answered = true,
                None => faults.push(PairingFault::ResultWithoutCall {
                    call_id: id.to_string(),
                }),
            }
        }
        faults
    }

    /// The calls not answered yet, with their surface positions.
    pub fn unanswered(&self) -> impl Iterator<Item = (usize, &str)> {
        self.calls
            .iter()
            .filter(|(_, (_, answered))| !answered)
            .map(|(id, (position, _))| (*position, id.as_str()))
    }
}

/// Checks that `messages`, appended in order after `session`'s surface,
/// obey the tool-pairing rule ([`Pairing`]); the first that does not is
/// returned with its index in `messages`. Faults already on the surface
/// are not the batch's and do not refuse it.
///
/// # Errors
/// The index of the first message that breaks the rule, and how.
pub fn check_appended_pairing(
    session: &Session,
    messages: &[Message],
) -> Result<(), (usize, PairingFault)> {
    let mut pairing = Pairing::of_surface(session);
    let start = session.surface().seqs().len();
    for (index, message) in messages.iter().enumerate() {
        if let Some(fault) = pairing.push(start + index, message).into_iter().next() {
            return Err((index, fault));
        }
    }
    Ok(())
}

fn check_fold(session: &Session, out: &mut Vec<Violation>) {
    let mut surface: Vec<Seq> = Vec::new();
    for seq in session.active_path() {
        let Some(event) = session.event(seq).and_then(Event::message_event) else {
            continue;
        };
        match event.op {
            SurfaceOp::Append => surface.push(seq),
            SurfaceOp::Replace { start, end } => {
                if start > end || end >= surface.len() {
                    continue;
                }
                let hidden: Vec<Seq> = surface.splice(start..=end, [seq]).collect();
                for missing in hidden.into_iter().filter(|h| !event.sources.contains(h)) {
                    out.push(Violation::SourcesMissing { seq, missing });
                }
            }
            SurfaceOp::Rewrite { target } => {
                if let Some(slot) = surface.iter_mut().find(|s| **s == target) {
                    *slot = seq;
                }
            }
        }
    }
    if surface != session.surface().seqs() {
        out.push(Violation::SurfaceMismatch {
            folded: surface,
            live: session.surface().seqs().to_vec(),
        });
    }
}

#[cfg(test)]
mod tests {
    use abridge_llm::Block;

    use super::*;

    fn call(id: &str) -> Message {
        Message {
            role: Role::Assistant,
            content: vec![Block::ToolCall {
                id: id.to_string(),
                name: "read".to_string(),
                arguments: serde_json::json!({}),
            }],
            meta: abridge_llm::Meta::default(),
        }
    }

    fn result(id: &str) -> Message {
        Message {
            role: Role::Tool,
            content: vec![Block::ToolResult {
                call_id: id.to_string(),
                content: vec![Block::text("ok")],
                is_error: false,
            }],
            meta: abridge_llm::Meta::default(),
        }
    }

    #[test]
    fn an_appended_batch_is_walked_after_the_surface() {
        let mut session = Session::in_memory("s");
        session.append_message(Message::user("go")).expect("user");
        session.append_message(call("a")).expect("call");
        session.append_message(result("a")).expect("result");
        assert_eq!(
            check_appended_pairing(&session, &[call("b"), result("b")]),
            Ok(())
        );
        assert_eq!(
            check_appended_pairing(&session, &[Message::user("x"), result("b"), call("b")]),
            Err((
                1,
                PairingFault::ResultWithoutCall {
                    call_id: "b".to_string()
                }
            ))
        );
        assert_eq!(
            check_appended_pairing(&session, &[call("a")]),
            Err((
                0,
                PairingFault::DuplicateCall {
                    call_id: "a".to_string()
                }
            ))
        );
        assert_eq!(
            check_appended_pairing(&session, &[result("a")]),
            Err((
                0,
                PairingFault::AnsweredTwice {
                    call_id: "a".to_string()
                }
            ))
        );
    }

    #[test]
    fn the_checker_reports_a_duplicate_call_and_a_second_answer() {
        let mut session = Session::in_memory("s");
        for message in [
            Message::user("go"),
            call("a"),
            result("a"),
            call("a"),
            result("a"),
            result("a"),
        ] {
            session.append_message(message).expect("the log takes it");
        }
        let report = check_invariants(&session);
        assert_eq!(
            report.violations,
            vec![
                Violation::DuplicateCall {
                    position: 3,
                    seq: 3,
                    call_id: "a".to_string()
                },
                Violation::AnsweredTwice {
                    position: 4,
                    seq: 4,
                    call_id: "a".to_string()
                },
                Violation::AnsweredTwice {
                    position: 5,
                    seq: 5,
                    call_id: "a".to_string()
                },
            ]
        );
    }
}
