//! Shake: large tool results, fenced code blocks and top-level XML blocks
//! in older tool results moved out of the context, each replaced by a
//! placeholder naming the characters it moved as `recall://SEQ#START-END`.
//!
//! # Why no artifact store
//!
//! A rewrite keeps the original result in the log, so the moved text is
//! already stored: the reference names characters of the text of the
//! result at the rewrite's target seq (its text blocks joined by a
//! newline, see [`result_text`]), and the `recall` tool reads them from the
//! log. Nothing is written beside the session; older logs whose
//! placeholders say `artifact://` are still read through
//! [`crate::ArtifactStore`].
//!
//! # Why only tool results
//!
//! The session accepts `rewrite` events for tool messages only: user and
//! assistant messages can change only through a checkpoint. That is also
//! what a model expects: its own words, its tool-call arguments and
//! signed reasoning stay verbatim, and only what tools answered is moved.
//! So shake never touches tool-call arguments, and a region never spans
//! two messages (it never leaves one text block).

use abridge_compact::TokenCounter;
use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_llm::Message;
use abridge_meter::MESSAGE_OVERHEAD;
use serde::Deserialize;
use serde::Serialize;

use abridge_session::Reference;
use abridge_session::Seq;

use crate::context::PassContext;
use crate::placeholder;
use crate::prune::DEFAULT_PROTECTED_TOOLS;
use crate::regions::find_regions;
use crate::report::Reclaim;
use crate::report::Report;
use crate::report::Rule;
use crate::rewrite::rewrite;
use crate::rewrite::with_content;
use crate::scan::Scan;
use crate::scan::Snapshot;

/// What shake does with image blocks of a result it moves whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImagePolicy {
    /// Images stay in the result, after the placeholder.
    Keep,
    /// Each image block is replaced by a placeholder naming the original
    /// result (`recall://SEQ`), which still holds it.
    Record,
}

/// The three situations shake is run in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShakePreset {
    /// Runs on its own as the context grows: only big things, well behind
    /// the recent turns.
    Automatic,
    /// The user asked for room: moves more, closer to the present.
    Manual,
    /// The provider refused the request as too long: moves nearly
    /// everything movable, images included.
    Rescue,
}

/// Settings of a shake pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ShakeConfig {
    /// The newest messages, this many tokens of them, are left alone.
    pub keep_recent_tokens: u64,
    /// A tool result of at least this many tokens is moved whole.
    pub min_result_tokens: u64,
    /// A fenced or XML block of at least this many tokens is moved.
    pub min_block_tokens: u64,
    /// What happens to images of results moved whole.
    pub images: ImagePolicy,
    /// Tools whose results are never moved (ignoring ASCII case).
    pub protected_tools: Vec<String>,
    /// Per-turn passes rewrite a result only when at most this many
    /// tokens follow it, unless the cache has expired (default 8000).
    pub cache_tail_tokens: u64,
}

impl Default for ShakeConfig {
    fn default() -> Self {
        Self::preset(ShakePreset::Automatic)
    }
}

impl ShakeConfig {
    /// The settings of a preset:
    ///
    /// | preset | keep recent | whole result | block | images |
    /// |---|---|---|---|---|
    /// | automatic | 20000 | 4000 | 1000 | keep |
    /// | manual | 8000 | 1000 | 400 | keep |
    /// | rescue | 2000 | 200 | 150 | record |
    pub fn preset(preset: ShakePreset) -> Self {
        let (keep_recent_tokens, min_result_tokens, min_block_tokens, images) = match preset {
            ShakePreset::Automatic => (20_000, 4_000, 1_000, ImagePolicy::Keep),
            ShakePreset::Manual => (8_000, 1_000, 400, ImagePolicy::Keep),
            ShakePreset::Rescue => (2_000, 200, 150, ImagePolicy::Record),
        };
        ShakeConfig {
            keep_recent_tokens,
            min_result_tokens,
            min_block_tokens,
            images,
            protected_tools: DEFAULT_PROTECTED_TOOLS
                .iter()
                .map(|s| (*s).to_string())
                .collect(),
            cache_tail_tokens: 8_000,
        }
    }

    fn is_protected(&self, tool: &str) -> bool {
        self.protected_tools
            .iter()
            .any(|p| p.eq_ignore_ascii_case(tool))
    }
}

/// A piece of new result content.
#[derive(Debug)]
enum Part {
    Block(Block),
    Text(Vec<Piece>),
}

#[derive(Debug)]
enum Piece {
    Literal(String),
    /// Characters `start..end` of the result's text.
    Moved {
        what: String,
        start: usize,
        end: usize,
        tokens: u64,
    },
    Image {
        what: String,
    },
}

/// The text of a tool result as `recall://SEQ#START-END` counts its
/// characters: its text blocks joined by a newline.
pub fn result_text(content: &[Block]) -> String {
    content
        .iter()
        .filter_map(Block::as_text)
        .collect::<Vec<_>>()
        .join("\n")
}

fn render(parts: &[Part], seq: Seq) -> Vec<Block> {
    parts
        .iter()
        .map(|part| match part {
            Part::Block(block) => block.clone(),
            Part::Text(pieces) => {
                let mut text = String::new();
                for piece in pieces {
                    match piece {
                        Piece::Literal(s) => text.push_str(s),
                        Piece::Moved {
                            what,
                            start,
                            end,
                            tokens,
                        } => text.push_str(&placeholder::shaken(
                            what,
                            Reference::Part {
                                seq,
                                start: *start,
                                end: *end,
                            },
                            *tokens,
                        )),
                        Piece::Image { what } => {
                            text.push_str(&placeholder::shaken_image(what, Reference::Event(seq)))
                        }
                    }
                }
                Block::text(text)
            }
        })
        .collect()
}

fn describe_image(block: &Block) -> String {
    match block {
        Block::Image {
            source,
            width,
            height,
        } => {
            let media = match source {
                ImageSource::Base64 { media_type, .. } | ImageSource::Blob { media_type, .. } => {
                    media_type.as_str()
                }
                ImageSource::Url { .. } => "url",
            };
            match (width, height) {
                (Some(w), Some(h)) => format!("image ({media}, {w}x{h})"),
                _ => format!("image ({media})"),
            }
        }
        _ => "block".to_string(),
    }
}

/// What `text` costs on its own, as `counter` counts.
fn text_tokens(text: &str, counter: &dyn TokenCounter) -> u64 {
    counter
        .message_tokens(&Message::user(text))
        .saturating_sub(MESSAGE_OVERHEAD)
}

/// The whole result moved: its text as one region, images per policy.
fn move_whole(content: &[Block], config: &ShakeConfig, counter: &dyn TokenCounter) -> Vec<Part> {
    let mut parts = Vec::new();
    if content.iter().any(|b| b.as_text().is_some()) {
        let joined = result_text(content);
        parts.push(Part::Text(vec![Piece::Moved {
            what: "tool output".to_string(),
            start: 0,
            end: joined.chars().count(),
            tokens: text_tokens(&joined, counter),
        }]));
    }
    for block in content {
        match block {
            Block::Text { .. } => {}
            Block::Image { .. } if config.images == ImagePolicy::Record => {
                parts.push(Part::Text(vec![Piece::Image {
                    what: describe_image(block),
                }]));
            }
            other => parts.push(Part::Block(other.clone())),
        }
    }
    parts
}

/// Blocks inside the text moved, the rest kept; `None` when nothing moved.
/// Offsets count characters of [`result_text`]: each text block starts one
/// newline after the previous one ends.
fn move_regions(
    content: &[Block],
    config: &ShakeConfig,
    counter: &dyn TokenCounter,
) -> Option<Vec<Part>> {
    let mut moved_any = false;
    let mut parts = Vec::new();
    // Characters of the result's text before the current text block.
    let mut offset: Option<usize> = None;
    for block in content {
        let Block::Text { text } = block else {
            parts.push(Part::Block(block.clone()));
            continue;
        };
        let base = offset.map_or(0, |o| o + 1);
        offset = Some(base + text.chars().count());
        let mut pieces = Vec::new();
        let mut at = 0;
        for region in find_regions(text) {
            let tokens = text_tokens(&text[region.range.clone()], counter);
            if tokens < config.min_block_tokens {
                continue;
            }
            pieces.push(Piece::Literal(text[at..region.range.start].to_string()));
            let start = base + text[..region.range.start].chars().count();
            let end = start + text[region.range.clone()].chars().count();
            pieces.push(Piece::Moved {
                what: region.kind.describe(),
                start,
                end,
                tokens,
            });
            at = region.range.end;
            moved_any = true;
        }
        if pieces.is_empty() {
            parts.push(Part::Block(block.clone()));
        } else {
            pieces.push(Piece::Literal(text[at..].to_string()));
            parts.push(Part::Text(pieces));
        }
    }
    moved_any.then_some(parts)
}

/// Computes a shake pass: the rewrites that move large results and large
/// blocks out, each placeholder naming what it moved by a recall
/// reference into the original result (which stays in the log).
///
/// Candidates are visible tool results, not placeholders, not of
/// protected tools, with at least `keep_recent_tokens` after them. A
/// result of `min_result_tokens` or more moves whole; a smaller one has
/// its fenced and top-level XML blocks of `min_block_tokens` or more
/// moved. A rewrite is kept only if it makes the result cheaper.
///
/// Current costs are the snapshot's; `counter` prices the rewrites, so
/// pass the counter the snapshot was counted with.
pub fn shake(
    snapshot: &Snapshot,
    config: &ShakeConfig,
    context: &PassContext,
    counter: &dyn TokenCounter,
) -> Reclaim {
    let scan = Scan::new(snapshot);
    let _span = tracing::debug_span!("shake", surface = scan.items.len()).entered();
    let mut report = Report {
        surface_tokens: scan.total(),
        ..Report::default()
    };
    let mut rewrites = Vec::new();
    for item in &scan.items {
        let Some(tool) = &item.tool else { continue };
        if tool.elided
            || config.is_protected(&tool.name)
            || item.tokens_after < config.keep_recent_tokens
        {
            continue;
        }
        let Some((_, content, _)) = item.message.tool_result_block() else {
            continue;
        };
        let parts = if item.tokens >= config.min_result_tokens {
            Some(move_whole(content, config, counter))
        } else {
            move_regions(content, config, counter)
        };
        let Some(parts) = parts else { continue };
        if !context.allows(item.tokens_after, config.cache_tail_tokens) {
            report.held_for_cache += 1;
            continue;
        }
        let images = parts
            .iter()
            .filter(|p| matches!(p, Part::Text(pieces) if pieces.iter().any(|x| matches!(x, Piece::Image { .. }))))
            .count();
        let message = with_content(item, render(&parts, item.seq));
        if let Some((rewritten, note)) = rewrite(item, message, Rule::Shaken, counter) {
            report.images_recorded += images;
            rewrites.push(rewritten);
            report.rewrites.push(note);
        }
    }
    tracing::debug!(
        rewrites = rewrites.len(),
        saved = report.saved(),
        "shake pass computed"
    );
    Reclaim { rewrites, report }
}
