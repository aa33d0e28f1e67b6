//! One walk over the surface that every pass shares: what each visible
//! message costs, which are tool results, what call each answers, and how
//! many tokens follow each position.

use std::collections::HashMap;

use abridge_llm::Block;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_llm::SharedMessage;
use abridge_session::Seq;
use abridge_session::Session;
use serde_json::Value;

use abridge_compact::Plan;
use abridge_compact::TokenCounter;

use crate::placeholder::is_placeholder;

/// The visible messages a pass works on, with their seqs and what each
/// costs, oldest first.
///
/// Taken from a live [`Session`] or from a compaction [`Plan`] (whose
/// head, span and kept part together are the surface), so the same pass
/// serves a harness between turns and a `CompactionMethod`. Costs are
/// counted when the snapshot is taken, while a session is at hand to key
/// the counter's cache by; a plan brings the costs it was planned with.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    entries: Vec<(Seq, SharedMessage)>,
    /// What each entry costs, in the same order.
    costs: Vec<u64>,
}

impl Snapshot {
    /// The surface of `session`, each message counted by `counter` (cheap
    /// after the first time with a caching counter: messages are shared).
    pub fn of_session(session: &Session, counter: &dyn TokenCounter) -> Self {
        let (entries, costs) = session
            .surface()
            .seqs()
            .iter()
            .filter_map(|&seq| {
                let message = session.message(seq)?.clone();
                Some(((seq, message), counter.seq_tokens(session, seq)))
            })
            .unzip();
        Snapshot { entries, costs }
    }

    /// The surface a plan saw: its span then its kept part, with the costs
    /// the plan counted. The plan's leading system messages carry no tool
    /// results and precede every candidate, so they are left out.
    pub fn of_plan(plan: &Plan) -> Self {
        let seqs = plan.seqs().iter().chain(plan.kept_seqs()).copied();
        let messages = plan.messages().iter().chain(plan.kept()).cloned();
        Snapshot {
            entries: seqs.zip(messages).collect(),
            costs: plan
                .message_costs()
                .iter()
                .chain(plan.kept_costs())
                .copied()
                .collect(),
        }
    }

    /// Builds a snapshot from pairs, oldest first, each counted afresh by
    /// `counter` (there is no session to cache by).
    pub fn from_entries(entries: Vec<(Seq, SharedMessage)>, counter: &dyn TokenCounter) -> Self {
        let costs = entries
            .iter()
            .map(|(_, message)| counter.message_tokens(message))
            .collect();
        Snapshot { entries, costs }
    }

    /// The pairs, oldest first.
    pub fn entries(&self) -> &[(Seq, SharedMessage)] {
        &self.entries
    }

    /// What each entry costs, in the order of [`entries`](Self::entries).
    pub fn costs(&self) -> &[u64] {
        &self.costs
    }
}

/// A visible tool result, as the passes see it.
#[derive(Debug, Clone)]
pub(crate) struct ToolItem {
    /// The call it answers.
    pub(crate) call_id: String,
    /// The tool's name (from the call, else from the result's origin).
    pub(crate) name: String,
    /// The call's arguments, when the call is on the surface.
    pub(crate) arguments: Option<Value>,
    /// The tool reported a failure.
    pub(crate) is_error: bool,
    /// The tool flagged the result as useless.
    pub(crate) useless: bool,
    /// Already one of our placeholders.
    pub(crate) elided: bool,
}

/// A visible message.
#[derive(Debug, Clone)]
pub(crate) struct Item {
    /// The seq that supplies the message now (an original or a rewrite).
    pub(crate) seq: Seq,
    /// The message.
    pub(crate) message: SharedMessage,
    /// Its cost.
    pub(crate) tokens: u64,
    /// Tokens of every message after this one.
    pub(crate) tokens_after: u64,
    /// Set for tool results that a pass may rewrite (not checkpoints).
    pub(crate) tool: Option<ToolItem>,
}

/// The surface, measured.
#[derive(Debug)]
pub(crate) struct Scan {
    pub(crate) items: Vec<Item>,
}

impl Scan {
    /// Reads a snapshot's messages and costs.
    pub(crate) fn new(snapshot: &Snapshot) -> Self {
        let mut calls: HashMap<&str, (&str, &Value)> = HashMap::new();
        let messages = &snapshot.entries;
        let mut items = Vec::with_capacity(messages.len());
        for (_, message) in messages {
            for (id, name, arguments) in message.tool_calls() {
                calls.insert(id, (name, arguments));
            }
        }
        for ((seq, message), &tokens) in messages.iter().zip(&snapshot.costs) {
            let tool = tool_item(message, &calls);
            items.push(Item {
                seq: *seq,
                message: message.clone(),
                tokens,
                tokens_after: 0,
                tool,
            });
        }
        let mut after = 0;
        for item in items.iter_mut().rev() {
            item.tokens_after = after;
            after += item.tokens;
        }
        Scan { items }
    }

    /// Tokens of the whole surface.
    pub(crate) fn total(&self) -> u64 {
        self.items.first().map_or(0, |i| i.tokens + i.tokens_after)
    }
}

fn tool_item(message: &SharedMessage, calls: &HashMap<&str, (&str, &Value)>) -> Option<ToolItem> {
    if message.role != Role::Tool {
        return None;
    }
    if matches!(message.meta.origin, Some(Origin::Checkpoint { .. })) {
        return None;
    }
    let (call_id, content, is_error) = message.tool_result_block()?;
    let call = calls.get(call_id);
    let name = match (call, &message.meta.origin) {
        (Some((name, _)), _) => (*name).to_string(),
        (None, Some(Origin::Tool { name, .. })) => name.clone(),
        _ => String::new(),
    };
    let elided = match content {
        [Block::Text { text }, ..] => is_placeholder(text),
        _ => false,
    };
    Some(ToolItem {
        call_id: call_id.to_string(),
        name,
        arguments: call.map(|(_, args)| (*args).clone()),
        is_error,
        useless: message.meta.useless,
        elided,
    })
}
