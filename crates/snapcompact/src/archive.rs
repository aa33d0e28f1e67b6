//! The archive: text edges around an imaged middle, planned to fit a frame
//! budget, stored as text and rendered only when a request is built.
//!
//! The oldest exchanges (usually the task as the user stated it) and the
//! newest ones stay plain text, where every character is exact. Everything
//! between is printed onto frames. When the middle needs more frames than
//! the budget allows, its two ends stay on sharp frames and its centre moves
//! to a denser shape (foveation: what lies next to the text edges is read
//! most carefully). When even dense frames cannot hold it, the oldest part
//! of the middle is dropped and the guide says how much.
//!
//! An [`Archive`] holds source text and a plan only, never PNG bytes. Its
//! frames are drawn from it on demand and kept in a [`FrameCache`] keyed by
//! content hash, so sessions stay small and a later compaction re-renders
//! from the same text.

use std::borrow::Borrow;
use std::sync::Arc;

use abridge_llm::Block;
use abridge_llm::ImageBilling;
use abridge_llm::ImageSource;
use abridge_llm::Message;
use base64::Engine;
use serde::Deserialize;
use serde::Serialize;
use sha2::Digest;
use sha2::Sha256;

use crate::budget::DEFAULT_BYTE_BUDGET;
use crate::budget::base64_len;
use crate::budget::frame_tokens;
use crate::error::Error;
use crate::frame_cache::FrameCache;
use crate::middle::Segment;
use crate::middle::foveate;
use crate::middle::reink;
use crate::middle::slice_runs;
use crate::normalize::NEWLINE;
use crate::render::Frame;
use crate::render::Grid;
use crate::render::Page;
use crate::render::paginate;
use crate::serialize::SerializeConfig;
use crate::serialize::plain_text;
use crate::serialize::serialize;
use crate::serialize::serialize_verbatim;
use crate::shape::FrameSpec;
use crate::shape::Shape;

/// The reading guide put before the frames, in our own words.
pub(crate) const READING_GUIDE: &str = include_str!("../prompts/snapcompact_guide.md");

/// The URL scheme of a frame reference in a stored checkpoint: an image
/// block whose source is `snapcompact:<archive id>/<index>` and whose pixel
/// size is set, so the meter bills it exactly while the log holds no PNG.
pub const FRAME_URL_SCHEME: &str = "snapcompact:";

/// How an archive is laid out. Every default is documented.
#[derive(Debug, Clone, PartialEq)]
pub struct ArchiveConfig {
    /// How history becomes text.
    pub serialize: SerializeConfig,
    /// Characters of the oldest history kept as plain text. Default 2000:
    /// room for the task as first stated.
    pub head_chars: usize,
    /// Characters of the newest history kept as plain text. Default 6000:
    /// the last few exchanges, which the next turn leans on most.
    pub tail_chars: usize,
    /// Extra blank pixel rows under each row of cells. Default 0.
    pub line_spacing: u16,
    /// Base64 bytes all frames of one request may take. Default
    /// [`DEFAULT_BYTE_BUDGET`].
    pub byte_budget: u64,
}

impl Default for ArchiveConfig {
    fn default() -> Self {
        ArchiveConfig {
            serialize: SerializeConfig::default(),
            head_chars: 2000,
            tail_chars: 6000,
            line_spacing: 0,
            byte_budget: DEFAULT_BYTE_BUDGET,
        }
    }
}

/// An archive: everything needed to draw the checkpoint's frames again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Archive {
    /// Format version, 1.
    pub version: u32,
    /// The oldest history as plain text, unnormalized.
    pub head: String,
    /// The imaged middle: serialized, normalized text.
    pub middle: String,
    /// The newest history as plain text, unnormalized.
    pub tail: String,
    /// How the middle is printed, in order.
    pub segments: Vec<Segment>,
    /// Frame width in pixels.
    pub width: u32,
    /// Tallest frame in pixels.
    pub max_height: u32,
    /// Extra pixel rows under each row of cells.
    #[serde(default)]
    pub line_spacing: u16,
    /// Characters of the middle's oldest part left out to fit the budget.
    #[serde(default)]
    pub dropped_chars: usize,
    /// Dense frames those characters would have needed.
    #[serde(default)]
    pub dropped_frames: usize,
}

/// One frame of an archive: where it is and what it costs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameRef {
    /// The drawn frame (shared with the cache).
    pub frame: Arc<Frame>,
    /// The shape it was printed in.
    pub shape: &'static str,
}

impl Archive {
    /// Plans an archive of `messages` for `spec` within `max_frames`
    /// frames and the byte budget in `config`.
    ///
    /// `earlier` is the source text of a previous snapcompact archive this
    /// one absorbs (a later compaction re-renders from text, never from
    /// pixels); it goes first in the middle.
    ///
    /// # Errors
    ///
    /// [`Error::NoFrameBudget`] when `max_frames` is 0 or no frame fits the
    /// byte budget; font and PNG errors from rendering.
    pub fn build<M: Borrow<Message>>(
        messages: &[M],
        earlier: Option<&str>,
        spec: &FrameSpec,
        max_frames: usize,
        config: &ArchiveConfig,
        cache: &FrameCache,
    ) -> Result<Archive, Error> {
        let (head_end, tail_start) = edges(messages, earlier.is_some(), config);
        let head = serialize_verbatim(&messages[..head_end], &config.serialize);
        let tail = serialize_verbatim(&messages[tail_start..], &config.serialize);
        let mut middle = String::new();
        if let Some(earlier) = earlier {
            middle.push_str(&crate::normalize(earlier));
        }
        let rest = plain_text(&serialize(
            &messages[head_end..tail_start],
            &config.serialize,
        ));
        if !middle.is_empty() && !rest.is_empty() {
            middle.push(NEWLINE);
        }
        middle.push_str(&rest);

        let mut frames = max_frames;
        loop {
            if frames == 0 {
                return Err(Error::NoFrameBudget {
                    reason: format!(
                        "{max_frames} frame(s) allowed, and the byte budget of {} bytes holds none",
                        config.byte_budget
                    ),
                });
            }
            let (segments, dropped_chars, dropped_frames) =
                foveate(&middle, spec, config.line_spacing, frames)?;
            let archive = Archive {
                version: 1,
                head: head.clone(),
                middle: middle.clone(),
                tail: tail.clone(),
                segments,
                width: spec.width,
                max_height: spec.max_height,
                line_spacing: config.line_spacing,
                dropped_chars,
                dropped_frames,
            };
            let bytes: u64 = archive
                .frames(cache)?
                .iter()
                .map(|f| base64_len(f.frame.png.len()))
                .sum();
            if bytes <= config.byte_budget {
                return Ok(archive);
            }
            // Shrink in proportion to the overshoot (at least by one).
            let scaled = usize::try_from(
                u128::from(config.byte_budget) * frames as u128 / u128::from(bytes.max(1)),
            )
            .unwrap_or(0);
            tracing::debug!(
                frames,
                bytes,
                budget = config.byte_budget,
                "frames over the byte budget"
            );
            frames = scaled.min(frames - 1);
        }
    }

    /// A short stable id: the first 16 hex digits of the SHA-256 of the
    /// archive's JSON.
    pub fn id(&self) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        let digest = Sha256::digest(&json);
        digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
    }

    /// Every frame, in order, drawn or fetched from `cache`.
    ///
    /// # Errors
    ///
    /// Font and PNG errors from rendering.
    pub fn frames(&self, cache: &FrameCache) -> Result<Vec<FrameRef>, Error> {
        self.pages()?
            .iter()
            .map(|(page, grid)| {
                Ok(FrameRef {
                    frame: cache.render(page, grid)?,
                    shape: grid.shape.name,
                })
            })
            .collect()
    }

    /// Every frame's page with the grid it is drawn on, in order: the text
    /// exactly as laid out on each frame. [`frames`](Self::frames) draws
    /// these and nothing else, so a reader (or a test checking that no
    /// secret is printed) can know what a frame shows without its pixels.
    ///
    /// # Errors
    ///
    /// An unknown shape name, or a grid that holds no cell.
    pub fn pages(&self) -> Result<Vec<(Page, Grid)>, Error> {
        let runs = reink(&self.middle);
        let mut out = Vec::new();
        for segment in &self.segments {
            let shape = Shape::by_name(&segment.shape)?;
            let grid = Grid::new(shape, self.width, self.max_height, self.line_spacing)?;
            let slice = slice_runs(&runs, segment.start, segment.end);
            for page in paginate(&slice, &grid)? {
                out.push((page, grid));
            }
        }
        Ok(out)
    }

    /// The checkpoint content to store: the guide, the head, one image
    /// reference per frame (pixel size set, no bytes), and the tail.
    ///
    /// `files` lists paths the history touched, for the guide.
    ///
    /// # Errors
    ///
    /// Font and PNG errors from rendering (frame sizes are measured).
    pub fn stored_content(
        &self,
        files: &[String],
        cache: &FrameCache,
    ) -> Result<Vec<Block>, Error> {
        let frames = self.frames(cache)?;
        let id = self.id();
        let mut blocks = vec![Block::text(self.guide(&frames, files))];
        if !self.head.is_empty() {
            blocks.push(Block::text(format!(
                "<history-start>\n{}\n</history-start>",
                self.head
            )));
        }
        for (index, frame) in frames.iter().enumerate() {
            blocks.push(Block::Image {
                source: ImageSource::Url {
                    url: format!("{FRAME_URL_SCHEME}{id}/{index}"),
                },
                width: Some(frame.frame.width),
                height: Some(frame.frame.height),
            });
        }
        if !self.tail.is_empty() {
            blocks.push(Block::text(format!(
                "<history-end>\n{}\n</history-end>",
                self.tail
            )));
        }
        Ok(blocks)
    }

    /// The reading guide with this archive's figures.
    fn guide(&self, frames: &[FrameRef], files: &[String]) -> String {
        let mut guide = READING_GUIDE
            .trim_end()
            .replace("{frames}", &frames.len().to_string());
        let sharp = frames.first().map(|f| f.shape);
        let dense: Vec<usize> = frames
            .iter()
            .enumerate()
            .filter(|(_, f)| Some(f.shape) != sharp)
            .map(|(i, _)| i + 1)
            .collect();
        if let (Some(first), Some(last)) = (dense.first(), dense.last()) {
            guide.push_str(&format!(
                " Images {first} to {last} use a tighter spacing to fit more text."
            ));
        }
        if self.dropped_chars > 0 {
            guide.push_str(&format!(
                " The oldest {} characters of the middle ({} image(s)) did not fit and were left out.",
                self.dropped_chars, self.dropped_frames
            ));
        }
        if !files.is_empty() {
            guide.push_str("\nFiles touched: ");
            guide.push_str(&files.join(", "));
        }
        guide
    }

    /// Replaces the frame references of stored checkpoint `content` with
    /// inline PNG images, for a request. Blocks that are not this archive's
    /// references pass through unchanged.
    ///
    /// # Errors
    ///
    /// Font and PNG errors from rendering.
    pub fn expand(&self, content: &[Block], cache: &FrameCache) -> Result<Vec<Block>, Error> {
        let frames = self.frames(cache)?;
        let prefix = format!("{FRAME_URL_SCHEME}{}/", self.id());
        let engine = base64::engine::general_purpose::STANDARD;
        Ok(content
            .iter()
            .map(|block| {
                let Block::Image {
                    source: ImageSource::Url { url },
                    ..
                } = block
                else {
                    return block.clone();
                };
                let frame = url
                    .strip_prefix(&prefix)
                    .and_then(|i| i.parse::<usize>().ok())
                    .and_then(|i| frames.get(i));
                match frame {
                    Some(frame) => Block::Image {
                        source: ImageSource::Base64 {
                            media_type: "image/png".to_string(),
                            data: engine.encode(&frame.frame.png),
                        },
                        width: Some(frame.frame.width),
                        height: Some(frame.frame.height),
                    },
                    None => block.clone(),
                }
            })
            .collect())
    }

    /// All of the archive as text: head, middle and tail joined by line
    /// breaks. For models without vision, for reports, and as the
    /// checkpoint's summary (a later compaction re-renders from it).
    pub fn full_text(&self) -> String {
        format!("{}\n{}\n{}", self.head, self.middle, self.tail)
    }

    /// Tokens the imaged archive costs in a request: its frames under
    /// `billing`, plus `text_tokens` of the guide and the text edges.
    ///
    /// # Errors
    ///
    /// Font and PNG errors from rendering.
    pub fn tokens(
        &self,
        billing: &ImageBilling,
        files: &[String],
        text_tokens: &dyn Fn(&str) -> u64,
        cache: &FrameCache,
    ) -> Result<u64, Error> {
        let frames = self.frames(cache)?;
        let images: u64 = frames
            .iter()
            .map(|f| frame_tokens(billing, f.frame.width, f.frame.height))
            .sum();
        Ok(images
            + text_tokens(&self.guide(&frames, files))
            + text_tokens(&self.head)
            + text_tokens(&self.tail))
    }
}

/// Picks the text edges: `head_end` and `tail_start` message indexes, never
/// cutting a tool result from its call.
fn edges<M: Borrow<Message>>(
    messages: &[M],
    has_earlier: bool,
    config: &ArchiveConfig,
) -> (usize, usize) {
    let len_of = |m: &M| {
        serialize_verbatim(std::slice::from_ref(m), &config.serialize)
            .chars()
            .count()
    };
    let is_tool = |i: usize| {
        messages
            .get(i)
            .is_some_and(|m| m.borrow().role == abridge_llm::Role::Tool)
    };
    // An earlier archive is the oldest history: nothing may precede it as
    // a text head.
    let mut head_end = 0;
    if !has_earlier {
        let mut used = 0;
        while head_end < messages.len() {
            let len = len_of(&messages[head_end]);
            if used + len > config.head_chars {
                break;
            }
            used += len;
            head_end += 1;
        }
        while head_end > 0 && is_tool(head_end) {
            head_end -= 1;
        }
    }
    let mut tail_start = messages.len();
    let mut used = 0;
    while tail_start > head_end {
        let len = len_of(&messages[tail_start - 1]);
        if used + len > config.tail_chars {
            break;
        }
        used += len;
        tail_start -= 1;
    }
    while tail_start < messages.len() && is_tool(tail_start) {
        tail_start += 1;
    }
    (head_end, tail_start)
}

#[cfg(test)]
mod tests;
