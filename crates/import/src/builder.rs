//! The part every importer shares: drafts with explicit parents, tool-call
//! pairing, compactions as replaces, and the report's figures.
//!
//! Parents are always seqs of drafts already built, so they point strictly
//! backwards and no parent chain can loop, whatever ids the source used.
//! The walks here still carry a step bound and fail with
//! [`ImportError::Cycle`] rather than spin.

use std::collections::HashMap;
use std::collections::HashSet;
use std::sync::Arc;

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_llm::Usage;
use abridge_session::Draft;
use abridge_session::EventBody;
use abridge_session::Reference;
use abridge_session::Seq;
use abridge_session::SurfaceOp;

use crate::Format;
use crate::ImportError;
use crate::ImportReport;
use crate::ImportWarning;
use crate::MISSING_RESULT;
use crate::call_ids::CallIds;

/// What a compaction keeps visible after its summary.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Keep {
    /// Nothing: the summary stands for the whole surface (Claude Code,
    /// Codex).
    Nothing,
    /// The messages that came from source lines at or after `line`, when
    /// `anchor` (the first kept entry, as mapped) is on the compacted
    /// branch; everything else is hidden (pi).
    FromLine {
        /// The first kept entry's source line.
        line: u64,
        /// Where that entry landed in our log; `None` when it was not found.
        anchor: Option<Option<Seq>>,
    },
}

#[derive(Debug)]
struct Node {
    parent: Option<Seq>,
    line: Option<u64>,
    role: Option<Role>,
    checkpoint: bool,
    children: u32,
}

/// Drafts under construction for one import.
#[derive(Debug)]
pub(crate) struct Builder {
    file: String,
    format: Format,
    drafts: Vec<Draft>,
    nodes: Vec<Node>,
    pub(crate) report: ImportReport,
    /// Call id -> the assistant message that made the call.
    call_owner: HashMap<String, Seq>,
    /// Call id -> tool name.
    call_names: HashMap<String, String>,
    /// Assistant seq -> its calls still without a result, in call order.
    open: HashMap<Seq, Vec<String>>,
    /// Assistant seq -> the last tool message answering it.
    tail: HashMap<Seq, Seq>,
    /// Tool message seq -> the assistant message it answers.
    turn_of: HashMap<Seq, Seq>,
    /// Calls answered (really or by an added error result).
    answered: HashSet<String>,
    /// Call ids made unique.
    call_ids: CallIds,
}

impl Builder {
    pub(crate) fn new(file: &str, format: Format) -> Self {
        Builder {
            file: file.to_string(),
            format,
            drafts: Vec::new(),
            nodes: Vec::new(),
            report: ImportReport::new(format),
            call_owner: HashMap::new(),
            call_names: HashMap::new(),
            open: HashMap::new(),
            tail: HashMap::new(),
            turn_of: HashMap::new(),
            answered: HashSet::new(),
            call_ids: CallIds::default(),
        }
    }

    /// The origin for messages whose producer the source does not name.
    pub(crate) fn imported(&self) -> Origin {
        Origin::Imported {
            format: self.format.name().to_string(),
        }
    }

    /// The newest draft.
    pub(crate) fn last(&self) -> Option<Seq> {
        self.drafts.len().checked_sub(1).map(|i| i as Seq)
    }

    fn node(&self, seq: Seq) -> Option<&Node> {
        usize::try_from(seq).ok().and_then(|i| self.nodes.get(i))
    }

    fn push(
        &mut self,
        body: EventBody,
        parent: Option<Seq>,
        time: Option<String>,
        line: Option<u64>,
        checkpoint: bool,
    ) -> Seq {
        let seq = self.drafts.len() as Seq;
        // Parents come from `last()` or from seqs this builder returned, so
        // they are always earlier; anything else becomes the previous draft.
        let parent =
            parent
                .filter(|p| *p < seq)
                .or(if parent.is_some() { self.last() } else { None });
        if let Some(p) = parent.and_then(|p| usize::try_from(p).ok())
            && let Some(node) = self.nodes.get_mut(p)
        {
            node.children += 1;
        }
        let role = match &body {
            EventBody::Message(m) => Some(m.message.role),
            _ => None,
        };
        if let Some(role) = role {
            *self
                .report
                .messages
                .entry(role.as_str().to_string())
                .or_default() += 1;
        }
        let mut draft = Draft::body(body).with_parent(parent);
        if let Some(time) = time {
            draft = draft.with_time(time);
        }
        self.drafts.push(draft);
        self.nodes.push(Node {
            parent,
            line,
            role,
            checkpoint,
            children: 0,
        });
        seq
    }

    /// True when `seq` is a log-only (or leaf) event.
    pub(crate) fn is_log(&self, seq: Seq) -> bool {
        self.node(seq).is_some_and(|n| n.role.is_none())
    }

    /// The seqs from the root to `seq`, oldest first.
    fn path_to(&self, seq: Option<Seq>) -> Result<Vec<Seq>, ImportError> {
        let mut path = Vec::new();
        let mut cursor = seq;
        while let Some(current) = cursor {
            if path.len() > self.nodes.len() {
                return Err(ImportError::Cycle {
                    file: self.file.clone(),
                    seq: seq.unwrap_or_default(),
                });
            }
            path.push(current);
            cursor = self.node(current).and_then(|n| n.parent);
        }
        path.reverse();
        Ok(path)
    }

    /// The assistant turn that `p` belongs to: `p` itself when it is an
    /// assistant message, the call's owner when it is a tool result, after
    /// stepping over log-only events.
    fn turn_at(&self, p: Option<Seq>) -> Option<Seq> {
        let mut cursor = p;
        let mut steps = 0;
        while let Some(seq) = cursor {
            if steps > self.nodes.len() {
                return None;
            }
            steps += 1;
            let node = self.node(seq)?;
            match node.role {
                Some(Role::Assistant) => return Some(seq),
                Some(Role::Tool) => return self.turn_of.get(&seq).copied(),
                Some(_) => return None,
                None => cursor = node.parent,
            }
        }
        None
    }

    /// Moves a parent that points into a tool-call turn to the turn's last
    /// result, so that results written as siblings (Claude Code's parallel
    /// calls) stay on one chain and nothing hangs off the middle of a run.
    fn snap(&self, p: Option<Seq>) -> Option<Seq> {
        let seq = p?;
        let turn = match self.node(seq).and_then(|n| n.role) {
            Some(Role::Assistant) => Some(seq),
            Some(Role::Tool) => self.turn_of.get(&seq).copied(),
            _ => None,
        };
        Some(turn.and_then(|a| self.tail.get(&a).copied()).unwrap_or(seq))
    }

    /// Calls of the turn at `p` still waiting for a result.
    pub(crate) fn open_calls_at(&self, p: Option<Seq>) -> usize {
        let p = self.snap(p);
        self.turn_at(p)
            .and_then(|a| self.open.get(&a))
            .map_or(0, Vec::len)
    }

    /// Before a non-tool message lands after `p`: answers every call of the
    /// turn at `p` that has no result with an error result, and returns the
    /// new parent.
    fn close_open(&mut self, p: Option<Seq>) -> Option<Seq> {
        let Some(a) = self.turn_at(p) else {
            return p;
        };
        let calls = match self.open.get_mut(&a) {
            Some(calls) if !calls.is_empty() => std::mem::take(calls),
            _ => return p,
        };
        let line = self.node(a).and_then(|n| n.line);
        let time = p
            .and_then(|p| usize::try_from(p).ok())
            .and_then(|i| self.drafts.get(i))
            .and_then(|d| d.time.clone());
        let mut parent = p;
        for call_id in calls {
            self.report.warn(ImportWarning::MissingResult {
                line,
                call_id: call_id.clone(),
            });
            let message =
                Message::tool_result(call_id.clone(), MISSING_RESULT, true).with_meta(Meta {
                    origin: Some(self.imported()),
                    ..Meta::default()
                });
            let seq = self.push(
                EventBody::Message(abridge_session::MessageEvent {
                    message: crate::shared::shared(message),
                    op: SurfaceOp::Append,
                    sources: Vec::new(),
                }),
                parent,
                time.clone(),
                line,
                false,
            );
            self.answered.insert(call_id);
            self.tail.insert(a, seq);
            self.turn_of.insert(seq, a);
            self.report.synthesized_results += 1;
            parent = Some(seq);
        }
        parent
    }

    /// Adds a message after `parent` (usually [`Builder::last`]).
    ///
    /// Tool-call ids are made unique first ([`CallIds`]): a call reusing
    /// an earlier id is renamed, and a result is paired with the newest
    /// call that had its id.
    ///
    /// A tool result goes after its call's turn (after the results before
    /// it); any other message first closes the turn it follows, adding
    /// error results for calls left unanswered. A tool message without an
    /// origin gets `Origin::Tool` with the call's name.
    pub(crate) fn message(
        &mut self,
        mut message: Message,
        parent: Option<Seq>,
        time: Option<String>,
        line: Option<u64>,
    ) -> Seq {
        if message.role == Role::Tool
            && let Some(call_id) = self.call_ids.resolve(&mut message)
        {
            return self.result(message, &call_id, parent, time, line);
        }
        let parent = self.snap(parent);
        let parent = self.close_open(parent);
        for (call_id, renamed) in self.call_ids.claim(&mut message) {
            self.report.renamed_calls += 1;
            self.report.warn(ImportWarning::DuplicateCallId {
                line,
                call_id,
                renamed,
            });
        }
        let calls: Vec<(String, String)> = message
            .tool_calls()
            .map(|(id, name, _)| (id.to_string(), name.to_string()))
            .collect();
        if message.meta.origin.is_none() {
            message.meta.origin = Some(self.imported());
        }
        let seq = self.push(
            EventBody::Message(abridge_session::MessageEvent {
                message: crate::shared::shared(message),
                op: SurfaceOp::Append,
                sources: Vec::new(),
            }),
            parent,
            time,
            line,
            false,
        );
        if !calls.is_empty() {
            let mut ids = Vec::with_capacity(calls.len());
            for (id, name) in calls {
                self.report.tool_calls += 1;
                self.call_owner.insert(id.clone(), seq);
                self.answered.remove(&id);
                self.call_names.insert(id.clone(), name);
                ids.push(id);
            }
            self.open.insert(seq, ids);
        }
        seq
    }

    fn result(
        &mut self,
        mut message: Message,
        call_id: &str,
        parent: Option<Seq>,
        time: Option<String>,
        line: Option<u64>,
    ) -> Seq {
        let call_id = call_id.to_string();
        self.report.tool_results += 1;
        if message.meta.origin.is_none() {
            let name = self.call_names.get(&call_id).cloned().unwrap_or_default();
            message.meta.origin = Some(Origin::Tool {
                call_id: call_id.clone(),
                name,
            });
        }
        let owner = self.call_owner.get(&call_id).copied();
        let (parent, owner) = if self.answered.contains(&call_id) {
            self.report.warn(ImportWarning::LateResult {
                line,
                call_id: call_id.clone(),
            });
            (parent, None)
        } else if let Some(a) = owner {
            (Some(self.tail.get(&a).copied().unwrap_or(a)), Some(a))
        } else {
            self.report.warn(ImportWarning::OrphanResult {
                line,
                call_id: call_id.clone(),
            });
            (self.snap(parent), None)
        };
        let seq = self.push(
            EventBody::Message(abridge_session::MessageEvent {
                message: crate::shared::shared(message),
                op: SurfaceOp::Append,
                sources: Vec::new(),
            }),
            parent,
            time,
            line,
            false,
        );
        if let Some(a) = owner {
            self.answered.insert(call_id.clone());
            if let Some(open) = self.open.get_mut(&a) {
                open.retain(|id| *id != call_id);
            }
            self.tail.insert(a, seq);
            self.turn_of.insert(seq, a);
        }
        seq
    }

    /// Adds a log-only event.
    pub(crate) fn log(
        &mut self,
        kind: &str,
        data: serde_json::Value,
        parent: Option<Seq>,
        time: Option<String>,
        line: Option<u64>,
    ) -> Seq {
        self.report.log_events += 1;
        let parent = self.snap(parent);
        let Draft { body, .. } = Draft::log(kind, data);
        self.push(body, parent, time, line, false)
    }

    /// Sets usage on the message `seq` if it has none. Returns whether it
    /// did.
    pub(crate) fn attach_usage(&mut self, seq: Seq, usage: Usage) -> bool {
        let Some(draft) = usize::try_from(seq)
            .ok()
            .and_then(|i| self.drafts.get_mut(i))
        else {
            return false;
        };
        let EventBody::Message(m) = &mut draft.body else {
            return false;
        };
        if m.message.role != Role::Assistant || m.message.meta.usage.is_some() {
            return false;
        }
        Arc::make_mut(&mut m.message).meta.usage = Some(usage);
        self.report.usage_attached += 1;
        true
    }

    /// The newest assistant message on the chain ending at `p`, stepping
    /// over tool results and log events.
    pub(crate) fn last_assistant(&self, p: Option<Seq>) -> Option<Seq> {
        let mut cursor = p;
        let mut steps = 0;
        while let Some(seq) = cursor {
            if steps > self.nodes.len() {
                return None;
            }
            steps += 1;
            let node = self.node(seq)?;
            match node.role {
                Some(Role::Assistant) => return Some(seq),
                Some(Role::Tool) | None => cursor = node.parent,
                Some(_) => return None,
            }
        }
        None
    }

    /// The seqs a model would see at the end of `path`: appends push,
    /// replaces swap their span for the checkpoint. The builder writes no
    /// rewrites, and its replaces always fit, so this short fold is the
    /// session's own fold for these drafts.
    fn surface_of(&self, path: &[Seq]) -> Vec<Seq> {
        let mut surface: Vec<Seq> = Vec::new();
        for seq in path {
            let body = usize::try_from(*seq)
                .ok()
                .and_then(|i| self.drafts.get(i))
                .map(|d| &d.body);
            let Some(EventBody::Message(m)) = body else {
                continue;
            };
            match m.op {
                SurfaceOp::Append => surface.push(*seq),
                SurfaceOp::Replace { start, end } if start <= end && end < surface.len() => {
                    surface.splice(start..=end, [*seq]);
                }
                SurfaceOp::Replace { .. } | SurfaceOp::Rewrite { .. } => {}
            }
        }
        surface
    }

    /// Adds a compaction checkpoint after `parent`: `message` replaces
    /// every message the compacting agent stopped showing its model, and
    /// lists them with `bookkeeping` (log events describing the compaction)
    /// in its sources.
    ///
    /// # Errors
    /// [`ImportError::Cycle`] (never, by construction).
    pub(crate) fn compaction(
        &mut self,
        mut message: Message,
        parent: Option<Seq>,
        time: Option<String>,
        line: u64,
        keep: Keep,
        bookkeeping: &[Seq],
    ) -> Result<Seq, ImportError> {
        let parent = self.snap(parent);
        let parent = self.close_open(parent);
        let path = self.path_to(parent)?;
        let surface = self.surface_of(&path);
        let cut = match keep {
            Keep::Nothing => surface.len(),
            Keep::FromLine { line: kept, anchor } => {
                let on_path = match anchor {
                    Some(Some(seq)) => path.contains(&seq),
                    Some(None) => true,
                    None => false,
                };
                if on_path {
                    let mut cut = surface.len();
                    while let Some(seq) = cut.checked_sub(1).map(|i| surface[i]) {
                        let keep_it = self
                            .node(seq)
                            .is_some_and(|n| !n.checkpoint && n.line.is_some_and(|l| l >= kept));
                        if !keep_it {
                            break;
                        }
                        cut -= 1;
                    }
                    cut
                } else {
                    self.report.warn(ImportWarning::Compaction {
                        line,
                        reason: format!(
                            "the first kept entry (line {kept}) is not on the compacted branch; the summary replaces everything before it"
                        ),
                    });
                    surface.len()
                }
            }
        };
        if message.meta.origin.is_none() {
            message.meta.origin = Some(self.imported());
        }
        if cut == 0 {
            self.report.warn(ImportWarning::Compaction {
                line,
                reason: "nothing was hidden; the summary was appended".to_string(),
            });
            return Ok(self.message(message, parent, time, Some(line)));
        }
        // Name what the checkpoint hides, as the seam's framing does, so the
        // `recall` tool reads an imported checkpoint's past back too.
        let hides = Reference::range(surface[0], surface[cut - 1]);
        message.content.push(Block::text(hides.hidden_note()));
        let mut sources: Vec<Seq> = surface[..cut].to_vec();
        sources.extend_from_slice(bookkeeping);
        crate::shared::fit(&mut message.content);
        let Draft { body, .. } = Draft::replace(message, 0, cut - 1, sources);
        let seq = self.push(body, parent, time, Some(line), true);
        self.report.compactions += 1;
        Ok(seq)
    }

    /// Ends the import: makes `leaf` the active leaf (appending a `leaf`
    /// event when it is not the newest event) and reports calls left
    /// without results.
    ///
    /// # Errors
    /// [`ImportError::Cycle`] (never, by construction).
    pub(crate) fn finish(
        mut self,
        leaf: Option<Option<Seq>>,
    ) -> Result<(Vec<Draft>, ImportReport), ImportError> {
        if let Some(target) = leaf {
            let target = self.snap(target);
            if target != self.last() {
                let Draft { body, .. } = Draft::body(EventBody::Leaf);
                let time = self.drafts.last().and_then(|d| d.time.clone());
                self.push(body, target, time, None, false);
                self.report.leaf_events += 1;
            }
        }
        let active: HashSet<Seq> = self.path_to(self.last())?.into_iter().collect();
        let mut open: Vec<(Seq, Vec<String>)> = self
            .open
            .iter()
            .filter(|(_, calls)| !calls.is_empty())
            .map(|(a, calls)| (*a, calls.clone()))
            .collect();
        open.sort();
        for (a, calls) in open {
            let line = self.node(a).and_then(|n| n.line);
            for call_id in calls {
                let warning = if active.contains(&a) {
                    ImportWarning::DanglingAtEnd { line, call_id }
                } else {
                    ImportWarning::UnansweredOffPath { line, call_id }
                };
                self.report.warn(warning);
            }
        }
        self.report.branch_points = self.nodes.iter().filter(|n| n.children > 1).count();
        self.report.lines = self.nodes.iter().map(|n| n.line).collect();
        Ok((self.drafts, self.report))
    }
}
