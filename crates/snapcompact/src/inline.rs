//! Inline imaging at request-build time: large older tool results sent as
//! frames when that costs fewer tokens (project-instruction sections of the
//! system prompt are in `instructions`). Never persisted: the session keeps
//! the text, and only the request carries pixels.

use std::sync::Arc;

use abridge_llm::Block;
use abridge_llm::ImageBilling;
use abridge_llm::ImageSource;
use abridge_llm::Message;
use abridge_llm::Role;
use abridge_llm::SharedMessage;
use base64::Engine;

use crate::budget::frame_tokens;
use crate::error::Error;
use crate::frame_cache::FrameCache;
use crate::markers::SectionMarker;
use crate::markers::default_markers;
use crate::normalize::normalize;
use crate::render::Frame;
use crate::render::Grid;
use crate::render::Ink;
use crate::render::Run;
use crate::render::paginate;
use crate::shape::FrameSpec;

/// The note put before the frames of an imaged result.
pub const INLINE_NOTE: &str = "[this tool output is printed on the image(s) below]";

/// When a tool result is worth imaging.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineConfig {
    /// Smallest result, in characters, considered. Default 8000: below
    /// that, one frame rarely beats the text.
    pub min_chars: usize,
    /// Newest tool results never imaged. Default 1: the model is most
    /// likely acting on the latest output and must read it exactly.
    pub keep_newest: usize,
    /// Image the system prompt's project-instruction sections too
    /// ([`image_instructions`](crate::image_instructions)). Default
    /// `false`: the instructions move out of the system role into a user
    /// message of frames, which a harness must opt into.
    pub instructions: bool,
    /// Smallest instruction section, in characters, considered. Default
    /// 8000, for the same reason as `min_chars`.
    pub instructions_min_chars: usize,
    /// How sections are found, tried in order at each line; the first that
    /// matches wins. Default `default_markers` (section headings, fenced blocks, XML tags).
    pub instruction_markers: Vec<SectionMarker>,
}

impl Default for InlineConfig {
    fn default() -> Self {
        InlineConfig {
            min_chars: 8000,
            keep_newest: 1,
            instructions: false,
            instructions_min_chars: 8000,
            instruction_markers: default_markers(),
        }
    }
}

/// `text` printed on frames of `grid`, drawn through `cache`.
pub(crate) fn draw(text: &str, grid: &Grid, cache: &FrameCache) -> Result<Vec<Arc<Frame>>, Error> {
    let pages = paginate(&[Run::new(Ink::Normal, normalize(text))], grid)?;
    pages.iter().map(|page| cache.render(page, grid)).collect()
}

/// What `frames` cost by `billing`.
pub(crate) fn frames_cost(frames: &[Arc<Frame>], billing: &ImageBilling) -> u64 {
    frames
        .iter()
        .map(|f| frame_tokens(billing, f.width, f.height))
        .sum()
}

/// A frame as an inline PNG image block with its pixel size.
pub(crate) fn png_block(frame: &Frame) -> Block {
    Block::Image {
        source: ImageSource::Base64 {
            media_type: "image/png".to_string(),
            data: base64::engine::general_purpose::STANDARD.encode(&frame.png),
        },
        width: Some(frame.width),
        height: Some(frame.height),
    }
}

/// Returns `messages` with every large, successful, older tool result
/// whose frames cost fewer tokens than its text (by `text_tokens`) replaced
/// by [`INLINE_NOTE`] and the frames. Errors and the newest
/// `keep_newest` results are never imaged. Messages not changed are shared,
/// not copied.
///
/// # Errors
///
/// Font and PNG errors from rendering.
pub fn image_large_results(
    messages: &[SharedMessage],
    spec: &FrameSpec,
    billing: &ImageBilling,
    text_tokens: &dyn Fn(&str) -> u64,
    config: &InlineConfig,
    cache: &FrameCache,
) -> Result<Vec<SharedMessage>, Error> {
    let grid = Grid::new(spec.shape, spec.width, spec.max_height, 0)?;
    let results: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::Tool)
        .map(|(i, _)| i)
        .collect();
    let protected = &results[results.len().saturating_sub(config.keep_newest)..];
    let mut out = Vec::with_capacity(messages.len());
    for (index, message) in messages.iter().enumerate() {
        let candidate = message.role == Role::Tool && !protected.contains(&index);
        let imaged = match message.tool_result_block() {
            Some((call_id, content, false))
                if candidate && content.iter().all(|b| matches!(b, Block::Text { .. })) =>
            {
                let text: String = content
                    .iter()
                    .filter_map(Block::as_text)
                    .collect::<Vec<_>>()
                    .join("\n");
                if text.chars().count() < config.min_chars {
                    None
                } else {
                    let frames = draw(&text, &grid, cache)?;
                    let cost = frames_cost(&frames, billing) + text_tokens(INLINE_NOTE);
                    (cost < text_tokens(&text)).then(|| {
                        let mut blocks = vec![Block::text(INLINE_NOTE)];
                        blocks.extend(frames.iter().map(|f| png_block(f)));
                        Arc::new(Message {
                            role: Role::Tool,
                            content: vec![Block::ToolResult {
                                call_id: call_id.to_string(),
                                content: blocks,
                                is_error: false,
                            }],
                            meta: message.meta.clone(),
                        })
                    })
                }
            }
            _ => None,
        };
        out.push(imaged.unwrap_or_else(|| Arc::clone(message)));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> u64 {
        (text.len() as u64).div_ceil(3)
    }

    fn imaged(message: &Message) -> bool {
        message.tool_result_block().is_some_and(|(_, content, _)| {
            content.first().and_then(Block::as_text) == Some(INLINE_NOTE)
        })
    }

    #[test]
    fn large_older_results_become_frames_but_errors_and_the_newest_stay_text() {
        let big = "let value = compute(0, 1);\n".repeat(2000);
        let messages: Vec<SharedMessage> = vec![
            Arc::new(Message::tool_result("a", big.clone(), false)),
            Arc::new(Message::tool_result("b", big.clone(), true)),
            Arc::new(Message::tool_result("c", "short", false)),
            Arc::new(Message::tool_result("d", big, false)),
        ];
        let spec = FrameSpec::for_model("claude-sonnet-4-5");
        let out = image_large_results(
            &messages,
            &spec,
            &ImageBilling::Anthropic,
            &tokens,
            &InlineConfig::default(),
            &FrameCache::default(),
        )
        .unwrap();
        let flags: Vec<bool> = out.iter().map(|m| imaged(m)).collect();
        assert_eq!(flags, [true, false, false, false]);
        assert!(
            Arc::ptr_eq(&out[1], &messages[1]),
            "unchanged messages are shared"
        );
        assert_eq!(out[0].tool_result_block().unwrap().0, "a");
    }

    #[test]
    fn results_stay_text_when_frames_would_cost_more() {
        let big = "x".repeat(9000);
        let messages: Vec<SharedMessage> = vec![
            Arc::new(Message::tool_result("a", big, false)),
            Arc::new(Message::tool_result("b", "newest", false)),
        ];
        let spec = FrameSpec::for_model("claude-sonnet-4-5");
        let cheap_text = |text: &str| (text.len() as u64) / 50;
        let out = image_large_results(
            &messages,
            &spec,
            &ImageBilling::Anthropic,
            &cheap_text,
            &InlineConfig::default(),
            &FrameCache::default(),
        )
        .unwrap();
        assert!(!imaged(&out[0]));
    }
}
