//! History flattened to text, for summarizers and digests.

use std::collections::HashMap;

use abridge_compact::host::checkpoint_body;
use abridge_compact::host::is_checkpoint;
use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_llm::Message;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_llm::SharedMessage;

/// Characters of one tool result kept in a transcript (head and tail);
/// the middle is replaced by an elision note. Tool output is the bulk of
/// agent history and the part a summary needs least verbatim.
pub(crate) const TOOL_RESULT_CHARS: usize = 2_000;
/// Characters of one tool call's arguments kept in a transcript.
pub(crate) const TOOL_ARGUMENT_CHARS: usize = 600;

/// `text` cut to at most `max` characters, keeping the head and the tail
/// around a note saying how much was left out.
pub(crate) fn head_tail(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max * 2 / 3).collect();
    let tail_len = max / 3;
    let tail: String = text.chars().skip(count - tail_len).collect();
    format!(
        "{head}\n[... {} characters left out ...]\n{tail}",
        count - head.chars().count() - tail_len
    )
}

/// `text` cut to at most `max` characters at the end, with an ellipsis.
pub(crate) fn clip(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The visible text of a message's text blocks (no thinking, no tool
/// payloads), joined by newlines.
pub(crate) fn visible_text(message: &Message) -> String {
    message
        .content
        .iter()
        .filter_map(Block::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Who put a user message into the conversation when the user did not
/// write it: the host's harness (`Origin::Injected`: environment details,
/// reminders, notifications, command output), an extension
/// (`Origin::Plugin`) or a branch summary. Such a message is context for
/// the model, never a request: digests skip it when looking for the goal,
/// and transcripts label it so a summarizer does not report it as one.
/// `None` for everything else.
pub(crate) fn context_label(message: &Message) -> Option<String> {
    if message.role != Role::User {
        return None;
    }
    match &message.meta.origin {
        Some(Origin::Injected { source }) => Some(source.clone()),
        Some(Origin::Plugin { name }) => Some(format!("extension {name}")),
        Some(Origin::BranchSummary) => Some("branch summary".to_string()),
        _ => None,
    }
}

/// Tool names by call id, for labelling results.
pub(crate) fn tool_names(messages: &[SharedMessage]) -> HashMap<String, String> {
    let mut names = HashMap::new();
    for message in messages {
        for (id, name, _) in message.tool_calls() {
            names.insert(id.to_string(), name.to_string());
        }
    }
    names
}

/// Flattens `messages` into a plain transcript: one labelled section per
/// message, tool calls as `-> name(arguments)`, tool results cut to
/// [`TOOL_RESULT_CHARS`], images as placeholders, thinking left out. A user
/// message the user did not write is labelled `[context: what put it
/// there]` instead of `[user]`.
pub(crate) fn render_transcript(messages: &[SharedMessage]) -> String {
    let names = tool_names(messages);
    let mut out = String::new();
    for message in messages {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        render_message(message, &names, &mut out);
    }
    out
}

fn render_message(message: &Message, names: &HashMap<String, String>, out: &mut String) {
    if is_checkpoint(message) {
        out.push_str("[earlier checkpoint]\n");
        out.push_str(&checkpoint_body(message));
        return;
    }
    match message.role {
        Role::Tool => {
            let Some((id, content, is_error)) = message.tool_result_block() else {
                out.push_str("[tool result]");
                return;
            };
            let name = match &message.meta.origin {
                Some(Origin::Tool { name, .. }) => name.as_str(),
                _ => names.get(id).map_or("tool", String::as_str),
            };
            let status = if is_error { "error" } else { "ok" };
            out.push_str(&format!("[{name} result, {status}]\n"));
            let mut text = String::new();
            render_blocks(content, &mut text);
            out.push_str(&head_tail(text.trim(), TOOL_RESULT_CHARS));
        }
        role => {
            match context_label(message) {
                Some(label) => out.push_str(&format!("[context: {label}]\n")),
                None => out.push_str(&format!("[{role}]\n")),
            }
            let mut text = String::new();
            render_blocks(&message.content, &mut text);
            out.push_str(text.trim());
        }
    }
}

fn render_blocks(blocks: &[Block], out: &mut String) {
    for block in blocks {
        let piece = match block {
            Block::Text { text } => text.clone(),
            Block::Thinking { .. } | Block::RedactedThinking { .. } | Block::Native { .. } => {
                continue;
            }
            Block::Image {
                source,
                width,
                height,
            } => {
                let size = match (width, height) {
                    (Some(w), Some(h)) => format!(" {w}x{h}"),
                    _ => String::new(),
                };
                let kind = match source {
                    ImageSource::Url { .. } => "linked image",
                    _ => "image",
                };
                format!("[{kind}{size}]")
            }
            Block::ToolCall {
                name, arguments, ..
            } => {
                let arguments = match arguments {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                format!("-> {name}({})", clip(&arguments, TOOL_ARGUMENT_CHARS))
            }
            Block::ToolResult { content, .. } => {
                let mut nested = String::new();
                render_blocks(content, &mut nested);
                nested
            }
        };
        if !out.is_empty() && !piece.is_empty() {
            out.push('\n');
        }
        out.push_str(&piece);
    }
}

/// Strips harness noise from a user message: system reminders and
/// similar injected blocks. `None` when nothing of the user's own is left,
/// or when the whole message is context the user did not write
/// ([`context_label`]): the goal is the first thing the user asked.
pub(crate) fn user_request_text(message: &SharedMessage) -> Option<String> {
    if message.role != Role::User || is_checkpoint(message) || context_label(message).is_some() {
        return None;
    }
    let mut text = visible_text(message);
    for tag in [
        "system-reminder",
        "local-command-stdout",
        "local-command-stderr",
        "command-message",
    ] {
        let open = format!("<{tag}>");
        let close = format!("</{tag}>");
        while let Some(start) = text.find(&open) {
            let end = text[start..]
                .find(&close)
                .map_or(text.len(), |e| start + e + close.len());
            text.replace_range(start..end, "");
        }
    }
    let text = text.trim();
    if text.is_empty() || text.starts_with("Caveat: The messages below were generated") {
        return None;
    }
    // A bare slash command (`/model`, `/theme`) drives the harness, not
    // the task.
    if text.starts_with('/') && !text.contains(char::is_whitespace) {
        return None;
    }
    Some(text.split_whitespace().collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn head_tail_keeps_both_ends() {
        let text = "a".repeat(50) + &"b".repeat(50);
        let cut = head_tail(&text, 30);
        assert!(cut.starts_with(&"a".repeat(20)));
        assert!(cut.ends_with(&"b".repeat(10)));
        assert!(cut.contains("[... 70 characters left out ...]"));
        assert_eq!(clip("héllo world", 5), "héll…");
    }

    /// Issue 16, point 4: text a harness injected as a user message is
    /// shown to the summarizer as context, not as the user speaking.
    #[test]
    fn injected_user_messages_are_labelled_as_context() {
        let injected = Message::user("<environment_context>cwd</environment_context>").with_meta(
            abridge_llm::Meta {
                origin: Some(Origin::Injected {
                    source: "environment_context".into(),
                }),
                ..Default::default()
            },
        );
        let messages: Vec<SharedMessage> =
            vec![Arc::new(injected), Arc::new(Message::user("fix a.rs"))];
        assert_eq!(
            render_transcript(&messages),
            "[context: environment_context]\n<environment_context>cwd</environment_context>\n\n[user]\nfix a.rs"
        );
    }

    #[test]
    fn transcript_labels_roles_calls_and_results() {
        let call = Message {
            role: Role::Assistant,
            content: vec![
                Block::Thinking {
                    thinking: "secret".into(),
                    signature: None,
                },
                Block::text("Reading it."),
                Block::ToolCall {
                    id: "c1".into(),
                    name: "read".into(),
                    arguments: serde_json::json!({"path": "a.rs"}),
                },
            ],
            meta: Default::default(),
        };
        let messages: Vec<SharedMessage> = vec![
            Arc::new(Message::user("fix a.rs")),
            Arc::new(call),
            Arc::new(Message::tool_result("c1", "fn main() {}", false)),
        ];
        assert_eq!(
            render_transcript(&messages),
            "[user]\nfix a.rs\n\n[assistant]\nReading it.\n-> read({\"path\":\"a.rs\"})\n\n[read result, ok]\nfn main() {}"
        );
    }
}
