//! Inline imaging of the system prompt's project-instruction sections at
//! request-build time.
//!
//! Agents paste whole instruction files (AGENTS.md, CLAUDE.md, ...) into
//! the system prompt, and those files are resent on every request. When a
//! section is long enough that frames cost fewer tokens than its text, the
//! section is printed on frames and a one-line note takes its place.
//!
//! The frames go into a user message placed right after the leading
//! system/developer messages, not into the system message itself: our
//! Anthropic and OpenAI Chat dialects send system content as text only
//! (images there are dropped), and user content accepts images everywhere.
//! The note in the system prompt tells the model where the text went.
//!
//! Never persisted: the function returns new messages for one request; the
//! session is not touched, and the same input gives the same bytes, so the
//! rewritten prefix stays cacheable from turn to turn.

use std::sync::Arc;

use abridge_llm::Block;
use abridge_llm::ImageBilling;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Role;
use abridge_llm::SharedMessage;

use crate::error::Error;
use crate::frame_cache::FrameCache;
use crate::inline::InlineConfig;
use crate::inline::draw;
use crate::inline::frames_cost;
use crate::inline::png_block;
use crate::markers::SectionEnd;
use crate::markers::SectionMarker;
use crate::render::Grid;
use crate::shape::FrameSpec;

/// The line left in the system prompt in place of an imaged section;
/// `{name}` is the section's first line (see [`instructions_note`]).
pub const INSTRUCTIONS_NOTE: &str = "[{name}: printed on the image(s) that open the conversation; follow it as part of this system prompt]";

/// The text put before a section's frames in the frames message; `{name}`
/// as in [`INSTRUCTIONS_NOTE`].
pub const INSTRUCTIONS_FRAMES_NOTE: &str =
    "[{name}, from the system prompt, printed on the image(s) below]";

/// Longest section name used in a note, in characters; longer first lines
/// are cut and end with `...`.
const NAME_CAP: usize = 120;

/// [`INSTRUCTIONS_NOTE`] for a section named `name`.
pub fn instructions_note(name: &str) -> String {
    INSTRUCTIONS_NOTE.replace("{name}", name)
}

/// [`INSTRUCTIONS_FRAMES_NOTE`] for a section named `name`.
pub fn instructions_frames_note(name: &str) -> String {
    INSTRUCTIONS_FRAMES_NOTE.replace("{name}", name)
}

/// A piece of a text block: kept as text, or a section that may be imaged.
#[derive(Debug, PartialEq, Eq)]
enum Piece<'a> {
    Text(&'a str),
    Section(&'a str),
}

/// Lines of `text` with their byte offsets, line breaks included.
fn lines_with_offsets(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split_inclusive('\n').scan(0, |offset, line| {
        let at = *offset;
        *offset += line.len();
        Some((at, line))
    })
}

fn is_fence(line: &str) -> bool {
    line.trim_start().starts_with("```")
}

/// Byte offset where a [`SectionEnd::BeforeLine`] section opened at
/// `from` ends (trailing whitespace excluded).
fn end_before_line(text: &str, from: usize, stops: &[String], markers: &[SectionMarker]) -> usize {
    let body_start = text[from..].find('\n').map_or(text.len(), |i| from + i + 1);
    let mut fenced = false;
    let mut end = text.len();
    for (at, line) in lines_with_offsets(&text[body_start..]) {
        if is_fence(line) {
            fenced = !fenced;
            continue;
        }
        if !fenced
            && (stops.iter().any(|s| line.starts_with(s.as_str()))
                || markers.iter().any(|m| m.opens(line)))
        {
            end = body_start + at;
            break;
        }
    }
    from + text[from..end].trim_end().len()
}

/// Splits `text` into plain text and instruction sections, in order.
fn split_sections<'a>(text: &'a str, markers: &[SectionMarker]) -> Vec<Piece<'a>> {
    let mut pieces = Vec::new();
    let mut plain_from = 0;
    let mut resume = 0;
    let mut fenced = false;
    for (at, line) in lines_with_offsets(text) {
        if at < resume {
            continue;
        }
        if is_fence(line) {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let end = markers
            .iter()
            .filter(|m| m.opens(line))
            .find_map(|m| match &m.end {
                SectionEnd::Close(close) => {
                    let search = at + m.start.len();
                    text[search..]
                        .find(close.as_str())
                        .map(|i| search + i + close.len())
                }
                SectionEnd::BeforeLine(stops) => Some(end_before_line(text, at, stops, markers)),
            });
        if let Some(end) = end {
            if plain_from < at {
                pieces.push(Piece::Text(&text[plain_from..at]));
            }
            pieces.push(Piece::Section(&text[at..end]));
            plain_from = end;
            // Scanning resumes at the next line; the rest of the closing
            // line stays plain text and opens no section.
            resume = text[end..].find('\n').map_or(text.len(), |i| end + i + 1);
        }
    }
    if plain_from < text.len() {
        pieces.push(Piece::Text(&text[plain_from..]));
    }
    pieces
}

/// A section's name for notes: its first line without Markdown or tag
/// punctuation, capped at [`NAME_CAP`] characters.
fn section_name(section: &str) -> String {
    let first = section.lines().next().unwrap_or_default();
    let name = first
        .trim()
        .trim_start_matches(['#', '<'])
        .trim_end_matches(['>', ':'])
        .trim();
    if name.chars().count() > NAME_CAP {
        let cut: String = name.chars().take(NAME_CAP - 3).collect();
        format!("{cut}...")
    } else {
        name.to_string()
    }
}

/// Returns `messages` with every project-instruction section of the leading
/// system/developer messages that is at least `instructions_min_chars`
/// long, and whose frames plus notes cost fewer tokens (by `text_tokens`
/// and [`frame_tokens`](crate::frame_tokens)) than its text, replaced by
/// [`INSTRUCTIONS_NOTE`]; the frames follow in one new user message right
/// after those system messages, each section's introduced by
/// [`INSTRUCTIONS_FRAMES_NOTE`].
///
/// Everything else stays as it was, in order: text around a section, other
/// blocks, later messages. Messages not changed are shared, not copied.
/// Returns the input unchanged (shared) when `config.instructions` is
/// `false` or nothing is worth imaging.
///
/// # Errors
///
/// Font and PNG errors from rendering.
pub fn image_instructions(
    messages: &[SharedMessage],
    spec: &FrameSpec,
    billing: &ImageBilling,
    text_tokens: &dyn Fn(&str) -> u64,
    config: &InlineConfig,
    cache: &FrameCache,
) -> Result<Vec<SharedMessage>, Error> {
    if !config.instructions {
        return Ok(messages.to_vec());
    }
    let grid = Grid::new(spec.shape, spec.width, spec.max_height, 0)?;
    let leading = messages
        .iter()
        .take_while(|m| matches!(m.role, Role::System | Role::Developer))
        .count();
    let mut out: Vec<SharedMessage> = Vec::with_capacity(messages.len() + 1);
    let mut frames_message: Vec<Block> = Vec::new();
    for message in &messages[..leading] {
        let mut changed = false;
        let mut content = Vec::with_capacity(message.content.len());
        for block in &message.content {
            let Block::Text { text } = block else {
                content.push(block.clone());
                continue;
            };
            let mut rewritten = String::with_capacity(text.len());
            for piece in split_sections(text, &config.instruction_markers) {
                match piece {
                    Piece::Text(plain) => rewritten.push_str(plain),
                    Piece::Section(section) => {
                        let imaged = if section.chars().count() < config.instructions_min_chars {
                            None
                        } else {
                            let name = section_name(section);
                            let note = instructions_note(&name);
                            let header = instructions_frames_note(&name);
                            let frames = draw(section, &grid, cache)?;
                            let cost = frames_cost(&frames, billing)
                                + text_tokens(&note)
                                + text_tokens(&header);
                            (cost < text_tokens(section)).then_some((note, header, frames))
                        };
                        match imaged {
                            Some((note, header, frames)) => {
                                rewritten.push_str(&note);
                                frames_message.push(Block::text(header));
                                frames_message.extend(frames.iter().map(|f| png_block(f)));
                                changed = true;
                            }
                            None => rewritten.push_str(section),
                        }
                    }
                }
            }
            content.push(Block::text(rewritten));
        }
        out.push(if changed {
            Arc::new(Message {
                role: message.role,
                content,
                meta: message.meta.clone(),
            })
        } else {
            Arc::clone(message)
        });
    }
    if !frames_message.is_empty() {
        out.push(Arc::new(Message {
            role: Role::User,
            content: frames_message,
            meta: Meta::default(),
        }));
    }
    out.extend(messages[leading..].iter().map(Arc::clone));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use sha2::Digest;
    use sha2::Sha256;

    use super::*;
    use crate::markers::default_markers;

    fn tokens(text: &str) -> u64 {
        (text.len() as u64).div_ceil(3)
    }

    fn rules(n: usize) -> String {
        (0..n)
            .map(|i| {
                format!("- Rule {i}: run `cargo test -p crate_{i}` before OBJ_0O1lI changes.\n")
            })
            .collect()
    }

    fn codex_section(body: &str) -> String {
        format!("# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\n{body}</INSTRUCTIONS>")
    }

    fn claude_section(body: &str) -> String {
        format!(
            "Contents of /repo/CLAUDE.md (project instructions, checked into the codebase):\n\n{body}"
        )
    }

    fn enabled() -> InlineConfig {
        InlineConfig {
            instructions: true,
            ..InlineConfig::default()
        }
    }

    fn run(
        messages: &[SharedMessage],
        text_tokens: &dyn Fn(&str) -> u64,
        config: &InlineConfig,
    ) -> Vec<SharedMessage> {
        image_instructions(
            messages,
            &FrameSpec::for_model("claude-sonnet-4-5"),
            &ImageBilling::Anthropic,
            text_tokens,
            config,
            &FrameCache::default(),
        )
        .unwrap()
    }

    fn system_text(message: &Message) -> String {
        message
            .content
            .iter()
            .filter_map(Block::as_text)
            .collect::<Vec<_>>()
            .join("|")
    }

    fn png_hashes(message: &Message) -> Vec<String> {
        message
            .content
            .iter()
            .filter_map(|b| match b {
                Block::Image {
                    source: abridge_llm::ImageSource::Base64 { data, .. },
                    ..
                } => Some(format!("{:x}", Sha256::digest(data.as_bytes()))),
                _ => None,
            })
            .collect()
    }

    fn prompt(codex_body: &str, claude_body: &str) -> String {
        format!(
            "You are a coding agent.\n\n{}\n\n<environment_context>cwd=/repo</environment_context>\n\n<system-reminder>\n{}\n</system-reminder>\n\nBe brief.",
            codex_section(codex_body),
            claude_section(claude_body)
        )
    }

    #[test]
    fn large_sections_become_frames_and_the_rest_stays_in_order() {
        let big = rules(200);
        let messages: Vec<SharedMessage> = vec![
            Arc::new(Message::system(prompt(&big, &big))),
            Arc::new(Message::user("Fix the parser.")),
        ];
        let out = run(&messages, &tokens, &enabled());
        assert_eq!(out.len(), 3);
        let codex = "AGENTS.md instructions for /repo";
        let claude =
            "Contents of /repo/CLAUDE.md (project instructions, checked into the codebase)";
        assert_eq!(
            system_text(&out[0]),
            format!(
                "You are a coding agent.\n\n{}\n\n<environment_context>cwd=/repo</environment_context>\n\n<system-reminder>\n{}\n\n</system-reminder>\n\nBe brief.",
                instructions_note(codex),
                instructions_note(claude)
            )
        );
        assert_eq!(
            instructions_note(codex),
            "[AGENTS.md instructions for /repo: printed on the image(s) that open the conversation; follow it as part of this system prompt]"
        );
        assert_eq!(out[0].role, Role::System);
        assert_eq!(out[1].role, Role::User);
        let texts: Vec<&str> = out[1].content.iter().filter_map(Block::as_text).collect();
        assert_eq!(
            texts,
            [
                "[AGENTS.md instructions for /repo, from the system prompt, printed on the image(s) below]",
                instructions_frames_note(claude).as_str(),
            ]
        );
        assert!(matches!(out[1].content[1], Block::Image { .. }));
        assert!(
            Arc::ptr_eq(&out[2], &messages[1]),
            "later messages are shared"
        );
    }

    #[test]
    fn sections_stay_text_when_small_costlier_or_disabled() {
        let big = rules(200);
        let small = rules(3);
        let original = prompt(&small, &big);
        let messages: Vec<SharedMessage> = vec![Arc::new(Message::system(original.clone()))];

        // The small Codex section stays; the large Claude one is imaged.
        let out = run(&messages, &tokens, &enabled());
        let text = system_text(&out[0]);
        assert!(text.contains(&codex_section(&small)), "{text}");
        assert!(text.ends_with(&format!(
            "{}\n\n</system-reminder>\n\nBe brief.",
            instructions_note(
                "Contents of /repo/CLAUDE.md (project instructions, checked into the codebase)"
            )
        )));

        // Frames that cost more than the text: nothing changes.
        let cheap_text = |text: &str| (text.len() as u64) / 50;
        let out = run(&messages, &cheap_text, &enabled());
        assert_eq!(out.len(), 1);
        assert!(Arc::ptr_eq(&out[0], &messages[0]));

        // Off by default.
        let out = run(&messages, &tokens, &InlineConfig::default());
        assert_eq!(out.len(), 1);
        assert_eq!(system_text(&out[0]), original);
    }

    #[test]
    fn the_same_prompt_gives_the_same_frames() {
        let big = rules(200);
        let messages: Vec<SharedMessage> = vec![Arc::new(Message::system(prompt(&big, &big)))];
        let first = png_hashes(&run(&messages, &tokens, &enabled())[1]);
        let second = png_hashes(&run(&messages, &tokens, &enabled())[1]);
        assert!(!first.is_empty());
        assert_eq!(first, second);
    }

    #[test]
    fn sections_are_split_by_their_markers() {
        let markers = default_markers();
        let text = "intro\n# AGENTS.md\nuse tabs\n```sh\n# not a heading\n```\n\n# Other\nrest\nInstructions from: /a/AGENTS.md\nA rules\nInstructions from: /b/AGENTS.md\nB rules\n";
        assert_eq!(
            split_sections(text, &markers),
            [
                Piece::Text("intro\n"),
                Piece::Section("# AGENTS.md\nuse tabs\n```sh\n# not a heading\n```"),
                Piece::Text("\n\n# Other\nrest\n"),
                Piece::Section("Instructions from: /a/AGENTS.md\nA rules"),
                Piece::Text("\n"),
                Piece::Section("Instructions from: /b/AGENTS.md\nB rules"),
                Piece::Text("\n"),
            ]
        );
        // An unclosed wrapper and a memory file are not sections.
        let text = "<instructions path=\"x\">\nno end\nContents of /m/MEMORY.md (user's auto-memory, persists across conversations):\n\nfacts";
        assert_eq!(split_sections(text, &markers), [Piece::Text(text)]);
    }

    #[test]
    fn names_drop_punctuation_and_are_capped() {
        assert_eq!(
            section_name("# AGENTS.md instructions for /r\nx"),
            "AGENTS.md instructions for /r"
        );
        assert_eq!(
            section_name("<instructions path=\"a.md\">\nx"),
            "instructions path=\"a.md\""
        );
        let long = format!("Contents of /{} (project instructions):", "d/".repeat(100));
        let name = section_name(&long);
        assert_eq!(name.chars().count(), NAME_CAP);
        assert!(name.ends_with("..."));
    }
}
