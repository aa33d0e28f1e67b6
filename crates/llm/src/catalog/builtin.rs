//! The built-in catalog entries: figures from each provider's public model
//! documentation, with the page named beside each group.

use super::ImageBilling;
use super::ImageLimits;
use super::ModelEntry;
use super::TokenizerFamily;

/// Anthropic API image limits: 100 images per request, 5 MB each, 8000 px
/// per edge. Source: Anthropic docs, "Vision" (FAQ and limits).
const ANTHROPIC_IMAGES: ImageLimits = ImageLimits {
    max_per_request: Some(100),
    max_bytes: Some(5 * 1024 * 1024),
    max_edge_px: Some(8000),
};

/// OpenAI image inputs: up to 500 images and 50 MB per request, 20 MB per
/// image (the per-request byte cap is the caller's budget, not modelled
/// here). Source: OpenAI docs, "Images and vision".
const OPENAI_IMAGES: ImageLimits = ImageLimits {
    max_per_request: Some(500),
    max_bytes: Some(20 * 1024 * 1024),
    max_edge_px: None,
};

/// Gemini: up to 3000 images per prompt (Gemini 2.5) and inline request data
/// up to 20 MB. Source: Google AI for Developers, "Image understanding".
const GEMINI_25_IMAGES: ImageLimits = ImageLimits {
    max_per_request: Some(3000),
    max_bytes: Some(20 * 1024 * 1024),
    max_edge_px: None,
};

/// Gemini 3: up to 900 images per prompt. Source: Gemini 3 model card on
/// Google AI for Developers ("Models").
const GEMINI_3_IMAGES: ImageLimits = ImageLimits {
    max_per_request: Some(900),
    max_bytes: Some(20 * 1024 * 1024),
    max_edge_px: None,
};

#[allow(clippy::too_many_arguments)]
fn entry(
    id: &str,
    patterns: &[&str],
    provider: &str,
    context_window: u64,
    max_output: u64,
    vision: bool,
    tokenizer: TokenizerFamily,
    image_billing: ImageBilling,
    images: ImageLimits,
) -> ModelEntry {
    ModelEntry {
        id: id.to_string(),
        patterns: patterns.iter().map(|p| (*p).to_string()).collect(),
        provider: provider.to_string(),
        context_window,
        max_output,
        vision,
        tokenizer,
        image_billing,
        images,
        reasoning: false,
    }
}

/// The same entry marked as a reasoning model.
fn reasoning(mut entry: ModelEntry) -> ModelEntry {
    entry.reasoning = true;
    entry
}

#[rustfmt::skip]
pub(super) fn builtin_entries() -> Vec<ModelEntry> {
    use ImageBilling as B;
    use TokenizerFamily as T;
    let none = ImageLimits::default();
    // Source for OpenAI's image rules: OpenAI docs, "Images and vision",
    // calculating costs (tile constants per model, patch caps and
    // multipliers).
    let tile_4o = B::OpenAiTile {
        base: 85,
        tile: 170,
    };
    let tile_o = B::OpenAiTile {
        base: 75,
        tile: 150,
    };
    let patches = |per_mille| B::OpenAiPatches {
        max_patches: 1536,
        per_mille,
    };
    vec![
        // Anthropic. Source: Anthropic docs, "Models overview" (extended
        // thinking on every 4.x line; context
        // window 200k for every 4.x model; 1M is a beta header, not the
        // default). Max output: Opus 4/4.1 32k, Sonnet 4/4.5, Haiku 4.5 and
        // Opus 4.5 64k.
        // Only the image rule is known to differ for this line; the window
        // and output cap are the conservative `claude` figures.
        reasoning(entry("claude-opus-4-7", &[], "anthropic", 200_000, 32_000, true, T::Claude, B::Anthropic, ANTHROPIC_IMAGES)),
        // Opus 4.6 and Sonnet 4.6 keep earlier thinking (extended thinking
        // docs); without their own entries they were read as Opus 4 and
        // Sonnet 4. Figures as Opus 4.5's and Sonnet 4.5's.
        reasoning(entry("claude-opus-4-6", &[], "anthropic", 200_000, 64_000, true, T::Claude, B::AnthropicStandard, ANTHROPIC_IMAGES)),
        reasoning(entry("claude-sonnet-4-6", &[], "anthropic", 200_000, 64_000, true, T::Claude, B::AnthropicStandard, ANTHROPIC_IMAGES)),
        // The lines with preserved thinking and prefix checks (preserved
        // thinking docs: Fable and Mythos 5.x, Opus, Sonnet and Haiku
        // 5.5) and high-resolution images. Only those two rules are known
        // here; window and output are the conservative `claude` figures.
        reasoning(entry("claude-fable-5", &[], "anthropic", 200_000, 32_000, true, T::Claude, B::Anthropic, ANTHROPIC_IMAGES)),
        reasoning(entry("claude-mythos-5", &[], "anthropic", 200_000, 32_000, true, T::Claude, B::Anthropic, ANTHROPIC_IMAGES)),
        reasoning(entry("claude-opus-5", &[], "anthropic", 200_000, 32_000, true, T::Claude, B::Anthropic, ANTHROPIC_IMAGES)),
        reasoning(entry("claude-sonnet-5", &[], "anthropic", 200_000, 32_000, true, T::Claude, B::Anthropic, ANTHROPIC_IMAGES)),
        reasoning(entry("claude-haiku-5", &[], "anthropic", 200_000, 32_000, true, T::Claude, B::Anthropic, ANTHROPIC_IMAGES)),
        reasoning(entry("claude-opus-4-5", &[], "anthropic", 200_000, 64_000, true, T::Claude, B::AnthropicStandard, ANTHROPIC_IMAGES)),
        reasoning(entry("claude-opus-4-1", &[], "anthropic", 200_000, 32_000, true, T::Claude, B::AnthropicStandard, ANTHROPIC_IMAGES)),
        reasoning(entry("claude-opus-4", &["claude-opus-4-0", "claude-4-opus"], "anthropic", 200_000, 32_000, true, T::Claude, B::AnthropicStandard, ANTHROPIC_IMAGES)),
        reasoning(entry("claude-sonnet-4-5", &[], "anthropic", 200_000, 64_000, true, T::Claude, B::AnthropicStandard, ANTHROPIC_IMAGES)),
        reasoning(entry("claude-sonnet-4", &["claude-sonnet-4-0", "claude-4-sonnet"], "anthropic", 200_000, 64_000, true, T::Claude, B::AnthropicStandard, ANTHROPIC_IMAGES)),
        reasoning(entry("claude-haiku-4-5", &[], "anthropic", 200_000, 64_000, true, T::Claude, B::AnthropicStandard, ANTHROPIC_IMAGES)),
        // Older or future Claude lines: the common 200k window, the smaller
        // output figure.
        entry("claude", &[], "anthropic", 200_000, 32_000, true, T::Claude, B::AnthropicStandard, ANTHROPIC_IMAGES),
        // OpenAI. Source: OpenAI docs, "Models" pages of each model;
        // "Reasoning models" for which lines reason (o-series, GPT-5 except
        // the chat-tuned variants, gpt-oss).
        // GPT-5.x: 400k window, 128k output. Images at `original` detail,
        // which the encoders ask for (at `auto` a 2048 px frame would be
        // scaled down to 2500 patches).
        reasoning(entry("gpt-5", &["gpt-5-codex", "gpt-5-1", "gpt-5-2"], "openai", 400_000, 128_000, true, T::O200k, B::OpenAi, OPENAI_IMAGES)),
        // GPT-5 mini and nano: patches up to 1536, times the multiplier
        // "Images and vision" gives (1.62, 2.46; OpenAI's pricing
        // calculator uses 1.2 and 1.5, so these may count high).
        reasoning(entry("gpt-5-mini", &[], "openai", 400_000, 128_000, true, T::O200k, patches(1620), OPENAI_IMAGES)),
        reasoning(entry("gpt-5-nano", &[], "openai", 400_000, 128_000, true, T::O200k, patches(2460), OPENAI_IMAGES)),
        // The chat-tuned GPT-5 variants have a 128k window, 16k output.
        entry("gpt-5-chat", &["gpt-5-1-chat", "gpt-5-2-chat"], "openai", 128_000, 16_384, true, T::O200k, B::OpenAi, OPENAI_IMAGES),
        // GPT-4.1 family: 1,047,576 window, 32,768 output; GPT-4.1 bills
        // tiles, its mini and nano patches (1.62 and 2.46).
        entry("gpt-4-1", &[], "openai", 1_047_576, 32_768, true, T::O200k, tile_4o, OPENAI_IMAGES),
        entry("gpt-4-1-mini", &[], "openai", 1_047_576, 32_768, true, T::O200k, patches(1620), OPENAI_IMAGES),
        entry("gpt-4-1-nano", &[], "openai", 1_047_576, 32_768, true, T::O200k, patches(2460), OPENAI_IMAGES),
        // o1: 200k window, 100k output; o1-mini: 128k window, 65,536
        // output, text only. o1 and o3 bill tiles at 75 + 150 each.
        reasoning(entry("o1", &["o1-pro"], "openai", 200_000, 100_000, true, T::O200k, tile_o, OPENAI_IMAGES)),
        reasoning(entry("o1-mini", &[], "openai", 128_000, 65_536, false, T::O200k, tile_o, none)),
        // o3 and o4-mini: 200k window, 100k output; o4-mini bills patches
        // (1.72).
        reasoning(entry("o3", &["o3-pro"], "openai", 200_000, 100_000, true, T::O200k, tile_o, OPENAI_IMAGES)),
        reasoning(entry("o3-mini", &[], "openai", 200_000, 100_000, false, T::O200k, tile_o, none)),
        reasoning(entry("o4-mini", &[], "openai", 200_000, 100_000, true, T::O200k, patches(1720), OPENAI_IMAGES)),
        // codex-mini (`codex-mini-latest`): o4-mini tuned for Codex, a
        // reasoning model; unknown to the catalog it was read as a model
        // that does not reason, so no encrypted reasoning was asked for.
        reasoning(entry("codex-mini", &["codex-mini-latest"], "openai", 200_000, 100_000, true, T::O200k, patches(1720), OPENAI_IMAGES)),
        // GPT-4o and GPT-4o mini: 128k window, 16,384 output; GPT-4o mini
        // bills tiles at 2833 + 5667 each.
        entry("gpt-4o", &["chatgpt-4o"], "openai", 128_000, 16_384, true, T::O200k, tile_4o, OPENAI_IMAGES),
        entry("gpt-4o-mini", &[], "openai", 128_000, 16_384, true, T::O200k, B::OpenAiTile { base: 2833, tile: 5667 }, OPENAI_IMAGES),
        // GPT-4 Turbo / GPT-4 / GPT-3.5 use cl100k. Source: tiktoken's
        // model-to-encoding table.
        entry("gpt-4-turbo", &[], "openai", 128_000, 4_096, true, T::Cl100k, tile_4o, OPENAI_IMAGES),
        entry("gpt-4", &[], "openai", 8_192, 8_192, false, T::Cl100k, tile_4o, none),
        entry("gpt-3-5-turbo", &[], "openai", 16_385, 4_096, false, T::Cl100k, tile_4o, none),
        // Open-weight gpt-oss (often served by llama.cpp or vLLM): 131,072
        // window, harmony tokenizer (o200k for ordinary text). Source:
        // OpenAI gpt-oss model card.
        reasoning(entry("gpt-oss", &["gpt-oss-20b", "gpt-oss-120b"], "openai", 131_072, 131_072, false, T::O200k, B::OpenAi, none)),
        // Google. Source: Google AI for Developers, "Gemini models"
        // (1,048,576 input, 65,536 output) and "Image understanding" (tile
        // billing for 2.x; Gemini 3 bills images by media resolution, high
        // = 1120 tokens, the default for images).
        reasoning(entry("gemini-3-pro", &["gemini-3-pro-preview"], "google", 1_048_576, 65_536, true, T::Gemini, B::Google, GEMINI_3_IMAGES)),
        reasoning(entry("gemini-3-flash", &[], "google", 1_048_576, 65_536, true, T::Gemini, B::Google, GEMINI_3_IMAGES)),
        reasoning(entry("gemini-3", &[], "google", 1_048_576, 65_536, true, T::Gemini, B::Google, GEMINI_3_IMAGES)),
        reasoning(entry("gemini-2-5-pro", &[], "google", 1_048_576, 65_536, true, T::Gemini, B::GeminiTile, GEMINI_25_IMAGES)),
        reasoning(entry("gemini-2-5-flash", &["gemini-2-5-flash-lite"], "google", 1_048_576, 65_536, true, T::Gemini, B::GeminiTile, GEMINI_25_IMAGES)),
        entry("gemini", &[], "google", 1_048_576, 8_192, true, T::Gemini, B::GeminiTile, GEMINI_25_IMAGES),
        // DeepSeek. Source: DeepSeek API docs, "Models & Pricing"
        // (V3.2: 128k window; deepseek-chat max output 8k, deepseek-reasoner
        // 64k). Text only.
        entry("deepseek-chat", &["deepseek-v3"], "deepseek", 128_000, 8_192, false, T::DeepSeek, B::Anthropic, none),
        reasoning(entry("deepseek-reasoner", &["deepseek-r1"], "deepseek", 128_000, 65_536, false, T::DeepSeek, B::Anthropic, none)),
        entry("deepseek", &[], "deepseek", 128_000, 8_192, false, T::DeepSeek, B::Anthropic, none),
        // Qwen. Source: Alibaba Cloud Model Studio model list (qwen3-max
        // 262,144 window / 65,536 output; qwen3-coder-plus 1,000,000 /
        // 65,536; qwen3-vl-plus 262,144 / 32,768 with 32 px merged patches)
        // and the Qwen3 model cards for open weights (32,768 native, 131,072
        // with YaRN; we take the native figure).
        entry("qwen3-max", &[], "qwen", 262_144, 65_536, false, T::Qwen, B::Anthropic, none),
        entry("qwen3-coder-plus", &["qwen3-coder"], "qwen", 1_000_000, 65_536, false, T::Qwen, B::Anthropic, none),
        entry("qwen3-vl", &["qwen3-vl-plus"], "qwen", 262_144, 32_768, true, T::Qwen, B::Patch { patch: 32, max_patches: 16_384 }, none),
        entry("qwen2-5-vl", &[], "qwen", 32_768, 8_192, true, T::Qwen, B::Patch { patch: 28, max_patches: 16_384 }, none),
        entry("qwen3", &["qwen"], "qwen", 32_768, 8_192, false, T::Qwen, B::Anthropic, none),
        // Kimi. Source: Moonshot AI platform docs (kimi-k2-0905-preview and
        // kimi-k2-thinking: 262,144 window). No separate output cap is
        // documented; we assume 32,768.
        entry("kimi-k2", &["kimi-k2-thinking", "kimi-k2-0905", "kimi-latest"], "moonshot", 262_144, 32_768, false, T::Kimi, B::Anthropic, none),
        entry("kimi", &[], "moonshot", 131_072, 32_768, false, T::Kimi, B::Anthropic, none),
        // GLM. Source: Z.ai developer docs (GLM-4.6: 200k window, 128k
        // output; GLM-4.5: 128k / 96k; GLM-4.5V: 64k window, 16k output,
        // vision).
        entry("glm-4-6", &[], "zai", 200_000, 128_000, false, T::Glm, B::Anthropic, none),
        entry("glm-4-5v", &[], "zai", 65_536, 16_384, true, T::Glm, B::Patch { patch: 28, max_patches: 16_384 }, none),
        entry("glm-4-5", &["glm-4-5-air"], "zai", 131_072, 98_304, false, T::Glm, B::Anthropic, none),
        entry("glm", &[], "zai", 131_072, 16_384, false, T::Glm, B::Anthropic, none),
        // llama.cpp-served open models. The real window is the server's
        // `--ctx-size`; these are the models' trained figures, to be
        // overridden when the server runs smaller. Sources: the Meta Llama
        // 3.1+ model cards (128k), Gemma 3 model card (128k for 4B and up;
        // 256 tokens per image at 896 px), Mistral Small 3.x card (128k).
        entry("llama-3", &["meta-llama-3", "llama3"], "llama.cpp", 131_072, 8_192, false, T::Llama, B::Anthropic, none),
        entry("llama-4", &[], "llama.cpp", 131_072, 8_192, true, T::Llama, B::Patch { patch: 28, max_patches: 16_384 }, none),
        entry("gemma-3", &["gemma3"], "llama.cpp", 131_072, 8_192, true, T::Gemini, B::Flat { tokens: 256 }, none),
        entry("mistral-small", &[], "llama.cpp", 131_072, 8_192, true, T::Unknown, B::Patch { patch: 28, max_patches: 16_384 }, none),
        // Anything explicitly routed through llama.cpp but not named above:
        // llama-server's own default context size is 4096 unless the model
        // says otherwise; we assume 8192 and no vision.
        entry("llama-cpp", &["llamacpp", "local"], "llama.cpp", 8_192, 4_096, false, T::Unknown, B::Anthropic, none),
    ]
}
