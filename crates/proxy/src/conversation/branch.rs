//! A request that shares only part of what a conversation knows: the
//! agent rewrote an item it had sent (aider drops the reminder it
//! appended to its newest request on the next turn; a person edits an
//! earlier message). The conversation goes on in the same session, on a
//! branch at the last shared item, so a checkpoint over the shared part
//! stays in force and the compacted prefix keeps its bytes.
//!
//! Why not a new session (the first rule): with aider that was one
//! session per turn, each holding the whole history, the threshold pass
//! run afresh on each, and no checkpoint ever carried over.
//!
//! What the branch keeps. The session moves (a `leaf` event) to the
//! event just before the first message of the first item no longer
//! shared. Checkpoints and rewrites that landed after that point (on the
//! branch left behind) are written again on the new branch, in order, as
//! long as each one applies unchanged: a replace whose whole span lies
//! on the new surface, at the same positions, with every seq it hides in
//! its sources, or a rewrite whose target is visible. The copy is the
//! same message with the same sources (an earlier copy named in place of
//! its original), so `abridge check` still finds its
//! `compaction/summary`, and the request carries the same bytes.
//! The first one that reaches past the branch point (it summarized an
//! item the agent has since changed) stops the carrying: it and every
//! later one stay on the old branch, since they describe history this
//! branch does not have, and the threshold pass plans afresh on the new
//! branch. Either way the surface is one the log's own rules accept,
//! and tool pairing holds: the new branch holds the shared messages,
//! checkpoints that never split a call from its result, and the agent's
//! items, appended with the pairing check.

use abridge_session::Draft;
use abridge_session::EventBody;
use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::SessionError;
use abridge_session::SurfaceOp;
use serde_json::Value;
use serde_json::json;

use super::Conversation;

/// The log event that records a branch: which items were kept, which
/// events were left behind and which were carried over, old seq to new.
pub const TYPE_PROXY_BRANCH: &str = "proxy/branch";

impl Conversation {
    /// Where a request whose prefix hashes are `hashes` continues this
    /// conversation: how many of its items are already logged on the
    /// path it continues (the rest are new). When it shares only part of
    /// what is known, the session first moves to a branch at the last
    /// shared item.
    ///
    /// `None` when it shares nothing but the system items (the agent
    /// compacted on its own, or began another task: the caller starts a
    /// linked session), or when the branch could not be written.
    pub(crate) fn follow(&mut self, hashes: &[u64]) -> Option<usize> {
        let known = self.known();
        let shared = self
            .hashes
            .iter()
            .take(known)
            .zip(hashes)
            .take_while(|(ours, theirs)| ours == theirs)
            .count();
        if shared == known {
            return Some(known);
        }
        if shared <= self.system_items() {
            return None;
        }
        match self.branch_at(shared) {
            Ok(kept) => Some(kept),
            Err(error) => {
                tracing::warn!(session = %self.id, %error, "the branch could not be written");
                None
            }
        }
    }

    /// Notes the prefix hashes of the items now known.
    pub(crate) fn note_hashes(&mut self, hashes: &[u64]) {
        self.hashes = hashes[..hashes.len().min(self.items.len())].to_vec();
    }

    /// How many items at the start are system prompts (Chat and
    /// Responses carry them in the history): sharing only those is
    /// sharing the head, not the history.
    fn system_items(&self) -> usize {
        self.items
            .iter()
            .take_while(|item| {
                matches!(
                    item.get("role").and_then(Value::as_str),
                    Some("system" | "developer")
                )
            })
            .count()
    }

    /// Moves the session to a branch after the first `shared` items (or
    /// fewer: a reply spanning several items is kept whole or not at
    /// all), carrying over the checkpoints that still apply; returns the
    /// number of items kept.
    fn branch_at(&mut self, shared: usize) -> Result<usize, SessionError> {
        let keep = self
            .groups
            .iter()
            .take_while(|group| group.items.end <= shared)
            .count();
        let kept = self.groups[..keep].last().map_or(0, |g| g.items.end);
        let cut = self.groups[keep..]
            .iter()
            .flat_map(|group| group.seqs.iter().copied())
            .min();
        if let Some(cut) = cut {
            let known = self.items.len();
            self.move_before(cut, json!({"kept_items": kept, "known_items": known}))?;
            // The last reply lies on the branch left behind.
            self.pending_reply = None;
        }
        for group in self.groups.drain(keep..) {
            for seq in group.seqs {
                self.group_of.remove(&seq);
            }
        }
        self.items.truncate(kept);
        self.hashes.truncate(kept);
        Ok(kept)
    }
}

impl Conversation {
    /// Moves the session off `reply`, a reply the agent did not send
    /// back (a retry, a turn it gave up, another answer in its history),
    /// to a branch at the event before it. So the surface is the agent's
    /// history, and the reply's tool calls do not wait on the surface
    /// for results that will never come (`abridge check` would report
    /// them).
    pub(super) fn leave_reply(&mut self, reply: Seq) {
        if let Err(error) = self.move_before(reply, json!({"left_reply": reply})) {
            tracing::warn!(session = %self.id, %error, "the reply not sent back could not be left behind");
        }
    }

    /// Moves the session to the event before `cut`, carries over what
    /// still applies, and records the move with `note`.
    fn move_before(&mut self, cut: Seq, mut note: Value) -> Result<(), SessionError> {
        let mut session = self
            .harness
            .session()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let target = session.event(cut).and_then(|event| event.parent);
        let navigation = session.navigate(target)?;
        let carried = carry_over(&mut session, &navigation.abandoned)?;
        note["from"] = json!(navigation.from);
        note["to"] = json!(target);
        note["carried"] = json!(carried);
        tracing::info!(session = %self.id, %note, "continuing on a branch");
        session.append(Draft::log(TYPE_PROXY_BRANCH, note))?;
        Ok(())
    }
}

/// Writes again, on the current branch, the checkpoints and rewrites of
/// `abandoned` (oldest first) while each applies unchanged; returns
/// `[old seq, new seq]` for each one written. A later one that names an
/// earlier one carried (a checkpoint hiding a rewritten result) names
/// its copy instead.
fn carry_over(session: &mut Session, abandoned: &[Seq]) -> Result<Vec<[Seq; 2]>, SessionError> {
    let mut carried: Vec<[Seq; 2]> = Vec::new();
    let renamed = |carried: &[[Seq; 2]], seq: Seq| {
        carried
            .iter()
            .find(|[old, _]| *old == seq)
            .map_or(seq, |[_, new]| *new)
    };
    for seq in abandoned {
        let Some(event) = session.event(*seq).and_then(|e| e.message_event()) else {
            continue;
        };
        let mut copy = event.clone();
        copy.sources = copy.sources.iter().map(|s| renamed(&carried, *s)).collect();
        let applies = match copy.op {
            // The agent's items and the replies after the branch point.
            SurfaceOp::Append => continue,
            SurfaceOp::Replace { start, end } => session
                .surface()
                .seqs()
                .get(start..=end)
                .is_some_and(|hidden| hidden.iter().all(|s| copy.sources.contains(s))),
            SurfaceOp::Rewrite { target } => {
                let target = renamed(&carried, target);
                copy.op = SurfaceOp::Rewrite { target };
                session.surface().contains(target)
            }
        };
        if !applies {
            break;
        }
        let new = session.append(Draft::body(EventBody::Message(copy)))?;
        carried.push([*seq, new]);
    }
    Ok(carried)
}

#[cfg(test)]
mod tests;
