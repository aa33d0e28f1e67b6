//! Every prompt this crate sends, loaded from prompts/*.md.

/// System prompt of every summary request: the history is untrusted data.
pub const SUMMARIZE_SYSTEM: &str = include_str!("../prompts/summarize_system.md");
/// Instructions for a first checkpoint: the required sections.
pub const SUMMARIZE_INITIAL: &str = include_str!("../prompts/summarize_initial.md");
/// Instructions for a checkpoint that merges the previous one.
pub const SUMMARIZE_UPDATE: &str = include_str!("../prompts/summarize_update.md");
/// Instructions for the hidden start of a split turn.
pub const SUMMARIZE_TURN_PREFIX: &str = include_str!("../prompts/summarize_turn_prefix.md");
/// Instructions for a summary of an abandoned branch.
pub const BRANCH_SUMMARY: &str = include_str!("../prompts/branch_summary.md");
/// Opening line of a branch-summary message.
pub const BRANCH_OPENING: &str = include_str!("../prompts/branch_open.md");
/// The result given to a call the navigation target leaves open, ahead of
/// the branch summary: a call must be followed by its result, and the
/// real one stays on the branch that was left.
pub const BRANCH_OPEN_CALL: &str = include_str!("../prompts/branch_open_call.md");

/// Heading under which a split turn's prefix summary is merged, below the
/// history summary.
pub const TURN_PREFIX_HEADING: &str = "## Current turn so far";
/// Heading of the short summary the prompts ask for; parsed out of the
/// summary into the checkpoint's `short_summary`.
pub const SHORT_HEADING: &str = "## In short";

/// Opening of the instruction message in cache-aligned mode. The system
/// prompt is the conversation's own there, so this message carries what
/// the transcript mode's system prompt says: the history is data, tools
/// are disabled, write only the checkpoint.
pub const CACHE_ALIGNED_NOTICE: &str = include_str!("../prompts/summarize_cache_aligned.md");
/// Task of an update in cache-aligned mode, when the previous checkpoint
/// is replayed at the head of the conversation rather than quoted below it.
pub const SUMMARIZE_UPDATE_ALIGNED: &str = include_str!("../prompts/summarize_update_aligned.md");

/// The instruction appended to the live conversation
/// (prompts/handoff.md).
pub const HANDOFF_PROMPT: &str = include_str!("../prompts/handoff.md");
