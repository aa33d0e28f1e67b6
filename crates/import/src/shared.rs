//! Messages made shared once their content is final, without the spare
//! room their block lists grew with.
//!
//! A list that grows by pushes starts with room for four blocks, and most
//! imported messages hold one: on a session of many short messages that
//! spare room was the largest single cost of an import. Every message a
//! [`Builder`](crate::builder::Builder) writes passes through here.

use std::sync::Arc;

use abridge_llm::Block;
use abridge_llm::Message;

/// `message` behind an `Arc`, its block lists (nested results too) cut to
/// their length.
pub(crate) fn shared(mut message: Message) -> Arc<Message> {
    fit(&mut message.content);
    Arc::new(message)
}

/// Cuts `blocks`, and the content of every tool result in it, to length.
pub(crate) fn fit(blocks: &mut Vec<Block>) {
    blocks.shrink_to_fit();
    for block in blocks {
        if let Block::ToolResult { content, .. } = block {
            fit(content);
        }
    }
}
