//! What of a model's own output may be sent back, and to whom.
//!
//! Reasoning a provider returns is bound to what produced it: an
//! Anthropic thinking signature to the model that wrote it (a model reads
//! another's thinking only where the two are declared compatible), an
//! OpenAI reasoning item to its model's line. Sent to another model it is
//! rejected or silently dropped by the provider. This module is the one
//! place that says which thinking a reader may receive, so the request
//! builder and a native compaction request apply the same rule.

use crate::message::Block;
use crate::message::Message;
use crate::message::Origin;
use crate::message::Role;

/// Whether model ids `a` and `b` name the same model: equal once
/// normalized (lower case, `.` and `_` read as `-`, a gateway's
/// `vendor/` path and `@date` or `:tag` suffix dropped), or one the
/// other with a snapshot date (`claude-sonnet-4-5` and
/// `claude-sonnet-4-5-20250929`; `gpt-5` and `gpt-5-2025-08-07`) or
/// `-latest` after it. An alias and its dated snapshot answer as the same
/// model; two versions of a line do not.
pub fn same_model(a: &str, b: &str) -> bool {
    let (a, b) = (undated(a), undated(b));
    !a.is_empty() && a == b
}

/// The normalized id without its snapshot suffix.
fn undated(id: &str) -> String {
    let lower = id.trim().to_ascii_lowercase();
    let mut last = lower.rsplit('/').next().unwrap_or("").to_string();
    if let Some(at) = last.find(['@', ':']) {
        last.truncate(at);
    }
    let normalized: String = last
        .chars()
        .map(|c| if matches!(c, '.' | '_') { '-' } else { c })
        .collect();
    let mut parts: Vec<&str> = normalized.split('-').collect();
    let mut suffix = snapshot_suffix(&parts);
    while suffix > 0 {
        parts.truncate(parts.len() - suffix);
        suffix = snapshot_suffix(&parts);
    }
    parts.join("-")
}

/// How many trailing parts of an id name a snapshot: `20250929` and
/// `latest` one, `2025-08-07` three; 0 when the id ends otherwise.
fn snapshot_suffix(parts: &[&str]) -> usize {
    let digits =
        |part: &str, len: usize| part.len() == len && part.bytes().all(|b| b.is_ascii_digit());
    match parts {
        [.., last] if parts.len() > 1 && (*last == "latest" || digits(last, 8)) => 1,
        [.., year, month, day]
            if parts.len() > 3 && digits(year, 4) && digits(month, 2) && digits(day, 2) =>
        {
            3
        }
        _ => 0,
    }
}

/// Whether the thinking in `message` may go to `model` at `provider`: an
/// assistant message written by that provider (by client name) and that
/// model (see [`same_model`]). A message of unknown origin keeps nothing.
pub fn thinking_readable_by(message: &Message, provider: &str, model: &str) -> bool {
    match &message.meta.origin {
        Some(Origin::Model {
            provider: wrote,
            model: by,
        }) => wrote == provider && same_model(by, model),
        _ => false,
    }
}

/// Whether `block` is reasoning (thinking or redacted thinking).
pub fn is_thinking(block: &Block) -> bool {
    matches!(
        block,
        Block::Thinking { .. } | Block::RedactedThinking { .. }
    )
}

/// Who a request's thinking goes to, and which of it that reader keeps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThinkingReader<'a> {
    /// The client's provider name; `None` keeps thinking whatever wrote
    /// it (the reader is not known).
    pub provider: Option<&'a str>,
    /// The model the request goes to; `None` checks the provider only.
    pub model: Option<&'a str>,
    /// The model reads only the current turn's thinking (after the last
    /// user message); earlier turns' is left out.
    pub current_turn_only: bool,
    /// The model checks each block's prefix (preserved thinking): a block
    /// after a message that changed since it was written is rejected, so
    /// it is left out.
    pub prefix_bound: bool,
}

/// Leaves out the thinking `reader` cannot read: written by another
/// provider or model ([`thinking_readable_by`]), from an earlier turn when
/// it reads only the current one, and, when it checks prefixes, every
/// block after a message that changed since the block was written. A
/// message left with nothing goes too.
///
/// `written[i]` is when `messages[i]` took its current content, as the
/// log's seq: an assistant message's thinking was written at its own seq
/// with every earlier message already as it was then, so a message before
/// it with a later seq (a checkpoint, a rewritten tool result) means its
/// prefix changed. Messages past the end of `written` count as unchanged.
pub fn keep_readable_thinking(
    messages: &mut Vec<Message>,
    written: &[u64],
    reader: &ThinkingReader<'_>,
) {
    let turn_start = messages
        .iter()
        .rposition(|m| m.role == Role::User)
        .unwrap_or(0);
    let mut latest_before = 0_u64;
    let mut changed_before = Vec::with_capacity(messages.len());
    for (index, _) in messages.iter().enumerate() {
        let seq = written.get(index).copied();
        changed_before.push(seq.is_some_and(|seq| latest_before > seq));
        if let Some(seq) = seq {
            latest_before = latest_before.max(seq);
        }
    }
    let mut index = 0;
    messages.retain_mut(|message| {
        let position = index;
        index += 1;
        if message.role != Role::Assistant || !message.content.iter().any(is_thinking) {
            return true;
        }
        let own = match (reader.provider, reader.model) {
            (None, _) => true,
            (Some(provider), Some(model)) => thinking_readable_by(message, provider, model),
            (Some(provider), None) => matches!(&message.meta.origin,
                Some(Origin::Model { provider: wrote, .. }) if wrote == provider),
        };
        let in_turn = !reader.current_turn_only || position > turn_start;
        let prefix_kept = !reader.prefix_bound || !changed_before[position];
        if own && in_turn && prefix_kept {
            return true;
        }
        message.content.retain(|b| !is_thinking(b));
        !message.content.is_empty()
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Meta;

    #[test]
    fn an_alias_and_its_snapshot_are_one_model_and_versions_are_not() {
        for (a, b) in [
            ("claude-sonnet-4-5", "claude-sonnet-4-5-20250929"),
            ("claude-sonnet-4.5", "anthropic/claude-sonnet-4-5@20250929"),
            ("gpt-5", "gpt-5-2025-08-07"),
            ("claude-3-7-sonnet-latest", "claude-3-7-sonnet-20250219"),
            ("o3", "O3"),
        ] {
            assert!(same_model(a, b), "{a} {b}");
        }
        for (a, b) in [
            ("claude-sonnet-4-5", "claude-sonnet-4-6"),
            ("claude-opus-4", "claude-opus-4-6"),
            ("gpt-5", "gpt-5-mini"),
            ("gpt-5", "gpt-5.1"),
            ("", ""),
        ] {
            assert!(!same_model(a, b), "{a} {b}");
        }
    }

    #[test]
    fn thinking_is_readable_only_by_its_provider_and_model() {
        let message = Message::assistant("x").with_meta(Meta {
            origin: Some(Origin::Model {
                provider: "anthropic".into(),
                model: "claude-opus-4-6-20260205".into(),
            }),
            ..Meta::default()
        });
        assert!(thinking_readable_by(
            &message,
            "anthropic",
            "claude-opus-4-6"
        ));
        assert!(!thinking_readable_by(
            &message,
            "anthropic",
            "claude-opus-4-5"
        ));
        assert!(!thinking_readable_by(
            &message,
            "openai-responses",
            "claude-opus-4-6"
        ));
        assert!(!thinking_readable_by(
            &Message::assistant("x"),
            "anthropic",
            "claude-opus-4-6"
        ));
    }

    fn thinking_by(model: &str) -> Message {
        let mut message = Message::assistant("answer");
        message.content.insert(
            0,
            Block::Thinking {
                thinking: "why".into(),
                signature: Some("sig".into()),
            },
        );
        message.with_meta(Meta {
            origin: Some(Origin::Model {
                provider: "anthropic".into(),
                model: model.into(),
            }),
            ..Meta::default()
        })
    }

    fn kept(messages: &[Message]) -> Vec<bool> {
        messages
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .map(|m| m.content.iter().any(is_thinking))
            .collect()
    }

    /// A block written before a later change in front of it (seq 9 at
    /// position 1, a checkpoint) is left out under prefix checks; one
    /// written after the change stays.
    #[test]
    fn prefix_bound_readers_lose_thinking_behind_a_change() {
        let model = "claude-fable-5-1";
        let messages = vec![
            Message::user("q1"),
            Message::user("checkpoint"),
            thinking_by(model),
            Message::user("q2"),
            thinking_by(model),
        ];
        let written = [0, 9, 4, 10, 11];
        let reader = ThinkingReader {
            provider: Some("anthropic"),
            model: Some(model),
            current_turn_only: false,
            prefix_bound: true,
        };
        let mut bound = messages.clone();
        keep_readable_thinking(&mut bound, &written, &reader);
        assert_eq!(kept(&bound), vec![false, true]);
        let mut free = messages;
        keep_readable_thinking(
            &mut free,
            &written,
            &ThinkingReader {
                prefix_bound: false,
                ..reader
            },
        );
        assert_eq!(kept(&free), vec![true, true]);
    }
}
