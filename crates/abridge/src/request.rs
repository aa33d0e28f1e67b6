//! Turning the surface into what a request sends.
//!
//! The log stores what happened; a provider needs a well-formed request
//! for itself. Four things stand between them, applied here and nowhere
//! else:
//!
//! - snapcompact checkpoints are drawn from their archives (the log stores
//!   source text, never pixels);
//! - a checkpoint written by a provider's native compaction is replayed as
//!   that provider's own output when the request goes back to it (the call
//!   was paid for; its text summary is for every other provider);
//! - thinking goes only to the provider that signed it, and only for the
//!   current turn when the model drops earlier reasoning anyway;
//! - every tool call is answered and every result has its call, so a log
//!   cut short or imported with gaps still makes a request the provider
//!   accepts.

use std::collections::HashSet;

use abridge_llm::AnthropicClient;
use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_meter::PriorThinking;
use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::UNKNOWN_OUTCOME;

use crate::error::HarnessError;

/// Who the next request goes to: what decides which of the log's provider
/// data it may carry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestTarget {
    /// The client's provider name ([`LlmClient::provider`]); `None` when
    /// unknown, which replays nothing native and sends thinking whatever
    /// its provenance.
    ///
    /// [`LlmClient::provider`]: abridge_llm::LlmClient::provider
    pub provider: Option<String>,
    /// The provider whose native items the client's wire format carries
    /// ([`LlmClient::native_dialect`]): a native compaction written there
    /// is replayed, whatever the client is named. `None` replays nothing
    /// native.
    ///
    /// [`LlmClient::native_dialect`]: abridge_llm::LlmClient::native_dialect
    pub native_dialect: Option<String>,
    /// Whether the model reads reasoning from earlier turns; when it does
    /// not, that reasoning is left out of the request.
    pub prior_thinking: PriorThinking,
}

/// The surface's messages as `target` should receive them (see the module
/// docs for what changes on the way).
///
/// # Errors
/// [`HarnessError::Frames`] when a snapcompact checkpoint has no summary
/// event or its archive cannot be read back or drawn.
pub fn build_request(
    session: &Session,
    target: &RequestTarget,
) -> Result<Vec<Message>, HarnessError> {
    let mut out = surface_for(session, Some(target))?;
    keep_thinking_for(&mut out, target);
    pair_tool_calls(&mut out);
    Ok(out)
}

/// The surface's messages with every snapcompact checkpoint's frame
/// references replaced by the drawn frames, and nothing else changed.
///
/// # Errors
/// As [`build_request`].
pub fn expand_frames(session: &Session) -> Result<Vec<Message>, HarnessError> {
    surface_for(session, None)
}

/// The surface with frames drawn and, when `target` is given, native
/// compactions replayed for it.
fn surface_for(
    session: &Session,
    target: Option<&RequestTarget>,
) -> Result<Vec<Message>, HarnessError> {
    let frames = abridge_snapcompact::FrameCache::default();
    let mut out = Vec::with_capacity(session.surface().len());
    for seq in session.surface().seqs() {
        let Some(message) = session.message(*seq) else {
            continue;
        };
        if let Some(replayed) = target.and_then(|t| native_replay(session, *seq, message, t)) {
            out.push(replayed);
        } else if abridge_snapcompact::is_snapcompact_checkpoint(message) {
            out.push(expand_frames_of(session, *seq, message, &frames)?);
        } else {
            out.push(message.as_ref().clone());
        }
    }
    Ok(out)
}

fn expand_frames_of(
    session: &Session,
    seq: Seq,
    message: &Message,
    cache: &abridge_snapcompact::FrameCache,
) -> Result<Message, HarnessError> {
    let frames = |reason: String| HarnessError::Frames { seq, reason };
    let summary = abridge_compact::summary_of_checkpoint(session, seq)
        .ok_or_else(|| frames("it has no compaction/summary event".to_string()))?;
    let archive = abridge_snapcompact::archive_from_summary(&summary.summary, &summary.details)
        .ok_or_else(|| frames("its snapcompact archive cannot be read back".to_string()))?;
    let mut expanded = message.clone();
    expanded.content = archive
        .expand(&message.content, cache)
        .map_err(|e| frames(e.to_string()))?;
    Ok(expanded)
}

/// The checkpoint at `seq` as its native compaction output, when it has
/// one written by the provider the request goes to.
fn native_replay(
    session: &Session,
    seq: Seq,
    message: &Message,
    target: &RequestTarget,
) -> Option<Message> {
    let provider = target.native_dialect.as_deref()?;
    if !matches!(message.meta.origin, Some(Origin::Checkpoint { .. })) {
        return None;
    }
    let summary = abridge_compact::summary_of_checkpoint(session, seq)?;
    let items = abridge_compact_basic::native_replay(&summary.details, provider)?;
    if items.is_empty() {
        return None;
    }
    let mut replayed = message.clone();
    replayed.content = items
        .iter()
        .map(|item| Block::Native {
            provider: provider.to_string(),
            item: item.clone(),
        })
        .collect();
    // Anthropic's compaction block is the assistant's own content; the
    // Responses API takes its items wherever they stand.
    if provider == AnthropicClient::NAME {
        replayed.role = Role::Assistant;
    }
    Some(replayed)
}

/// Leaves out reasoning the target cannot or will not read: thinking
/// signed by another provider (its signature would be rejected), and, for
/// a model that drops earlier turns' reasoning, thinking before the last
/// user message. A message left empty goes too.
fn keep_thinking_for(messages: &mut Vec<Message>, target: &RequestTarget) {
    let turn_start = messages
        .iter()
        .rposition(|m| m.role == Role::User)
        .unwrap_or(0);
    let mut index = 0;
    messages.retain_mut(|message| {
        let current_turn = index > turn_start;
        index += 1;
        if message.role != Role::Assistant || !message.content.iter().any(is_thinking) {
            return true;
        }
        let signed_for_target = match (&target.provider, &message.meta.origin) {
            (None, _) => true,
            (Some(target), Some(Origin::Model { provider, .. })) => provider == target,
            (Some(_), _) => false,
        };
        let readable = target.prior_thinking == PriorThinking::Kept || current_turn;
        if signed_for_target && readable {
            return true;
        }
        message.content.retain(|b| !is_thinking(b));
        !message.content.is_empty()
    });
}

fn is_thinking(block: &Block) -> bool {
    matches!(
        block,
        Block::Thinking { .. } | Block::RedactedThinking { .. }
    )
}

/// Every tool call gets a result and every result keeps its call: a
/// result whose call is not in the request is left out, and a call with
/// no result gets one saying the outcome is unknown, placed with the
/// results that follow its assistant message.
fn pair_tool_calls(messages: &mut Vec<Message>) {
    let called: HashSet<String> = messages
        .iter()
        .flat_map(|m| m.tool_calls().map(|(id, _, _)| id.to_string()))
        .collect();
    messages.retain(|m| {
        m.tool_result_block()
            .is_none_or(|(id, _, _)| called.contains(id))
    });
    let mut index = 0;
    while index < messages.len() {
        let calls: Vec<String> = messages[index]
            .tool_calls()
            .map(|(id, _, _)| id.to_string())
            .collect();
        index += 1;
        if calls.is_empty() {
            continue;
        }
        let mut answered = HashSet::new();
        while let Some((id, _, _)) = messages.get(index).and_then(Message::tool_result_block) {
            answered.insert(id.to_string());
            index += 1;
        }
        for id in calls.into_iter().filter(|id| !answered.contains(id)) {
            messages.insert(index, Message::tool_result(id, UNKNOWN_OUTCOME, true));
            index += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use abridge_llm::Meta;
    use serde_json::json;

    use super::*;

    fn from(provider: &str, content: Vec<Block>) -> Message {
        let mut message = Message::assistant("");
        message.content = content;
        message.with_meta(Meta {
            origin: Some(Origin::Model {
                provider: provider.to_string(),
                model: "m".to_string(),
            }),
            ..Meta::default()
        })
    }

    fn thinking(text: &str) -> Block {
        Block::Thinking {
            thinking: text.to_string(),
            signature: Some("sig".to_string()),
        }
    }

    fn target(provider: &str, prior: PriorThinking) -> RequestTarget {
        RequestTarget {
            provider: Some(provider.to_string()),
            native_dialect: None,
            prior_thinking: prior,
        }
    }

    #[test]
    fn thinking_goes_only_to_its_provider_and_only_for_the_current_turn_when_dropped() {
        let messages = vec![
            Message::user("q1"),
            from("anthropic", vec![thinking("old"), Block::text("a1")]),
            Message::user("q2"),
            from("anthropic", vec![thinking("new"), Block::text("a2")]),
            from("openai-responses", vec![thinking("foreign")]),
        ];
        let mut dropped = messages.clone();
        keep_thinking_for(&mut dropped, &target("anthropic", PriorThinking::Dropped));
        let texts: Vec<String> = dropped.iter().map(|m| format!("{:?}", m.content)).collect();
        assert_eq!(
            dropped.len(),
            4,
            "the foreign-only message goes: {texts:#?}"
        );
        assert!(!texts[1].contains("old"));
        assert!(texts[3].contains("new"));

        let mut kept = messages.clone();
        keep_thinking_for(&mut kept, &target("anthropic", PriorThinking::Kept));
        assert!(format!("{:?}", kept[1].content).contains("old"));
        assert_eq!(kept.len(), 4);

        let mut unknown = messages;
        keep_thinking_for(&mut unknown, &RequestTarget::default());
        assert_eq!(unknown.len(), 5);
    }

    #[test]
    fn calls_get_results_and_orphan_results_go() {
        let mut call = Message::assistant("");
        call.content = vec![
            Block::ToolCall {
                id: "a".into(),
                name: "read".into(),
                arguments: json!({}),
            },
            Block::ToolCall {
                id: "b".into(),
                name: "read".into(),
                arguments: json!({}),
            },
        ];
        let mut messages = vec![
            Message::tool_result("gone", "its call was compacted", false),
            Message::user("go"),
            call,
            Message::tool_result("a", "ok", false),
            Message::user("next"),
        ];
        pair_tool_calls(&mut messages);
        let ids: Vec<Option<String>> = messages
            .iter()
            .map(|m| m.tool_result_block().map(|(id, _, _)| id.to_string()))
            .collect();
        assert_eq!(
            ids,
            vec![
                None,
                None,
                Some("a".to_string()),
                Some("b".to_string()),
                None
            ]
        );
        let (_, content, is_error) = messages[3].tool_result_block().unwrap();
        assert!(is_error);
        assert_eq!(content, [Block::text(UNKNOWN_OUTCOME)]);
    }
}
