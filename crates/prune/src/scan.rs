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

/// The visible messages a pass works on, with their seqs, oldest first.
///
/// Taken from a live [`Session`] or from a compaction [`Plan`] (whose
/// head, span and kept part together are the surface), so the same pass
/// serves a harness between turns and a `CompactionMethod`.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    entries: Vec<(Seq, SharedMessage)>,
}

impl Snapshot {
    /// The surface of `session` (cheap: messages are shared).
    pub fn of_session(session: &Session) -> Self {
        Snapshot {
            entries: session
                .surface()
                .seqs()
                .iter()
                .filter_map(|seq| session.message(*seq).map(|m| (*seq, m.clone())))
                .collect(),
        }
    }

    /// The surface a plan saw: its span then its kept part. The plan's
    /// leading system messages carry no tool results and precede every
    /// candidate, so they are left out.
    pub fn of_plan(plan: &Plan) -> Self {
        let span = plan.seqs.iter().copied().zip(plan.messages.iter().cloned());
        let kept = plan
            .kept_seqs
            .iter()
            .copied()
            .zip(plan.kept.iter().cloned());
        Snapshot {
            entries: span.chain(kept).collect(),
        }
    }

    /// Builds a snapshot from pairs, oldest first.
    pub fn from_entries(entries: Vec<(Seq, SharedMessage)>) -> Self {
        Snapshot { entries }
    }

    /// The pairs, oldest first.
    pub fn entries(&self) -> &[(Seq, SharedMessage)] {
        &self.entries
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
    /// Measures a snapshot with `counter` (which may cache by seq).
    pub(crate) fn new(snapshot: &Snapshot, counter: &dyn TokenCounter) -> Self {
        let mut calls: HashMap<&str, (&str, &Value)> = HashMap::new();
        let messages = &snapshot.entries;
        let mut items = Vec::with_capacity(messages.len());
        for (_, message) in messages {
            for (id, name, arguments) in message.tool_calls() {
                calls.insert(id, (name, arguments));
            }
        }
        for (seq, message) in messages {
            let tokens = counter.message_tokens(Some(*seq), message);
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
