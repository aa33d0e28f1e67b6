//! What an image costs, by provider billing family and pixel size.
//!
//! Every formula is integer arithmetic on clamped dimensions, so no size
//! can panic or overflow: a zero edge counts as 1 px, an edge above
//! [`MAX_IMAGE_EDGE`] as that edge (providers reject such images; we bill
//! them as the largest we model). An image whose size is unknown and cannot
//! be read from its header is billed as [`UNKNOWN_IMAGE_EDGE`] square.

use abridge_llm::ImageBilling;
use abridge_llm::ImageSource;
use abridge_llm::sniff_size;

/// Largest edge in pixels the formulas take; larger edges are clamped.
pub const MAX_IMAGE_EDGE: u32 = 65_535;

/// Edge of the square an image of unknown size is billed as: 2048 px, the
/// box OpenAI fits images into and past the point where the Anthropic,
/// OpenAI original-detail and Google formulas reach (or come near) their
/// caps, so an unknown image is not undercounted.
pub const UNKNOWN_IMAGE_EDGE: u32 = 2048;

/// Anthropic's high-resolution lines (Claude Opus 4.7 and later): scaled
/// down (aspect kept) until the long edge is at most
/// [`ANTHROPIC_MAX_EDGE`] and the image at most 4784 patches of 28 x 28
/// px (about 3.75 MP), then patches of 28 x 28 px, at most 4784 billed,
/// times 1.05.
///
/// Source: Anthropic docs, "Vision" (cost is `width * height / 750`
/// tokens, which is 1.045 tokens per 784 px patch, and images past the
/// size limits are scaled down before billing; Claude Opus 4.7 reads a
/// long edge up to 2576 px, about 3.75 MP). 1568 x 1568 -> 3293;
/// 8000 x 1000 is read at 2576 x 322 -> 1160.
fn anthropic(w: u64, h: u64) -> u64 {
    let (w, h) = scaled_to(w, h, ANTHROPIC_MAX_EDGE, ANTHROPIC_MAX_PATCHES * 28 * 28);
    let patches = (w.div_ceil(28) * h.div_ceil(28)).min(ANTHROPIC_MAX_PATCHES);
    (patches * 105).div_ceil(100)
}

/// Longest edge a high-resolution Claude line reads without scaling.
const ANTHROPIC_MAX_EDGE: u64 = 2576;
/// Most 28 px patches a high-resolution Claude line bills for one image.
const ANTHROPIC_MAX_PATCHES: u64 = 4784;

/// `w x h` scaled down (aspect kept, rounded down, at least 1 px) until
/// the long edge is at most `max_edge` and the area at most `max_pixels`.
fn scaled_to(w: u64, h: u64, max_edge: u64, max_pixels: u64) -> (u64, u64) {
    let (wf, hf) = (w as f64, h as f64);
    let edge = max_edge as f64 / wf.max(hf);
    let area = (max_pixels as f64 / (wf * hf)).sqrt();
    let scale = edge.min(area).min(1.0);
    if scale >= 1.0 {
        return (w, h);
    }
    (
        ((wf * scale).floor() as u64).max(1),
        ((hf * scale).floor() as u64).max(1),
    )
}

/// Anthropic's earlier lines: scaled down (aspect kept) until the long
/// edge is at most 1568 px and the image at most 1,200,000 px (about 1,600
/// tokens), then `width * height / 750` tokens. 1568 x 1568 is read as
/// about 1095 x 1095 and billed 1,599; 1568 x 752 is read as it is, 1,573.
///
/// Source: Anthropic docs, "Vision" (evaluate image size: the 1568 px and
/// ~1,600-token limits and the `/ 750` estimate; Claude Opus 4.7 raised the
/// long edge to 2576 px).
fn anthropic_standard(w: u64, h: u64) -> u64 {
    let (w, h) = anthropic_standard_size(w, h);
    (w * h).div_ceil(750)
}

/// Largest pixel budget of an earlier Claude line before it scales down.
pub const ANTHROPIC_STANDARD_MAX_PIXELS: u64 = 1_200_000;
/// Longest edge an earlier Claude line reads without scaling.
pub const ANTHROPIC_STANDARD_MAX_EDGE: u64 = 1568;

/// The size an earlier Claude line reads an image at.
pub fn anthropic_standard_size(w: u64, h: u64) -> (u64, u64) {
    scaled_to(
        w,
        h,
        ANTHROPIC_STANDARD_MAX_EDGE,
        ANTHROPIC_STANDARD_MAX_PIXELS,
    )
}

/// OpenAI with `detail: "original"`: at most 6000 px a side and 10000
/// patches of 32 x 32 px, times 1.2. 1568 x 1568 -> 2882.
///
/// Source: OpenAI docs, "Images and vision", calculating costs for
/// patch-based models.
fn openai_original(w: u64, h: u64) -> u64 {
    let (w, h) = scaled_to(w, h, 6000, 10_000 * 32 * 32);
    openai_patches(w, h, 10_000, 1200)
}

/// OpenAI's patch models: 32 x 32 px patches; an image past `max_patches`
/// is scaled down to fit (aspect kept), then the patches, at most
/// `max_patches`, cost `per_mille / 1000` each. GPT-4.1 mini (1536,
/// 1.62): 1024 x 1024 -> 1659; 1800 x 2400 is read as at most 1536
/// patches -> 2489.
///
/// Source: OpenAI docs, "Images and vision", calculating costs for
/// patch-based models (the scale-to-fit step and the per-model
/// multipliers).
fn openai_patches(w: u64, h: u64, max_patches: u32, per_mille: u32) -> u64 {
    let cap = u64::from(max_patches.max(1));
    let (w, h) = scaled_to(w, h, u64::MAX, cap * 32 * 32);
    let patches = (w.div_ceil(32) * h.div_ceil(32)).min(cap);
    (patches * u64::from(per_mille)).div_ceil(1000)
}

/// OpenAI tiles (`detail: "high"`, GPT-4o / GPT-4.1 / o3): scale to fit
/// 2048 x 2048, then so the shorter side is at most 768, then count 512 px
/// tiles: `base + tile * tiles`.
///
/// Source: OpenAI docs, "Images and vision", calculating costs (GPT-4o:
/// 85 base, 170 per tile). 1024 x 1024 -> 765.
fn openai_tiles(w: u64, h: u64, base: u32, tile: u32) -> u64 {
    let (mut w, mut h) = (w as f64, h as f64);
    let fit = (2048.0 / w.max(h)).min(1.0);
    w *= fit;
    h *= fit;
    let short = (768.0 / w.min(h)).min(1.0);
    w = (w * short).floor().max(1.0);
    h = (h * short).floor().max(1.0);
    let tiles = ((w / 512.0).ceil() * (h / 512.0).ceil()) as u64;
    u64::from(base) + u64::from(tile) * tiles
}

/// Google Gemini 3: a flat 1120 tokens per image, the default
/// (`media_resolution_high`) for images.
///
/// Source: Google AI for Developers, "Gemini 3 developer guide", media
/// resolution table.
const GOOGLE_FLAT: u64 = 1120;

/// Google Gemini 2.x: 258 tokens when both edges are at most 384 px, else
/// 258 per 768 x 768 tile.
///
/// Source: Google AI for Developers, "Image understanding" (token
/// calculation).
fn gemini_tiles(w: u64, h: u64) -> u64 {
    if w <= 384 && h <= 384 {
        258
    } else {
        258 * w.div_ceil(768) * h.div_ceil(768)
    }
}

/// Merged patches (Qwen-VL and llama.cpp projectors of that kind): one
/// token per `patch` x `patch` px, at most `max_patches`.
///
/// Source: Qwen2.5-VL technical report (14 px patches merged 2 x 2 = 28
/// px per token); Qwen3-VL uses 16 px patches, 32 px per token.
fn patches(w: u64, h: u64, patch: u32, max_patches: u32) -> u64 {
    let p = u64::from(patch.max(1));
    (w.div_ceil(p) * h.div_ceil(p)).min(u64::from(max_patches))
}

/// Tokens one image of `width` x `height` pixels costs under `family`.
///
/// Zero edges count as 1 px and edges above [`MAX_IMAGE_EDGE`] as that
/// edge; the result is always finite and at least 1.
pub fn image_tokens(family: ImageBilling, width: u32, height: u32) -> u64 {
    let w = u64::from(width.clamp(1, MAX_IMAGE_EDGE));
    let h = u64::from(height.clamp(1, MAX_IMAGE_EDGE));
    let tokens = match family {
        ImageBilling::Anthropic => anthropic(w, h),
        ImageBilling::AnthropicStandard => anthropic_standard(w, h),
        ImageBilling::OpenAi => openai_original(w, h),
        ImageBilling::OpenAiPatches {
            max_patches,
            per_mille,
        } => openai_patches(w, h, max_patches, per_mille),
        ImageBilling::OpenAiTile { base, tile } => openai_tiles(w, h, base, tile),
        ImageBilling::Google => GOOGLE_FLAT,
        ImageBilling::GeminiTile => gemini_tiles(w, h),
        ImageBilling::Patch { patch, max_patches } => patches(w, h, patch, max_patches),
        ImageBilling::Flat { tokens } => u64::from(tokens),
    };
    tokens.max(1)
}

/// Tokens an image block costs: by its stated size, else by the size in its
/// inline header (PNG, GIF, JPEG, WebP), else as an
/// [`UNKNOWN_IMAGE_EDGE`] square.
pub fn image_block_tokens(
    family: ImageBilling,
    source: &ImageSource,
    width: Option<u32>,
    height: Option<u32>,
) -> u64 {
    let (w, h) = match (width, height) {
        (Some(w), Some(h)) => (w, h),
        _ => sniff_size(source).unwrap_or((UNKNOWN_IMAGE_EDGE, UNKNOWN_IMAGE_EDGE)),
    };
    image_tokens(family, w, h)
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use base64::Engine;

    use super::*;

    #[test]
    fn anthropic_formula() {
        let f = ImageBilling::Anthropic;
        assert_eq!(image_tokens(f, 1568, 1568), 3293);
        assert_eq!(image_tokens(f, 28, 28), 2); // ceil(1 * 1.05)
        assert_eq!(image_tokens(f, 1000, 1000), 1361); // 36 * 36 = 1296 * 1.05 = 1360.8
        assert_eq!(image_tokens(f, 8000, 8000), 5024); // capped: 4784 * 1.05
    }

    /// Issue 29: the high-resolution line reads a long edge past 2576 px
    /// scaled down to it, so a wide screenshot costs its scaled patches,
    /// not the cap.
    #[test]
    fn high_resolution_claude_scales_to_its_long_edge_before_counting() {
        let f = ImageBilling::Anthropic;
        // 8000 x 1000 is read at 2576 x 322: 92 x 12 patches.
        assert_eq!(
            image_tokens(f, 8000, 1000),
            (92 * 12 * 105_u64).div_ceil(100)
        );
        // Within the edge and the pixel budget: as sent.
        assert_eq!(image_tokens(f, 2576, 322), image_tokens(f, 8000, 1000));
    }

    /// Issue 29: the mini and nano lines and o4-mini bill 32 px patches
    /// scaled to a cap, times their multiplier; o-series and GPT-4o mini
    /// tiles have their own constants; GPT-5.x is billed at the
    /// `original` detail its requests ask for.
    #[test]
    fn openai_lines_bill_by_their_own_documented_rule() {
        let catalog = abridge_llm::Catalog::builtin();
        let tokens =
            |model: &str, w, h| image_tokens(catalog.lookup(model).entry.image_billing, w, h);
        // GPT-4.1 mini: 1800 x 2400 is 57 x 75 = 4275 patches, past 1536:
        // scaled to at most 1536, times 1.62.
        let mini = tokens("gpt-4.1-mini", 1800, 2400);
        assert!(
            mini <= (1536 * 162_u64).div_ceil(100) && mini > 1400 * 162 / 100,
            "{mini}"
        );
        // 1024 x 1024 is 32 x 32 patches: GPT-5 pays 1.2 each, o4-mini
        // 1.72.
        assert_eq!(tokens("gpt-5", 1024, 1024), (1024 * 12_u64).div_ceil(10));
        assert_eq!(
            tokens("o4-mini", 1024, 1024),
            (1024 * 172_u64).div_ceil(100)
        );
        // o3 tiles: 75 + 150 x 4 for 1024 x 1024; GPT-4o mini 2833 + 5667 x 4.
        assert_eq!(tokens("o3", 1024, 1024), 75 + 150 * 4);
        assert_eq!(tokens("gpt-4o-mini", 1024, 1024), 2833 + 5667 * 4);
        // GPT-5 at original detail reads a 2048 px frame whole.
        assert_eq!(tokens("gpt-5.4", 2048, 2048), (4096 * 12_u64).div_ceil(10));
    }

    #[test]
    fn earlier_claude_lines_scale_large_images_down_first() {
        let f = ImageBilling::AnthropicStandard;
        // Inside both limits: billed as sent.
        assert_eq!(image_tokens(f, 1000, 1000), 1334);
        assert_eq!(image_tokens(f, 1568, 752), 1573);
        // A 1568 px square passes the pixel budget: read at about 1095 px.
        assert_eq!(anthropic_standard_size(1568, 1568), (1095, 1095));
        assert_eq!(image_tokens(f, 1568, 1568), 1599);
        // A long edge past 1568 is scaled to it (and then to the budget).
        assert_eq!(anthropic_standard_size(3136, 200), (1568, 100));
        // Never more than the budget, however large.
        assert!(image_tokens(f, 8000, 8000) <= 1600);
        // Half of what the high-resolution rule bills for the same frame.
        assert!(
            image_tokens(f, 1568, 1568) * 2 < image_tokens(ImageBilling::Anthropic, 1568, 1568)
        );
    }

    #[test]
    fn openai_original_formula() {
        let f = ImageBilling::OpenAi;
        assert_eq!(image_tokens(f, 1568, 1568), 2882);
        assert_eq!(image_tokens(f, 32, 32), 2); // ceil(1.2)
        assert_eq!(image_tokens(f, 1024, 768), 922); // 32 * 24 = 768 * 1.2 = 921.6
        assert_eq!(image_tokens(f, 10_000, 10_000), 12_000); // capped
    }

    #[test]
    fn openai_tile_formula() {
        let f = ImageBilling::OpenAiTile {
            base: 85,
            tile: 170,
        };
        // OpenAI's worked examples: 1024 x 1024 -> 765; 2048 x 4096 -> 1105.
        assert_eq!(image_tokens(f, 1024, 1024), 765);
        assert_eq!(image_tokens(f, 2048, 4096), 1105);
        assert_eq!(image_tokens(f, 512, 512), 255);
    }

    #[test]
    fn google_formulas() {
        assert_eq!(image_tokens(ImageBilling::Google, 1568, 1568), 1120);
        assert_eq!(image_tokens(ImageBilling::Google, 1, 1), 1120);
        assert_eq!(image_tokens(ImageBilling::GeminiTile, 384, 384), 258);
        assert_eq!(image_tokens(ImageBilling::GeminiTile, 1568, 1568), 258 * 9);
    }

    #[test]
    fn patch_and_flat_formulas() {
        let qwen = ImageBilling::Patch {
            patch: 28,
            max_patches: 16_384,
        };
        assert_eq!(image_tokens(qwen, 280, 280), 100);
        assert_eq!(
            image_tokens(
                ImageBilling::Patch {
                    patch: 0,
                    max_patches: 10
                },
                5,
                5
            ),
            10
        );
        assert_eq!(
            image_tokens(ImageBilling::Flat { tokens: 256 }, 4000, 10),
            256
        );
        assert_eq!(image_tokens(ImageBilling::Flat { tokens: 0 }, 4000, 10), 1);
    }

    #[test]
    fn absurd_sizes_are_finite_and_never_panic() {
        for family in [
            ImageBilling::Anthropic,
            ImageBilling::OpenAi,
            ImageBilling::OpenAiTile {
                base: 85,
                tile: 170,
            },
            ImageBilling::Google,
            ImageBilling::GeminiTile,
            ImageBilling::Patch {
                patch: 28,
                max_patches: u32::MAX,
            },
            ImageBilling::Flat { tokens: u32::MAX },
        ] {
            for (w, h) in [(0, 0), (0, 5000), (u32::MAX, u32::MAX), (1, u32::MAX)] {
                let t = image_tokens(family, w, h);
                assert!((1..u64::MAX / 1024).contains(&t), "{family:?} {w}x{h}: {t}");
            }
        }
        assert_eq!(image_tokens(ImageBilling::Anthropic, 0, 0), 2);
    }

    fn b64(bytes: &[u8]) -> ImageSource {
        ImageSource::Base64 {
            media_type: "image/png".into(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    #[test]
    fn unknown_sizes_bill_as_the_documented_square() {
        let garbage = ImageSource::Base64 {
            media_type: "image/png".into(),
            data: "not base64 at all!".into(),
        };
        let url = ImageSource::Url {
            url: "https://example.com/cat.png".into(),
        };
        for source in [garbage, url] {
            assert_eq!(
                image_block_tokens(ImageBilling::Anthropic, &source, None, None),
                image_tokens(
                    ImageBilling::Anthropic,
                    UNKNOWN_IMAGE_EDGE,
                    UNKNOWN_IMAGE_EDGE
                )
            );
        }
        // A stated size wins over the header.
        assert_eq!(
            image_block_tokens(ImageBilling::Anthropic, &b64(b"junk"), Some(28), Some(28)),
            2
        );
    }
}
