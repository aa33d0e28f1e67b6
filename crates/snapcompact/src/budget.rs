//! What a frame costs and how many frames a request can carry.
//!
//! A frame is billed by its pixel size, never by the text on it; that is the
//! whole reason snapcompact saves tokens. Three limits bound how many frames
//! one request may carry: the tokens left in the window, the provider's
//! images-per-request limit, and the request's byte size (frames travel as
//! base64). A fourth bounds what a checkpoint may cost at all: the room the
//! pass's goal leaves after the fixed part and the kept history
//! (`Plan::room`). [`frame_budget`] is the one place that combines them, so
//! the planner and the request builder can never disagree.

use abridge_llm::ImageBilling;

/// Default byte budget for all frames of one request, counted as base64:
/// 3 MB, well under every provider's request size limit (Anthropic 32 MB,
/// OpenAI 50 MB) while leaving room for the rest of the request.
pub const DEFAULT_BYTE_BUDGET: u64 = 3_000_000;

/// Tokens one image of `width` x `height` costs under `billing`.
///
/// The crate's single billing call: it forwards to abridge-meter, so frames
/// are planned with the same figures the meter counts them at.
pub fn frame_tokens(billing: &ImageBilling, width: u32, height: u32) -> u64 {
    abridge_meter::image_tokens(*billing, width, height)
}

/// Base64 length of `bytes` bytes of PNG.
pub fn base64_len(bytes: usize) -> u64 {
    u64::try_from(bytes.div_ceil(3) * 4).unwrap_or(u64::MAX)
}

/// What limits the number of frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The tokens left in the window.
    Tokens,
    /// The provider's images-per-request limit.
    Images,
    /// The request byte budget.
    Bytes,
    /// The room under the pass's goal.
    Room,
}

impl Limit {
    /// A short name for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Limit::Tokens => "tokens left in the window",
            Limit::Images => "images per request",
            Limit::Bytes => "request byte budget",
            Limit::Room => "room under the pass's goal",
        }
    }
}

/// The inputs of [`frame_budget`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetInputs {
    /// Tokens the frames may cost in all: the window left after the rest
    /// of the request (system prompt, text edges, kept history, reply).
    pub tokens_left: u64,
    /// Tokens one full frame costs ([`frame_tokens`]).
    pub tokens_per_frame: u64,
    /// The provider's images-per-request limit minus images the request
    /// already carries; `None` when the provider states none.
    pub images_left: Option<u32>,
    /// Base64 bytes all frames may take ([`DEFAULT_BYTE_BUDGET`]).
    pub byte_budget: u64,
    /// Base64 bytes one full frame takes: measured when frames are already
    /// rendered, else an estimate.
    pub bytes_per_frame: u64,
    /// Tokens the whole checkpoint may cost to reach the pass's goal
    /// (`Plan::room`); `None` when the pass has no goal.
    pub room: Option<u64>,
}

/// How many frames fit, and which limit decided it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameBudget {
    /// Most frames the request may carry.
    pub frames: usize,
    /// The limit that bound first.
    pub limited_by: Limit,
}

/// The frame budget: the least of what the window, the image limit and the
/// byte budget allow.
pub fn frame_budget(inputs: &BudgetInputs) -> FrameBudget {
    let by_tokens = inputs.tokens_left / inputs.tokens_per_frame.max(1);
    let by_images = inputs.images_left.map_or(u64::MAX, u64::from);
    let by_bytes = inputs.byte_budget / inputs.bytes_per_frame.max(1);
    let by_room = inputs
        .room
        .map_or(u64::MAX, |room| room / inputs.tokens_per_frame.max(1));
    let (frames, limited_by) = [
        (by_tokens, Limit::Tokens),
        (by_images, Limit::Images),
        (by_bytes, Limit::Bytes),
        (by_room, Limit::Room),
    ]
    .into_iter()
    .min_by_key(|(n, _)| *n)
    .unwrap_or((0, Limit::Tokens));
    FrameBudget {
        frames: usize::try_from(frames).unwrap_or(usize::MAX),
        limited_by,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn billing_follows_each_family() {
        assert_eq!(frame_tokens(&ImageBilling::Anthropic, 1568, 752), 1588); // 56x27 patches
        assert_eq!(frame_tokens(&ImageBilling::Anthropic, 8000, 8000), 5024); // capped at 4784
        assert_eq!(frame_tokens(&ImageBilling::OpenAi, 2048, 2048), 4916); // 64x64 x 1.2
        let tiles = ImageBilling::OpenAiTile {
            base: 85,
            tile: 170,
        };
        assert_eq!(frame_tokens(&tiles, 1024, 1024), 765);
        assert_eq!(frame_tokens(&tiles, 2048, 768), 85 + 170 * 8);
        assert_eq!(frame_tokens(&ImageBilling::GeminiTile, 2048, 1536), 258 * 6);
        assert_eq!(frame_tokens(&ImageBilling::GeminiTile, 300, 300), 258);
        assert_eq!(frame_tokens(&ImageBilling::Google, 2048, 2048), 1120);
        assert_eq!(
            frame_tokens(&ImageBilling::Flat { tokens: 256 }, 10, 10),
            256
        );
    }

    fn inputs() -> BudgetInputs {
        BudgetInputs {
            tokens_left: 100_000,
            tokens_per_frame: 1_000,
            images_left: Some(100),
            byte_budget: DEFAULT_BYTE_BUDGET,
            bytes_per_frame: 50_000,
            room: None,
        }
    }

    #[test]
    fn the_tightest_limit_wins_and_is_named() {
        assert_eq!(
            frame_budget(&inputs()),
            FrameBudget {
                frames: 60,
                limited_by: Limit::Bytes
            }
        );
        let few_tokens = BudgetInputs {
            tokens_left: 4_500,
            ..inputs()
        };
        assert_eq!(
            frame_budget(&few_tokens),
            FrameBudget {
                frames: 4,
                limited_by: Limit::Tokens
            }
        );
        let few_images = BudgetInputs {
            images_left: Some(3),
            ..inputs()
        };
        assert_eq!(
            frame_budget(&few_images),
            FrameBudget {
                frames: 3,
                limited_by: Limit::Images
            }
        );
        let little_room = BudgetInputs {
            room: Some(2_500),
            ..inputs()
        };
        assert_eq!(
            frame_budget(&little_room),
            FrameBudget {
                frames: 2,
                limited_by: Limit::Room
            }
        );
        let no_limit = BudgetInputs {
            images_left: None,
            byte_budget: u64::MAX,
            ..inputs()
        };
        assert_eq!(frame_budget(&no_limit).frames, 100);
    }

    #[test]
    fn zero_costs_do_not_divide_by_zero() {
        let free = BudgetInputs {
            tokens_per_frame: 0,
            bytes_per_frame: 0,
            ..inputs()
        };
        assert_eq!(frame_budget(&free).frames, 100);
    }
}
