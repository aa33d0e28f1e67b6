//! Checkpoint framing: how a checkpoint reads to the model.
//!
//! A checkpoint is a user-role message (every provider accepts one there),
//! so it must say plainly that it is a record of earlier work and not a new
//! request; models otherwise act on summarized instructions a second time.
//! Every committed checkpoint is framed here, whatever method wrote it.
//!
//! The framing also names what the checkpoint hides, once, as a recall
//! reference over the hidden seqs (`recall://FIRST-LAST`, see
//! [`Reference::hidden_note`]): the seam knows the plan's seqs, so every
//! method gets it for free, and seqs never change, so it stays right
//! after reopening, later compactions and branch moves.

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_session::Reference;

/// Opening text of every checkpoint (prompts/checkpoint_open.md).
pub const CHECKPOINT_OPENING: &str = include_str!("../prompts/checkpoint_open.md");
/// Closing text of every checkpoint (prompts/checkpoint_close.md).
pub const CHECKPOINT_CLOSING: &str = include_str!("../prompts/checkpoint_close.md");

/// Wraps a method's content blocks in the checkpoint framing: the opening
/// as the first text block, the note naming `hides` (what the checkpoint
/// replaces, for the `recall` tool), the content, the preserved notes, the
/// closing as the last text block. Role user, origin checkpoint.
pub fn frame_checkpoint(
    compaction_id: &str,
    method: &str,
    hides: Reference,
    content: Vec<Block>,
    preserve: &[String],
) -> Message {
    let mut blocks = Vec::with_capacity(content.len() + 4);
    blocks.push(Block::text(CHECKPOINT_OPENING.trim_end()));
    blocks.push(Block::text(hides.hidden_note()));
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

/// The text of a checkpoint without its framing and its reference note
/// (or all the text of any other message).
pub fn checkpoint_body(message: &Message) -> String {
    let blocks: &[Block] = if is_checkpoint(message) {
        &message.content[1..message.content.len() - 1]
    } else {
        &message.content
    };
    blocks
        .iter()
        .filter_map(Block::as_text)
        .filter(|text| Reference::in_hidden_note(text).is_none())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The reference a checkpoint names for what it hides, or `None` for
/// other messages and for checkpoints written before references existed.
pub fn checkpoint_reference(message: &Message) -> Option<Reference> {
    message
        .content
        .iter()
        .filter_map(Block::as_text)
        .find_map(Reference::in_hidden_note)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_round_trips() {
        let hides = Reference::range(3, 9);
        let message = frame_checkpoint(
            "c1",
            "digest",
            hides,
            vec![Block::text("## Goal\nship")],
            &[],
        );
        assert!(is_checkpoint(&message));
        assert_eq!(checkpoint_body(&message), "## Goal\nship");
        assert_eq!(checkpoint_reference(&message), Some(hides));
        assert_eq!(checkpoint_reference(&Message::user("## Goal")), None);
        assert!(!is_checkpoint(&Message::user(CHECKPOINT_OPENING)));
        assert!(CHECKPOINT_OPENING.contains("not a new message from the user"));
    }
}
