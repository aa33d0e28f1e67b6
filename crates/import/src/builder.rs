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

use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_llm::Usage;
use abridge_session::Draft;
use abridge_session::EventBody;
use abridge_session::Seq;
use abridge_session::SurfaceOp;

use crate::Format;
use crate::ImportError;
use crate::ImportReport;
use crate::ImportWarning;
use crate::MISSING_RESULT;
use crate::call_ids::CallIds;

mod compaction;

pub(crate) use compaction::Keep;

/// What the builder keeps of every draft, including those it has passed
/// on: a few words, so a streaming import's memory does not grow with
/// what the events say.
#[derive(Debug)]
struct Node {
    parent: Option<Seq>,
    line: Option<u64>,
    role: Option<Role>,
    checkpoint: bool,
    children: u32,
}

/// How many of the newest drafts stay open to change (usage attached to a
/// reply, a time read for an added result) before they are passed to the
/// sink. Importers change only drafts of the turn they are in, which is
/// far shorter; past this a change is not made (and the report says so).
pub(crate) const WINDOW: usize = 4096;

/// Where finished drafts go.
pub(crate) enum Sink {
    /// Kept and returned by [`Builder::finish`]: an [`Imported`](crate::Imported).
    Keep,
    /// Handed on one at a time; the first error stops the handing and is
    /// returned by `finish`.
    Send(Box<dyn FnMut(Draft) -> Result<(), ImportError>>),
}

/// Where an import's drafts go, and the pixel cap they are held to.
#[derive(Debug)]
pub(crate) struct Output {
    pub(crate) sink: Sink,
    pub(crate) max_image_pixels: u64,
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Sink::Keep => "Keep",
            Sink::Send(_) => "Send",
        })
    }
}

/// Drafts under construction for one import.
#[derive(Debug)]
pub(crate) struct Builder {
    file: String,
    format: Format,
    /// The newest drafts, still open to change; the first is seq `first`.
    window: std::collections::VecDeque<Draft>,
    first: Seq,
    sink: Sink,
    /// Drafts kept by [`Sink::Keep`].
    kept: Vec<Draft>,
    /// Pixel cap on a draft's images, checked as each leaves the window.
    max_image_pixels: u64,
    /// The first error the sink or the image check gave.
    failed: Option<ImportError>,
    nodes: Vec<Node>,
    /// Where a checkpoint's replace starts and ends, by its seq.
    replaces: HashMap<Seq, (usize, usize)>,
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
    pub(crate) fn new(file: &str, format: Format, output: Output) -> Self {
        let Output {
            sink,
            max_image_pixels,
        } = output;
        Builder {
            file: file.to_string(),
            format,
            window: std::collections::VecDeque::new(),
            first: 0,
            sink,
            kept: Vec::new(),
            max_image_pixels,
            failed: None,
            nodes: Vec::new(),
            replaces: HashMap::new(),
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
        self.next_seq().checked_sub(1)
    }

    fn next_seq(&self) -> Seq {
        self.first + self.window.len() as Seq
    }

    /// Draft `seq` while it is in the window.
    fn draft(&self, seq: Seq) -> Option<&Draft> {
        let index = usize::try_from(seq.checked_sub(self.first)?).ok()?;
        self.window.get(index)
    }

    fn draft_mut(&mut self, seq: Seq) -> Option<&mut Draft> {
        let index = usize::try_from(seq.checked_sub(self.first)?).ok()?;
        self.window.get_mut(index)
    }

    /// Passes the oldest draft in the window to the sink.
    fn pass_oldest(&mut self) {
        let Some(draft) = self.window.pop_front() else {
            return;
        };
        let seq = self.first;
        self.first += 1;
        if self.failed.is_some() {
            return;
        }
        let line = self.node(seq).and_then(|n| n.line);
        if let Err(error) = crate::check_image(&self.file, &draft, line, self.max_image_pixels) {
            self.failed = Some(error);
            return;
        }
        match &mut self.sink {
            Sink::Keep => self.kept.push(draft),
            Sink::Send(send) => {
                if let Err(error) = send(draft) {
                    self.failed = Some(error);
                }
            }
        }
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
        let seq = self.next_seq();
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
        if let EventBody::Message(m) = &body
            && let SurfaceOp::Replace { start, end } = m.op
        {
            self.replaces.insert(seq, (start, end));
        }
        let mut draft = Draft::body(body).with_parent(parent);
        if let Some(time) = time {
            draft = draft.with_time(time);
        }
        self.window.push_back(draft);
        self.nodes.push(Node {
            parent,
            line,
            role,
            checkpoint,
            children: 0,
        });
        if self.window.len() > WINDOW {
            self.pass_oldest();
        }
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
        let time = p.and_then(|p| self.draft(p)).and_then(|d| d.time.clone());
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
        let Some(draft) = self.draft_mut(seq) else {
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

    /// Ends the import: makes `leaf` the active leaf (appending a `leaf`
    /// event when it is not the newest event), reports calls left without
    /// results, and passes every draft still in the window to the sink.
    /// Returns the drafts a [`Sink::Keep`] kept (none for the others).
    ///
    /// # Errors
    /// The first error of the sink or of the image check;
    /// [`ImportError::Cycle`] (never, by construction).
    pub(crate) fn finish(
        mut self,
        leaf: Option<Option<Seq>>,
    ) -> Result<(Vec<Draft>, ImportReport), ImportError> {
        if let Some(target) = leaf {
            let target = self.snap(target);
            if target != self.last() {
                let Draft { body, .. } = Draft::body(EventBody::Leaf);
                let time = self.window.back().and_then(|d| d.time.clone());
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
        while !self.window.is_empty() {
            self.pass_oldest();
        }
        if let Some(error) = self.failed {
            return Err(error);
        }
        self.report.lines = self.nodes.iter().map(|n| n.line).collect();
        Ok((self.kept, self.report))
    }
}
