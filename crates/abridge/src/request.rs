//! Turning the surface into what a request sends.
//!
//! The log stores what happened; a provider needs a well-formed request
//! for itself. Four things stand between them, applied here and nowhere
//! else:
//!
//! - a checkpoint that stores more than text is expanded by its method's
//!   [`CheckpointExpansion`], registered beside the method in the
//!   [`MethodRegistry`](crate::MethodRegistry) (snapcompact draws its
//!   frames from their archive; a provider's native compaction is
//!   replayed as that provider's own output when the request goes back to
//!   it). This module asks each expansion in turn and knows no backend;
//! - thinking goes only to the provider and model that signed it, only
//!   for the current turn when the model drops earlier reasoning anyway,
//!   and never behind a changed message for a model that checks prefixes;
//! - every pin on the active path is carried verbatim exactly once: on
//!   the surface when its message is there, otherwise in one message
//!   after the leading system messages (the host's guarantee, in
//!   `request/pins.rs`, so no method has to remember it);
//! - every tool call is answered right after the message that made it and
//!   every result has its call, so a log cut short, imported with gaps or
//!   with a user message between a call and its result still makes a
//!   request the provider accepts.
//!
//! docs/replay.md has the whole table: what goes back to which provider,
//! model, account and prefix.

use std::collections::HashMap;
use std::collections::HashSet;
use std::sync::Arc;

use abridge_compact::host::CheckpointExpansion;
use abridge_compact::host::Destination;
use abridge_compact::host::SurfaceMessage;
use abridge_llm::LlmClient;
use abridge_llm::Message;
use abridge_llm::ModelEntry;
use abridge_llm::ThinkingReader;
use abridge_meter::PriorThinking;
use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::UNKNOWN_OUTCOME;

use crate::error::HarnessError;

#[cfg(not(feature = "snapcompact"))]
pub(crate) mod frames;
mod pins;

pub use pins::hidden_pins;

/// Who the next request goes to: what decides which of the log's provider
/// data it may carry.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestTarget {
    /// The client's provider name ([`LlmClient::provider`]); `None` when
    /// unknown, which replays nothing native and sends thinking whatever
    /// its provenance.
    pub provider: Option<String>,
    /// The model the request goes to: thinking is bound to the model that
    /// wrote it, so only that model's goes back. `None` checks the
    /// provider only.
    pub model: Option<String>,
    /// The provider whose native items the client's wire format carries
    /// ([`LlmClient::native_dialect`]): a native compaction written there
    /// is replayed, whatever the client is named. `None` replays nothing
    /// native.
    pub native_dialect: Option<String>,
    /// The endpoint and credentials of the client
    /// ([`LlmClient::native_account`]): a native compaction is replayed
    /// only to the account and backend that made it. `None` replays
    /// nothing native.
    pub native_account: Option<String>,
    /// Whether the model reads reasoning from earlier turns; when it does
    /// not, that reasoning is left out of the request; when it does, it
    /// also checks each block's prefix, and reasoning behind a changed
    /// message is left out.
    pub prior_thinking: PriorThinking,
}

impl RequestTarget {
    /// The target for `client` asking `model`, whose catalog entry is
    /// `entry`.
    pub fn for_client(client: &dyn LlmClient, model: &str, entry: &ModelEntry) -> Self {
        RequestTarget {
            provider: Some(client.provider().to_string()),
            model: Some(model.to_string()),
            native_dialect: client.native_dialect().map(str::to_string),
            native_account: client.native_account().map(str::to_string),
            prior_thinking: PriorThinking::for_model(entry),
        }
    }
}

/// The surface's messages as `target` should receive them (see the module
/// docs for what changes on the way), with the built-in methods'
/// expansions.
///
/// # Errors
/// [`HarnessError::Frames`] when a checkpoint cannot be expanded (a
/// snapcompact checkpoint with no summary event, or whose archive cannot
/// be read back or drawn).
pub fn build_request(
    session: &Session,
    target: &RequestTarget,
) -> Result<Vec<Message>, HarnessError> {
    build_request_with(session, target, crate::registry::builtin().expansions())
}

/// [`build_request`] with `expansions` (a registry's
/// [`expansions`](crate::MethodRegistry::expansions)) instead of the
/// built-in ones.
///
/// # Errors
/// As [`build_request`].
pub fn build_request_with(
    session: &Session,
    target: &RequestTarget,
    expansions: &[Arc<dyn CheckpointExpansion>],
) -> Result<Vec<Message>, HarnessError> {
    let mut out = surface_for(session, Some(target), expansions)?;
    let written: Vec<Seq> = session.surface().seqs().to_vec();
    keep_thinking_for(&mut out, &written, target);
    pins::insert_pins(session, &mut out);
    pair_tool_calls(&mut out);
    Ok(out)
}

/// The surface's messages with every checkpoint expanded for no
/// particular destination (snapcompact frames drawn, native output left
/// as text) and the hidden pins' message in place, and nothing else
/// changed.
///
/// # Errors
/// As [`build_request`].
pub fn expand_frames(session: &Session) -> Result<Vec<Message>, HarnessError> {
    let mut out = surface_for(session, None, crate::registry::builtin().expansions())?;
    pins::insert_pins(session, &mut out);
    Ok(out)
}

/// The surface with each message expanded by the first expansion that
/// owns it, for `target` when one is given.
fn surface_for(
    session: &Session,
    target: Option<&RequestTarget>,
    expansions: &[Arc<dyn CheckpointExpansion>],
) -> Result<Vec<Message>, HarnessError> {
    let destination = target.and_then(|t| {
        Some(Destination {
            dialect: t.native_dialect.as_deref()?,
            account: t.native_account.as_deref()?,
        })
    });
    let mut out = Vec::with_capacity(session.surface().len());
    for seq in session.surface().seqs() {
        let Some(message) = session.message(*seq) else {
            continue;
        };
        let at = SurfaceMessage {
            session,
            seq: *seq,
            message: message.as_ref(),
        };
        let mut expanded = None;
        for expansion in expansions {
            expanded = expansion
                .expand(at, destination)
                .map_err(|e| HarnessError::Frames {
                    seq: *seq,
                    reason: e.reason,
                })?;
            if expanded.is_some() {
                break;
            }
        }
        out.push(expanded.unwrap_or_else(|| message.as_ref().clone()));
    }
    Ok(out)
}

/// Leaves out reasoning the target cannot or will not read (see
/// [`abridge_llm::keep_readable_thinking`]): thinking another provider or
/// model wrote, earlier turns' thinking for a model that drops it, and
/// thinking behind a changed message (a checkpoint, a pruned result) for
/// a model that checks prefixes. `written` holds each message's surface
/// seq.
fn keep_thinking_for(messages: &mut Vec<Message>, written: &[Seq], target: &RequestTarget) {
    let reader = ThinkingReader {
        provider: target.provider.as_deref(),
        model: target.model.as_deref(),
        current_turn_only: target.prior_thinking == PriorThinking::Dropped,
        prefix_bound: target.prior_thinking == PriorThinking::Kept,
    };
    abridge_llm::keep_readable_thinking(messages, written, &reader);
}

/// Every tool call gets its result right after the assistant message that
/// made it, and every result keeps its call: a result separated from its
/// call (a user message between them) moves up to it, a result with no
/// earlier call (its call was compacted away) is left out, and a call
/// with no result gets one saying the outcome is unknown. Results keep
/// their order; the made-up ones follow.
fn pair_tool_calls(messages: &mut Vec<Message>) {
    let mut caller: HashMap<String, usize> = HashMap::new();
    for (index, message) in messages.iter().enumerate() {
        for (id, _, _) in message.tool_calls() {
            caller.entry(id.to_string()).or_insert(index);
        }
    }
    // Each result goes to the earlier assistant message that made its
    // call; a second result for the same call, or one with no earlier
    // call, goes nowhere.
    let mut placed: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut answered: HashSet<String> = HashSet::new();
    for (index, message) in messages.iter().enumerate() {
        if let Some((id, _, _)) = message.tool_result_block()
            && let Some(&at) = caller.get(id)
            && at < index
            && answered.insert(id.to_string())
        {
            placed.entry(at).or_default().push(index);
        }
    }
    let mut slots: Vec<Option<Message>> = std::mem::take(messages).into_iter().map(Some).collect();
    for index in 0..slots.len() {
        let Some(message) = slots[index].take() else {
            continue;
        };
        if message.tool_result_block().is_some() {
            continue;
        }
        let calls: Vec<String> = message
            .tool_calls()
            .map(|(id, _, _)| id.to_string())
            .collect();
        messages.push(message);
        for result in placed.remove(&index).unwrap_or_default() {
            if let Some(result) = slots[result].take() {
                messages.push(result);
            }
        }
        for id in calls.into_iter().filter(|id| !answered.contains(id)) {
            messages.push(Message::tool_result(id, UNKNOWN_OUTCOME, true));
        }
    }
}

#[cfg(test)]
mod tests {
    use abridge_llm::Block;
    use abridge_llm::Meta;
    use abridge_llm::Origin;
    use abridge_llm::Role;
    use serde_json::json;

    use super::*;

    fn from(provider: &str, content: Vec<Block>) -> Message {
        from_model(provider, "m", content)
    }

    fn from_model(provider: &str, model: &str, content: Vec<Block>) -> Message {
        let mut message = Message::assistant("");
        message.content = content;
        message.with_meta(Meta {
            origin: Some(Origin::Model {
                provider: provider.to_string(),
                model: model.to_string(),
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
            model: Some("m".to_string()),
            prior_thinking: prior,
            ..RequestTarget::default()
        }
    }

    /// Seqs in surface order, nothing changed.
    fn appended(messages: &[Message]) -> Vec<Seq> {
        (0..messages.len() as Seq).collect()
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
        let written = appended(&messages);
        let mut dropped = messages.clone();
        keep_thinking_for(
            &mut dropped,
            &written,
            &target("anthropic", PriorThinking::Dropped),
        );
        let texts: Vec<String> = dropped.iter().map(|m| format!("{:?}", m.content)).collect();
        assert_eq!(
            dropped.len(),
            4,
            "the foreign-only message goes: {texts:#?}"
        );
        assert!(!texts[1].contains("old"));
        assert!(texts[3].contains("new"));

        let mut kept = messages.clone();
        keep_thinking_for(
            &mut kept,
            &written,
            &target("anthropic", PriorThinking::Kept),
        );
        assert!(format!("{:?}", kept[1].content).contains("old"));
        assert_eq!(kept.len(), 4);

        let mut unknown = messages;
        keep_thinking_for(&mut unknown, &written, &RequestTarget::default());
        assert_eq!(unknown.len(), 5);
    }

    /// Issue 29, item 5: a signature is bound to the model that wrote it;
    /// after a switch of model on the same provider, the earlier model's
    /// thinking stays home (its text goes).
    #[test]
    fn thinking_goes_only_to_the_model_that_wrote_it() {
        let messages = vec![
            Message::user("q"),
            from_model(
                "anthropic",
                "claude-sonnet-4-5-20250929",
                vec![thinking("sonnet"), Block::text("a")],
            ),
            Message::user("q2"),
        ];
        let written = appended(&messages);
        let to = |model: &str| RequestTarget {
            model: Some(model.to_string()),
            ..target("anthropic", PriorThinking::Kept)
        };
        let mut other = messages.clone();
        keep_thinking_for(&mut other, &written, &to("claude-opus-4-6"));
        assert_eq!(other[1].content, vec![Block::text("a")]);
        let mut same = messages;
        keep_thinking_for(&mut same, &written, &to("claude-sonnet-4-5"));
        assert!(same[1].content.iter().any(abridge_llm::is_thinking));
    }

    /// Issue 29, item 5: for a model that checks prefixes, thinking written
    /// before a checkpoint replaced earlier history (the checkpoint's seq
    /// is later than the kept message's) is left out.
    #[test]
    fn thinking_behind_a_checkpoint_is_left_out_for_prefix_checked_models() {
        let messages = vec![
            Message::user("[checkpoint]"),
            from("anthropic", vec![thinking("kept turn"), Block::text("a")]),
            Message::user("q"),
            from("anthropic", vec![thinking("after"), Block::text("b")]),
        ];
        // The checkpoint (seq 20) was appended after the kept turn (seq 7).
        let written = [20, 7, 21, 22];
        let mut bound = messages;
        keep_thinking_for(
            &mut bound,
            &written,
            &target("anthropic", PriorThinking::Kept),
        );
        assert_eq!(bound[1].content, vec![Block::text("a")]);
        assert!(bound[3].content.iter().any(abridge_llm::is_thinking));
    }

    fn call(ids: &[&str]) -> Message {
        let mut call = Message::assistant("");
        call.content = ids
            .iter()
            .map(|id| Block::ToolCall {
                id: (*id).into(),
                name: "read".into(),
                arguments: json!({}),
            })
            .collect();
        call
    }

    fn shape(messages: &[Message]) -> Vec<String> {
        messages
            .iter()
            .map(|m| match m.tool_result_block() {
                Some((id, _, true)) => format!("result {id} (error)"),
                Some((id, _, false)) => format!("result {id}"),
                None if m.role == Role::Assistant => format!(
                    "call {}",
                    m.tool_calls()
                        .map(|(id, _, _)| id)
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                None => m.plain_text(),
            })
            .collect()
    }

    #[test]
    fn calls_get_results_and_orphan_results_go() {
        let mut messages = vec![
            Message::tool_result("gone", "its call was compacted", false),
            Message::user("go"),
            call(&["a", "b"]),
            Message::tool_result("a", "ok", false),
            Message::user("next"),
        ];
        pair_tool_calls(&mut messages);
        assert_eq!(
            shape(&messages),
            vec!["go", "call a,b", "result a", "result b (error)", "next"]
        );
        let (_, content, is_error) = messages[3].tool_result_block().unwrap();
        assert!(is_error);
        assert_eq!(content, [Block::text(UNKNOWN_OUTCOME)]);
    }

    /// Issue 29, item 3: a user message between a call and its result
    /// (steering typed while the tool ran). Anthropic wants the turn after
    /// a `tool_use` to open with its `tool_result`, Chat wants `tool`
    /// messages right after their call: the real result moves up to its
    /// call, and no made-up one is added beside it.
    #[test]
    fn a_result_separated_from_its_call_moves_up_to_it() {
        let mut messages = vec![
            Message::user("fix it"),
            call(&["a"]),
            Message::user("steering: use the other file"),
            Message::tool_result("a", "file contents", false),
        ];
        pair_tool_calls(&mut messages);
        assert_eq!(
            shape(&messages),
            vec![
                "fix it",
                "call a",
                "result a",
                "steering: use the other file"
            ]
        );
    }
}
