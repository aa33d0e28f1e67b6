//! Builders for the message shapes tests need most. Single messages are
//! the vocabulary's own constructors (`Message::user`, `Message::tool_call`,
//! `Message::tool_result`); what lives here are the multi-message shapes.

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Role;
use abridge_session::Session;
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

/// A session of `turns` turns, each a user request, a `read` call and its
/// result of `result_bytes` bytes: history with tool pairs to plan around.
pub fn session_with_reads(id: &str, turns: usize, result_bytes: usize) -> Session {
    let mut session = Session::in_memory(id);
    for turn in 0..turns {
        let call = format!("c{turn}");
        session
            .append_message(Message::user(format!("request {turn}")))
            .expect("append a request");
        session
            .append_message(Message::tool_call(
                call.clone(),
                "read",
                json!({ "path": format!("src/f{turn}.rs") }),
            ))
            .expect("append a call");
        session
            .append_message(Message::tool_result(call, "x".repeat(result_bytes), false))
            .expect("append a result");
    }
    session
}
