//! Cache-aligned summary requests: the conversation replayed as the live
//! agent sent it, with the summary instruction appended last.
//!
//! Providers cache a prompt by its prefix. The agent's last turn sent the
//! system prompt, the tool list and the history; a summary request that
//! starts with the very same bytes is served from that cache, so only the
//! instruction and the summary are billed at full price. The flattened
//! transcript (the other request mode) rewrites the history as one text
//! block and always starts cold.
//!
//! What keeps the prefix identical:
//! - the caller's [`ConversationPrefix`] (system prompt and tool specs,
//!   which the session log does not hold), then the session's own leading
//!   system messages;
//! - tools stay listed, with [`ToolChoice::None`] forbidding calls (taking
//!   the tools away would change the prefix);
//! - for an update, the previous checkpoint message exactly as stored,
//!   when the window starts at the head of the span;
//! - the history messages as they are, never re-rendered.
//!
//! A window that would replay a tool call without its result (or the
//! reverse) is sent as a transcript instead, since providers reject
//! unpaired calls.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::summarizer::SummaryRequest;
use abridge_compact::Plan;
use abridge_llm::Message;
use abridge_llm::Purpose;
use abridge_llm::Request;
use abridge_llm::SharedMessage;
use abridge_llm::ToolChoice;
use abridge_llm::ToolSpec;

use crate::prompts::BRANCH_SUMMARY;
use crate::prompts::CACHE_ALIGNED_NOTICE;
use crate::prompts::SUMMARIZE_INITIAL;
use crate::prompts::SUMMARIZE_TURN_PREFIX;
use crate::prompts::SUMMARIZE_UPDATE;
use crate::prompts::SUMMARIZE_UPDATE_ALIGNED;
use crate::transcript_request::push_summary_tail;
use crate::transcript_request::transcript_request;

/// What the live conversation sends before the session's messages on every
/// turn and the session log does not record: the system prompt and the
/// tool specs. Supplied by the harness, which builds the turn requests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConversationPrefix {
    /// System (or developer) messages sent first on every turn. Empty when
    /// the session holds its system prompt itself.
    pub system: Vec<Message>,
    /// The tools offered on every turn, in the order the turn sends them.
    pub tools: Vec<ToolSpec>,
}

impl ConversationPrefix {
    /// A prefix of one system prompt and `tools`.
    pub fn new(system: impl Into<String>, tools: Vec<ToolSpec>) -> Self {
        let system = system.into();
        ConversationPrefix {
            system: if system.is_empty() {
                Vec::new()
            } else {
                vec![Message::system(system)]
            },
            tools,
        }
    }
}

/// The live prefix of one compaction: the conversation prefix, the
/// session's leading system messages and, for an update, the previous
/// checkpoint message as stored. Built per plan by
/// [`AlignedPrefix::for_plan`]; [`AlignedPrefix::new`] serves requests made
/// without a plan (a branch summary).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct AlignedPrefix {
    lead: Vec<SharedMessage>,
    tools: Vec<ToolSpec>,
    checkpoint: Option<SharedMessage>,
    previous_summary: Option<String>,
    first: Option<SharedMessage>,
}

impl AlignedPrefix {
    /// The prefix alone, for requests that belong to no plan.
    pub(crate) fn new(prefix: &ConversationPrefix) -> Self {
        AlignedPrefix {
            lead: prefix.system.iter().cloned().map(Arc::new).collect(),
            tools: prefix.tools.clone(),
            ..AlignedPrefix::default()
        }
    }

    /// The prefix of `plan`'s conversation: `prefix`, then the session's
    /// leading system messages, then (for an update) the previous
    /// checkpoint message.
    pub(crate) fn for_plan(prefix: &ConversationPrefix, plan: &Plan) -> Self {
        let mut aligned = AlignedPrefix::new(prefix);
        aligned.lead.extend(plan.head().iter().cloned());
        if let Some(previous) = &plan.previous() {
            aligned.checkpoint = plan.messages().first().cloned();
            aligned.previous_summary = Some(previous.summary.clone());
        }
        aligned.first = plan.history().first().cloned();
        aligned
    }
}

/// True when every tool call in `messages` has its result there and every
/// result its call: only then can the messages be replayed as they are.
fn paired(messages: &[SharedMessage]) -> bool {
    let calls: BTreeSet<&str> = messages
        .iter()
        .flat_map(|m| m.tool_calls().map(|(id, _, _)| id))
        .collect();
    let results: BTreeSet<&str> = messages
        .iter()
        .filter_map(|m| m.tool_result_block().map(|(id, _, _)| id))
        .collect();
    calls == results
}

/// Builds the cache-aligned request for `request`: the live prefix, the
/// window's messages as they are, then one user message with
/// the cache-aligned notice, the previous checkpoint (unless replayed at
/// the head), host notes, the task and any focus. Tools listed,
/// [`ToolChoice::None`]. A window with unpaired tool calls falls back to
/// the transcript request.
pub(crate) fn build_cache_aligned_request(
    model: &str,
    aligned: &AlignedPrefix,
    request: &SummaryRequest,
) -> Request {
    let prefix_mode = request.messages.is_empty() && !request.turn_prefix.is_empty();
    let history = if prefix_mode {
        &request.turn_prefix
    } else {
        &request.messages
    };
    if !paired(history) {
        tracing::debug!("window splits a tool call from its result; sending it as a transcript");
        return transcript_request(model, request);
    }
    let at_head = !prefix_mode
        && request.purpose != Purpose::BranchSummary
        && aligned.checkpoint.is_some()
        && request.previous.is_some()
        && request.previous == aligned.previous_summary
        && match (history.first(), &aligned.first) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        };
    let task = if request.purpose == Purpose::BranchSummary {
        BRANCH_SUMMARY
    } else if prefix_mode {
        SUMMARIZE_TURN_PREFIX
    } else if at_head {
        SUMMARIZE_UPDATE_ALIGNED
    } else if request.previous.is_some() {
        SUMMARIZE_UPDATE
    } else {
        SUMMARIZE_INITIAL
    };
    let mut messages: Vec<SharedMessage> = aligned.lead.clone();
    if at_head && let Some(checkpoint) = &aligned.checkpoint {
        messages.push(Arc::clone(checkpoint));
    }
    messages.extend(history.iter().cloned());

    let mut text = String::from(CACHE_ALIGNED_NOTICE.trim());
    text.push_str("\n\n");
    // At the head the previous checkpoint is already in the replayed
    // prefix, so it is not repeated here.
    let previous = request.previous.as_deref().filter(|_| !at_head);
    push_summary_tail(&mut text, previous, request, task);
    messages.push(Arc::new(Message::user(text)));
    Request {
        model: model.to_string(),
        messages,
        tools: aligned.tools.clone(),
        tool_choice: ToolChoice::None,
        max_output_tokens: Some(request.max_output_tokens),
        temperature: None,
        purpose: request.purpose,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abridge_llm::Role;

    fn call(id: &str) -> SharedMessage {
        Arc::new(Message::tool_call(
            id,
            "read",
            serde_json::json!({"path": "a.rs"}),
        ))
    }

    fn result(id: &str) -> SharedMessage {
        Arc::new(Message::tool_result(id, "fn main() {}", false))
    }

    #[test]
    fn replays_messages_then_the_instruction_with_tools_disabled() {
        let prefix = ConversationPrefix::new(
            "You are a coding agent.",
            vec![ToolSpec {
                name: "read".into(),
                description: "Read a file".into(),
                parameters: serde_json::json!({"type": "object"}),
            }],
        );
        let history = vec![Arc::new(Message::user("fix it")), call("c1"), result("c1")];
        let request = SummaryRequest::new(history.clone());
        let built = build_cache_aligned_request("m", &AlignedPrefix::new(&prefix), &request);
        assert_eq!(built.tool_choice, ToolChoice::None);
        assert_eq!(built.tools, prefix.tools);
        assert_eq!(built.messages.len(), 5);
        assert_eq!(built.messages[0].role, Role::System);
        assert!(Arc::ptr_eq(&built.messages[1], &history[0]));
        let last = built.messages[4].plain_text();
        assert!(last.starts_with(CACHE_ALIGNED_NOTICE.trim()));
        assert!(last.ends_with(SUMMARIZE_INITIAL.trim()));
    }

    #[test]
    fn a_branch_summary_asks_with_the_branch_prompt_even_with_a_checkpoint_at_the_head() {
        // Everything an update at the head would match: the checkpoint is
        // replayed and the request carries its summary. A branch summary
        // still asks about the abandoned branch, not for an update.
        let checkpoint: SharedMessage = Arc::new(Message::user("## Goal\nold summary"));
        let history = vec![
            Arc::new(Message::user("try the other way")),
            call("c2"),
            result("c2"),
        ];
        let aligned = AlignedPrefix {
            lead: Vec::new(),
            tools: Vec::new(),
            checkpoint: Some(Arc::clone(&checkpoint)),
            previous_summary: Some("old summary".into()),
            first: history.first().cloned(),
        };
        let mut request = SummaryRequest::new(history);
        request.purpose = Purpose::BranchSummary;
        request.previous = Some("old summary".into());
        let built = build_cache_aligned_request("m", &aligned, &request);
        assert_eq!(built.purpose, Purpose::BranchSummary);
        let last = built.messages.last().unwrap().plain_text();
        assert!(last.ends_with(BRANCH_SUMMARY.trim()), "{last}");
        assert!(!last.contains(SUMMARIZE_UPDATE_ALIGNED.trim()), "{last}");
        assert!(!last.contains(SUMMARIZE_INITIAL.trim()), "{last}");
    }

    #[test]
    fn unpaired_window_falls_back_to_a_transcript() {
        let request = SummaryRequest::new(vec![Arc::new(Message::user("go")), call("c9")]);
        let built = build_cache_aligned_request("m", &AlignedPrefix::default(), &request);
        assert_eq!(built, transcript_request("m", &request));
    }
}
