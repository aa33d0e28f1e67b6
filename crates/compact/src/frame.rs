//! Checkpoint framing: how a checkpoint reads to the model.
//!
//! A checkpoint is a user-role message (every provider accepts one there),
//! so it must say plainly that it is a record of earlier work and not a new
//! request; models otherwise act on summarized instructions a second time.
//! Every committed checkpoint is framed here, whatever method wrote it.

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Origin;
use abridge_llm::Role;

/// Opening text of every checkpoint (prompts/checkpoint_open.md).
pub const CHECKPOINT_OPENING: &str = include_str!("../../../prompts/checkpoint_open.md");
/// Closing text of every checkpoint (prompts/checkpoint_close.md).
pub const CHECKPOINT_CLOSING: &str = include_str!("../../../prompts/checkpoint_close.md");

/// Wraps a method's content blocks in the checkpoint framing: the opening
/// as the first text block, the content, the preserved notes, the closing
/// as the last text block. Role user, origin checkpoint.
pub fn frame_checkpoint(
    compaction_id: &str,
    method: &str,
    content: Vec<Block>,
    preserve: &[String],
) -> Message {
    let mut blocks = Vec::with_capacity(content.len() + 3);
    blocks.push(Block::text(CHECKPOINT_OPENING.trim_end()));
    blocks.extend(content);
    if !preserve.is_empty() {
        let mut text = String::from("<preserved>\n");
        for note in preserve {
            text.push_str(note.trim_end());
            text.push('\n');
        }
        text.push_str("</preserved>");
        blocks.push(Block::text(text));
    }
    blocks.push(Block::text(CHECKPOINT_CLOSING.trim_end()));
    Message {
        role: Role::User,
        content: blocks,
        meta: Meta {
            origin: Some(Origin::Checkpoint {
                compaction_id: compaction_id.to_string(),
                method: method.to_string(),
            }),
            ..Meta::default()
        },
    }
}

/// True when `message` carries the checkpoint framing.
pub fn is_checkpoint(message: &Message) -> bool {
    message.role == Role::User
        && message
            .content
            .first()
            .and_then(Block::as_text)
            .is_some_and(|t| t == CHECKPOINT_OPENING.trim_end())
        && message
            .content
            .last()
            .and_then(Block::as_text)
            .is_some_and(|t| t == CHECKPOINT_CLOSING.trim_end())
}

/// The text of a checkpoint without its framing (or all the text of any
/// other message).
pub fn checkpoint_body(message: &Message) -> String {
    let blocks: &[Block] = if is_checkpoint(message) {
        &message.content[1..message.content.len() - 1]
    } else {
        &message.content
    };
    blocks
        .iter()
        .filter_map(Block::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_round_trips() {
        let message = frame_checkpoint("c1", "digest", vec![Block::text("## Goal\nship")], &[]);
        assert!(is_checkpoint(&message));
        assert_eq!(checkpoint_body(&message), "## Goal\nship");
        assert!(!is_checkpoint(&Message::user(CHECKPOINT_OPENING)));
        assert!(CHECKPOINT_OPENING.contains("not a new message from the user"));
    }
}
