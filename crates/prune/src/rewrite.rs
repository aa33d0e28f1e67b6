//! Building `rewrite` events, and taking them back.

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_session::Draft;
use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::SurfaceOp;

use crate::report::RewriteNote;
use crate::report::Rule;
use crate::scan::Item;
use abridge_compact::Rewrite;
use abridge_compact::TokenCounter;

/// The tool message `item` with its result content replaced: same role,
/// call id, error flag and metadata, so pairing and provenance survive.
pub(crate) fn with_content(item: &Item, content: Vec<Block>) -> Message {
    let mut message = (*item.message).clone();
    for block in &mut message.content {
        if let Block::ToolResult {
            content: old_content,
            ..
        } = block
        {
            *old_content = content;
            break;
        }
    }
    message
}

/// A rewrite of `item` to `message`, with its note; `None` when it would
/// not make the result cheaper.
pub(crate) fn rewrite(
    item: &Item,
    message: Message,
    rule: Rule,
    counter: &dyn TokenCounter,
) -> Option<(Rewrite, RewriteNote)> {
    let tokens_after = counter.message_tokens(&message);
    if tokens_after >= item.tokens {
        return None;
    }
    let tool = item.tool.as_ref()?;
    let note = RewriteNote {
        target: item.seq,
        call_id: tool.call_id.clone(),
        tool: tool.name.clone(),
        rule,
        tokens_before: item.tokens,
        tokens_after,
    };
    Some((
        Rewrite {
            target: item.seq,
            message,
        },
        note,
    ))
}

/// The seq of the original message behind a visible seq: follows rewrite
/// events back to the first event that was not a rewrite.
pub fn original_of(session: &Session, seq: Seq) -> Seq {
    let mut current = seq;
    // Each rewrite points to an earlier seq, so the walk ends; the bound
    // guards a malformed log all the same.
    for _ in 0..session.len() {
        match session.event(current).and_then(|e| e.message_event()) {
            Some(event) => match event.op {
                SurfaceOp::Rewrite { target } => current = target,
                _ => break,
            },
            None => break,
        }
    }
    current
}

/// A rewrite that makes the original content of the visible tool result
/// `seq` visible again, or `None` when `seq` is not a visible rewrite.
///
/// Restoring appends a new event (the log stays append-only); the
/// restored message is the original one, byte for byte.
pub fn restore(session: &Session, seq: Seq) -> Option<Draft> {
    if !session.surface().contains(seq) {
        return None;
    }
    let original = original_of(session, seq);
    if original == seq {
        return None;
    }
    let message = session.message(original)?;
    Some(Draft::rewrite((**message).clone(), seq))
}
