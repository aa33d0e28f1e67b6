//! Shake: large tool results, fenced code blocks and top-level XML blocks
//! in older tool results moved into one artifact per pass, each replaced
//! by a placeholder naming the artifact and the byte region.
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

use crate::PruneError;
use crate::artifact::ArtifactId;
use crate::artifact::ArtifactRef;
use crate::artifact::ArtifactStore;
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
    /// Each image block is written to the artifact as its JSON and
    /// replaced by a placeholder naming it.
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

/// A piece of new result content, before the artifact id is known.
#[derive(Debug)]
enum Part {
    Block(Block),
    Text(Vec<Piece>),
}

#[derive(Debug)]
enum Piece {
    Literal(String),
    Moved {
        what: String,
        start: u64,
        end: u64,
        tokens: u64,
    },
    Image {
        what: String,
        start: u64,
        end: u64,
    },
}

fn render(parts: &[Part], id: &ArtifactId) -> Vec<Block> {
    let reference = |start: u64, end: u64| {
        ArtifactRef {
            id: id.clone(),
            region: Some(start..end),
        }
        .to_string()
    };
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
                            &reference(*start, *end),
                            *tokens,
                        )),
                        Piece::Image { what, start, end } => text
                            .push_str(&placeholder::shaken_image(what, &reference(*start, *end))),
                    }
                }
                Block::text(text)
            }
        })
        .collect()
}

/// Appends `bytes` to the artifact, separated from the previous piece by a
/// blank line, and returns its region.
fn push_piece(artifact: &mut Vec<u8>, bytes: &[u8]) -> (u64, u64) {
    if !artifact.is_empty() {
        artifact.extend_from_slice(b"\n\n");
    }
    let start = artifact.len() as u64;
    artifact.extend_from_slice(bytes);
    (start, artifact.len() as u64)
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
fn move_whole(
    content: &[Block],
    config: &ShakeConfig,
    artifact: &mut Vec<u8>,
    counter: &dyn TokenCounter,
) -> Vec<Part> {
    let text: Vec<&str> = content.iter().filter_map(Block::as_text).collect();
    let mut parts = Vec::new();
    if !text.is_empty() {
        let joined = text.join("\n");
        let (start, end) = push_piece(artifact, joined.as_bytes());
        parts.push(Part::Text(vec![Piece::Moved {
            what: "tool output".to_string(),
            start,
            end,
            tokens: text_tokens(&joined, counter),
        }]));
    }
    for block in content {
        match block {
            Block::Text { .. } => {}
            Block::Image { .. } if config.images == ImagePolicy::Record => {
                // Serializing a block of plain data cannot fail; were it to,
                // the image is kept rather than lost.
                match serde_json::to_vec(block) {
                    Ok(json) => {
                        let (start, end) = push_piece(artifact, &json);
                        parts.push(Part::Text(vec![Piece::Image {
                            what: describe_image(block),
                            start,
                            end,
                        }]));
                    }
                    Err(_) => parts.push(Part::Block(block.clone())),
                }
            }
            other => parts.push(Part::Block(other.clone())),
        }
    }
    parts
}

/// Blocks inside the text moved, the rest kept; `None` when nothing moved.
fn move_regions(
    content: &[Block],
    config: &ShakeConfig,
    artifact: &mut Vec<u8>,
    counter: &dyn TokenCounter,
) -> Option<Vec<Part>> {
    let mut moved_any = false;
    let mut parts = Vec::new();
    for block in content {
        let Block::Text { text } = block else {
            parts.push(Part::Block(block.clone()));
            continue;
        };
        let mut pieces = Vec::new();
        let mut at = 0;
        for region in find_regions(text) {
            let tokens = text_tokens(&text[region.range.clone()], counter);
            if tokens < config.min_block_tokens {
                continue;
            }
            pieces.push(Piece::Literal(text[at..region.range.start].to_string()));
            let (start, end) = push_piece(artifact, text[region.range.clone()].as_bytes());
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

/// Computes and performs a shake pass: writes at most one artifact to
/// `store` and returns the rewrites that point into it.
///
/// Candidates are visible tool results, not placeholders, not of
/// protected tools, with at least `keep_recent_tokens` after them. A
/// result of `min_result_tokens` or more moves whole; a smaller one has
/// its fenced and top-level XML blocks of `min_block_tokens` or more
/// moved. A rewrite is kept only if it makes the result cheaper.
///
/// Current costs are the snapshot's; `counter` prices the rewrites, so
/// pass the counter the snapshot was counted with.
///
/// # Errors
/// The store's, when writing the artifact fails; nothing is rewritten
/// then.
pub fn shake(
    snapshot: &Snapshot,
    config: &ShakeConfig,
    context: &PassContext,
    counter: &dyn TokenCounter,
    store: &dyn ArtifactStore,
) -> Result<Reclaim, PruneError> {
    let scan = Scan::new(snapshot);
    let _span = tracing::debug_span!("shake", surface = scan.items.len()).entered();
    let mut report = Report {
        surface_tokens: scan.total(),
        ..Report::default()
    };
    let mut artifact: Vec<u8> = Vec::new();
    let mut planned: Vec<(usize, Vec<Part>)> = Vec::new();
    // A stand-in of the real id's length, to check each rewrite pays off
    // before the artifact exists.
    let probe_id = ArtifactId::for_content(b"");
    for (index, item) in scan.items.iter().enumerate() {
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
        let mark = artifact.len();
        let parts = if item.tokens >= config.min_result_tokens {
            Some(move_whole(content, config, &mut artifact, counter))
        } else {
            move_regions(content, config, &mut artifact, counter)
        };
        let Some(parts) = parts else {
            artifact.truncate(mark);
            continue;
        };
        if !context.allows(item.tokens_after, config.cache_tail_tokens) {
            report.held_for_cache += 1;
            artifact.truncate(mark);
            continue;
        }
        let probe = with_content(item, render(&parts, &probe_id));
        if rewrite(item, probe, Rule::Shaken, counter).is_none() {
            artifact.truncate(mark);
            continue;
        }
        planned.push((index, parts));
    }
    if planned.is_empty() {
        return Ok(Reclaim {
            rewrites: Vec::new(),
            report,
        });
    }
    let id = store.put(&artifact)?;
    report.artifact = Some(
        ArtifactRef {
            id: id.clone(),
            region: None,
        }
        .to_string(),
    );
    let mut rewrites = Vec::with_capacity(planned.len());
    for (index, parts) in planned {
        let item = &scan.items[index];
        report.images_recorded += parts
            .iter()
            .filter(|p| matches!(p, Part::Text(pieces) if pieces.iter().any(|x| matches!(x, Piece::Image { .. }))))
            .count();
        let message = with_content(item, render(&parts, &id));
        if let Some((rewritten, note)) = rewrite(item, message, Rule::Shaken, counter) {
            rewrites.push(rewritten);
            report.rewrites.push(note);
        }
    }
    tracing::debug!(
        rewrites = rewrites.len(),
        saved = report.saved(),
        artifact = %id,
        bytes = artifact.len(),
        "shake pass done"
    );
    Ok(Reclaim { rewrites, report })
}
