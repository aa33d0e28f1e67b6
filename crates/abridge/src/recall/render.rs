//! The text of one logged message as recall shows it: the one definition
//! that search indexes, `recall://SEQ#START-END` counts characters in, and
//! reads return.

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_session::Event;
use abridge_session::EventBody;
use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::SurfaceOp;

/// How far back along the parent chain a tool result's call is looked for
/// when the result does not name its tool.
const CALL_SEARCH_STEPS: usize = 256;

/// The message's text: text and reasoning verbatim, tool calls as
/// `[call NAME ARGS]`, tool results by their content, images as
/// `[image WxH, recall://SEQ]` (never inlined), pieces joined by newlines.
///
/// A message of text blocks only gives exactly what
/// [`Message::plain_text`] gives.
pub fn message_text(seq: Seq, message: &Message) -> String {
    let mut out = String::new();
    push_blocks(seq, &message.content, &mut out);
    out
}

fn push_blocks(seq: Seq, blocks: &[Block], out: &mut String) {
    for block in blocks {
        let piece = match block {
            Block::Text { text } => text.clone(),
            Block::Thinking { thinking, .. } => thinking.clone(),
            Block::RedactedThinking { .. } => "[redacted reasoning]".to_string(),
            Block::Native { provider, .. } => format!("[{provider} compaction item]"),
            Block::Image { width, height, .. } => match (width, height) {
                (Some(w), Some(h)) => format!("[image {w}x{h}, recall://{seq}]"),
                _ => format!("[image, recall://{seq}]"),
            },
            Block::ToolCall {
                name, arguments, ..
            } => format!("[call {name} {arguments}]"),
            Block::ToolResult { content, .. } => {
                push_blocks(seq, content, out);
                continue;
            }
        };
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&piece);
    }
}

/// The name of the tool whose result `seq` is: from the message's origin,
/// else from the matching call found along its parent chain.
pub(super) fn tool_name(session: &Session, seq: Seq) -> Option<String> {
    let event = session.event(seq)?;
    let message = event.message()?;
    if let Some(Origin::Tool { name, .. }) = &message.meta.origin {
        return Some(name.clone());
    }
    let (call_id, _, _) = message.tool_result_block()?;
    let mut parent = event.parent;
    for _ in 0..CALL_SEARCH_STEPS {
        let earlier = session.event(parent?)?;
        if let Some(m) = earlier.message()
            && let Some((_, name, _)) = m.tool_calls().find(|(id, _, _)| *id == call_id)
        {
            return Some(name.to_string());
        }
        parent = earlier.parent;
    }
    None
}

/// Who speaks, for headers: `user`, `assistant`, `tool result of NAME`,
/// `checkpoint (METHOD)`.
pub(super) fn speaker(session: &Session, event: &Event) -> String {
    let Some(message) = event.message() else {
        return event.body.kind().to_string();
    };
    if let EventBody::Message(m) = &event.body
        && matches!(m.op, SurfaceOp::Replace { .. })
    {
        return match &message.meta.origin {
            Some(Origin::Checkpoint { method, .. }) => format!("checkpoint ({method})"),
            _ => "checkpoint".to_string(),
        };
    }
    if message.role == Role::Tool {
        return match tool_name(session, event.seq) {
            Some(name) => format!("tool result of {name}"),
            None => "tool result".to_string(),
        };
    }
    message.role.as_str().to_string()
}

/// Whether `seq` is the result of a call to the recall tool itself: such
/// results are not indexed and are shown by reference in transcripts, so
/// reading back and compacting again never nests old reads inside new
/// ones.
pub(super) fn is_recall_result(session: &Session, seq: Seq) -> bool {
    session
        .event(seq)
        .and_then(|e| e.message())
        .is_some_and(|m| m.role == Role::Tool)
        && tool_name(session, seq).as_deref() == Some(abridge_prune::RECALL_TOOL)
}

/// Clips `text` to at most `max` characters on one line, with `…` when cut.
pub(super) fn clip_line(text: &str, max: usize) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut out: String = flat.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_messages_read_as_their_plain_text() {
        let message = Message::user("line one\nline two");
        assert_eq!(message_text(3, &message), message.plain_text());
        let call = Message::tool_call("c1", "read_file", serde_json::json!({"path": "a.rs"}));
        assert_eq!(
            message_text(4, &call),
            "[call read_file {\"path\":\"a.rs\"}]"
        );
    }

    #[test]
    fn tool_results_name_their_call() {
        let mut session = Session::in_memory("t");
        session
            .append_message(Message::tool_call("c1", "grep", serde_json::json!({})))
            .unwrap();
        let result = session
            .append_message(Message::tool_result("c1", "hit", false))
            .unwrap();
        assert_eq!(tool_name(&session, result).as_deref(), Some("grep"));
        let event = session.event(result).unwrap().clone();
        assert_eq!(speaker(&session, &event), "tool result of grep");
        assert_eq!(clip_line("a  b\nc", 10), "a b c");
        assert_eq!(clip_line("abcdef", 4), "abc…");
    }
}
