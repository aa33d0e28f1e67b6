//! The invariant checker: what must hold of any session after any
//! sequence of appends and compactions.

use std::collections::HashMap;
use std::collections::HashSet;

use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_session::Event;
use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::SurfaceOp;

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
///   `compaction/summary` event) carries the framing.
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
    report
}

fn check_pairing(session: &Session, out: &mut Vec<Violation>) {
    let seqs = session.surface().seqs();
    let mut calls: HashMap<String, (usize, Seq)> = HashMap::new();
    let mut answered: HashSet<String> = HashSet::new();
    for (position, seq) in seqs.iter().enumerate() {
        let Some(message) = session.message(*seq) else {
            continue;
        };
        for (id, _, _) in message.tool_calls() {
            calls.insert(id.to_string(), (position, *seq));
        }
        if let Some((id, _, _)) = message.tool_result_block() {
            if calls.contains_key(id) {
                answered.insert(id.to_string());
            } else {
                out.push(Violation::ResultWithoutCall {
                    position,
                    seq: *seq,
                    call_id: id.to_string(),
                });
            }
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
    let mut missing: Vec<(usize, Seq, String)> = calls
        .into_iter()
        .filter(|(id, (position, _))| !answered.contains(id) && Some(*position) != trailing)
        .map(|(id, (position, seq))| (position, seq, id))
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
