//! Builders for the message shapes tests need most. Single messages are
//! the vocabulary's own constructors (`Message::user`, `Message::tool_call`,
//! `Message::tool_result`); what lives here are the multi-message shapes.

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Role;
use serde_json::json;

/// An assistant message making several tool calls at once (`ids`), each a
/// `read` of its own file, after `text`.
pub fn parallel_calls(text: &str, ids: &[String]) -> Message {
    let mut content = vec![Block::text(text)];
    content.extend(ids.iter().map(|id| Block::ToolCall {
        id: id.clone(),
        name: "read".to_string(),
        arguments: json!({ "path": format!("src/{id}.rs") }),
    }));
    Message {
        role: Role::Assistant,
        content,
        meta: Default::default(),
    }
}
