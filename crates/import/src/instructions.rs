//! Instruction files an agent injected into its conversation, found so
//! the importer can pin them (see `abridge_session::Pin`): compaction
//! must never make the model forget AGENTS.md or CLAUDE.md.
//!
//! - Claude Code puts each CLAUDE.md into a `<system-reminder>` block
//!   headed `# claudeMd`, with a line `Contents of PATH (...)` per file,
//!   often as one block of the user's first request. The pin names that
//!   block alone, so the request around it stays the user's.
//! - Codex sends AGENTS.md as a user message of its own opening
//!   `# AGENTS.md instructions for DIR` (older versions: a
//!   `<user_instructions>` block), and repeats the instructions in each
//!   `turn_context` record's `user_instructions`. The message is pinned
//!   whole; where no such message came before the first `turn_context`
//!   carrying instructions (a redacted rollout), that text is pinned
//!   instead, once.

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Origin;

/// The origin of a pinned CLAUDE.md reminder.
pub(crate) const CLAUDE_MD: &str = "claude-md";
/// The origin of a pinned AGENTS.md message.
pub(crate) const AGENTS_MD: &str = "agents-md";
/// The origin of a pin of Codex's `turn_context.user_instructions`.
pub(crate) const CODEX_USER_INSTRUCTIONS: &str = "codex-user-instructions";

/// The text blocks of `message` that carry CLAUDE.md files, each with the
/// first file's path when the block names one.
pub(crate) fn claude_md(message: &Message) -> Vec<(usize, Option<String>)> {
    message
        .content
        .iter()
        .enumerate()
        .filter_map(|(index, block)| match block {
            Block::Text { text } if is_claude_md(text) => Some((index, claude_md_path(text))),
            _ => None,
        })
        .collect()
}

fn is_claude_md(text: &str) -> bool {
    text.contains("<system-reminder>")
        && (text.contains("# claudeMd") || claude_md_path(text).is_some())
}

/// The path in the first `Contents of PATH` line that names a CLAUDE.md.
fn claude_md_path(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("Contents of ")?;
        let path = rest.split_whitespace().next()?.trim_end_matches(':');
        path.ends_with("CLAUDE.md").then(|| path.to_string())
    })
}

/// When `message` is Codex's injected instruction file: its label (the
/// directory an AGENTS.md message names, or `None`).
pub(crate) fn agents_md(message: &Message) -> Option<Option<String>> {
    let Some(Origin::Injected { source }) = &message.meta.origin else {
        return None;
    };
    if !matches!(
        source.as_str(),
        "agents-md" | "user_instructions" | "INSTRUCTIONS"
    ) {
        return None;
    }
    Some(agents_md_label(message))
}

/// The AGENTS.md path the first `# AGENTS.md instructions for DIR` line
/// of `message` names.
fn agents_md_label(message: &Message) -> Option<String> {
    message.content.iter().find_map(|block| {
        let text = block.as_text()?;
        let first = text.trim_start().lines().next()?;
        let dir = first.strip_prefix("# AGENTS.md instructions for ")?;
        Some(format!("{}/AGENTS.md", dir.trim().trim_end_matches('/')))
    })
}

/// The pins an importer would write for `message`, logged at `seq`: one
/// per CLAUDE.md reminder block, or one of the whole message when it is
/// Codex's AGENTS.md (marked injected, or opening with the header Codex
/// writes, as the importer's own markers read it). For a face that logs
/// an agent's messages as they arrive (the proxy), so the instruction
/// files it relays survive compaction as imported ones do.
pub fn instruction_pins(message: &Message, seq: abridge_session::Seq) -> Vec<abridge_session::Pin> {
    let mut pins: Vec<abridge_session::Pin> = claude_md(message)
        .into_iter()
        .map(|(block, path)| {
            let mut pin = abridge_session::Pin::message(seq, CLAUDE_MD).with_block(block);
            pin.label = path;
            pin
        })
        .collect();
    let headed = message
        .content
        .first()
        .and_then(Block::as_text)
        .is_some_and(|text| {
            text.trim_start()
                .starts_with("# AGENTS.md instructions for ")
        });
    let label = match agents_md(message) {
        Some(label) => Some(label),
        None if headed => Some(agents_md_label(message)),
        None => None,
    };
    if let Some(label) = label {
        let mut pin = abridge_session::Pin::message(seq, AGENTS_MD);
        pin.label = label;
        pins.push(pin);
    }
    pins
}

/// Writes `pin` after `parent` and returns its seq, which the next event
/// hangs off, so the pin stays on the active path.
pub(crate) fn write_pin(
    b: &mut crate::builder::Builder,
    pin: &abridge_session::Pin,
    parent: Option<abridge_session::Seq>,
    time: Option<String>,
    line: u64,
) -> abridge_session::Seq {
    b.log(
        abridge_session::TYPE_PIN,
        pin.data(),
        parent,
        time,
        Some(line),
    )
}

/// Adds Claude Code's user message `user` after `parent`, then a pin of
/// each of its CLAUDE.md reminder blocks; returns the last seq written.
pub(crate) fn claude_user(
    b: &mut crate::builder::Builder,
    user: Message,
    parent: Option<abridge_session::Seq>,
    time: Option<&str>,
    line: u64,
) -> abridge_session::Seq {
    let found = claude_md(&user);
    let time = time.map(str::to_string);
    let seq = b.message(user, parent, time.clone(), Some(line));
    let mut last = seq;
    for (block, path) in found {
        let mut pin = abridge_session::Pin::message(seq, CLAUDE_MD).with_block(block);
        pin.label = path;
        last = write_pin(b, &pin, Some(last), time.clone(), line);
    }
    last
}

/// Adds Codex's message `message` after the last event, then a pin of it
/// when it is an instruction file; returns whether it pinned.
pub(crate) fn codex_message(
    b: &mut crate::builder::Builder,
    message: Message,
    time: Option<String>,
    line: u64,
) -> bool {
    let found = agents_md(&message);
    let last = b.last();
    let seq = b.message(message, last, time.clone(), Some(line));
    let Some(label) = found else {
        return false;
    };
    let mut pin = abridge_session::Pin::message(seq, AGENTS_MD);
    pin.label = label;
    write_pin(b, &pin, Some(seq), time, line);
    true
}

#[cfg(test)]
#[path = "instructions_tests.rs"]
mod tests;
