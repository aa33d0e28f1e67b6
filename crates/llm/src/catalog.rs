//! The model catalog: what each model line accepts and how it counts.
//!
//! Every figure that decides when to compact (the window), how much a reply
//! may add (max output), whether frames can be sent (vision) and what they
//! cost (image billing family, per-request limits) lives here as data, so a
//! user can correct it without a release: [`Catalog::add`] replaces or adds
//! entries, typically deserialized from a JSON or TOML list of
//! [`ModelEntry`].
//!
//! # Lookup
//!
//! A model id is normalized before matching: lower case, `.` and `_` read
//! as `-`, gateway prefixes dropped (`openrouter/anthropic/claude-sonnet-4.5`
//! and `bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0` both become
//! `claude-sonnet-4-5...`), and `@date` / `:tag` suffixes ignored. Then:
//!
//! 1. an entry whose id equals the normalized id ([`Match::Exact`]);
//! 2. else the entry with the longest pattern that prefixes the id at a `-`
//!    boundary ([`Match::Family`]): `claude-sonnet-4-5-20250929` is a
//!    `claude-sonnet-4-5`, `gpt-4o-mini-2024-07-18` a `gpt-4o-mini`, never
//!    a `gpt-4o`;
//! 3. else [`ModelEntry::conservative_default`] ([`Match::Default`]): a small
//!    window, so an unknown model is compacted early rather than overflowed.
//!
//! Entries added later win ties, so user entries override built-in ones.
//!
//! # Sources
//!
//! Figures were taken from each provider's public model documentation as
//! of late 2025; the comment beside each group names the page. Where a
//! provider states no figure, the field is `None` or the comment says what
//! was assumed.

use serde::Deserialize;
use serde::Serialize;

/// The tokenizer a model line uses, so the meter can pick the closest exact
/// tokenizer it has.
///
/// Only `O200k` and `Cl100k` are public BPEs the meter runs exactly; the
/// others are counted with o200k as a proxy and corrected by anchoring to
/// the provider's reported usage (see abridge-meter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenizerFamily {
    /// OpenAI o200k_base (GPT-4o, GPT-4.1, GPT-5.x, o-series; gpt-oss uses
    /// its harmony variant, identical for ordinary text).
    O200k,
    /// OpenAI cl100k_base (GPT-4, GPT-3.5).
    Cl100k,
    /// Anthropic's tokenizer (not public).
    Claude,
    /// Google's Gemini / Gemma SentencePiece vocabulary.
    Gemini,
    /// DeepSeek's byte-level BPE.
    DeepSeek,
    /// Qwen's byte-level BPE.
    Qwen,
    /// Moonshot Kimi's tokenizer.
    Kimi,
    /// Zhipu GLM's tokenizer.
    Glm,
    /// Meta Llama 3.x / 4 (tiktoken-style BPE, 128k vocabulary).
    Llama,
    /// Not known.
    Unknown,
}

/// How a provider bills an image for its pixel size.
///
/// The formulas themselves live in abridge-meter (`image_tokens`); this
/// names which one applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageBilling {
    /// Anthropic's high-resolution lines (Claude Opus 4.7 and later): 28 px
    /// patches, at most 4784, times 1.05; a long edge up to 2576 px is
    /// read as it is.
    Anthropic,
    /// Anthropic's earlier lines (Claude 4.6 and before): an image whose
    /// long edge passes 1568 px or whose cost passes about 1,600 tokens
    /// (about 1.2 MP) is first scaled down, then billed at
    /// `width * height / 750`.
    AnthropicStandard,
    /// OpenAI's `detail: "original"` (GPT-5.x): 32 px patches, at most
    /// 10000 (an image past that, or past 6000 px a side, scaled down
    /// first), times 1.2. The OpenAI encoders ask for this detail for the
    /// lines billed by it ([`ImageBilling::openai_detail`]).
    OpenAi,
    /// OpenAI's patch models at the detail the encoders send them (`auto`):
    /// 32 px patches, an image past `max_patches` scaled down to fit, times
    /// `per_mille / 1000`. GPT-5 mini and nano, GPT-4.1 mini and nano,
    /// o4-mini and codex-mini: 1536 and their own multiplier.
    OpenAiPatches {
        /// Most patches one image is read at.
        max_patches: u32,
        /// Tokens per thousand patches.
        per_mille: u32,
    },
    /// OpenAI tiles (GPT-4o, GPT-4.1, o1, o3, GPT-4o mini): fit in 2048,
    /// shortest side 768, `base + tile * tiles` for 512 px tiles.
    OpenAiTile {
        /// Tokens every image costs.
        base: u32,
        /// Tokens per 512 px tile.
        tile: u32,
    },
    /// Google Gemini 3: a flat 1120 tokens per image (high media resolution).
    Google,
    /// Google Gemini 2.x: 258 tokens per 768 px tile, 258 for small images.
    GeminiTile,
    /// Qwen-VL style merged patches (also llama.cpp multimodal projectors of
    /// that kind): one token per `patch` x `patch` pixels.
    Patch {
        /// Edge of one billed patch in pixels (28 for Qwen2.5-VL, 32 for
        /// Qwen3-VL).
        patch: u32,
        /// Largest number of patches billed for one image.
        max_patches: u32,
    },
    /// A fixed number of tokens per image whatever its size (Gemma 3's 256,
    /// for instance).
    Flat {
        /// Tokens per image.
        tokens: u32,
    },
}

impl ImageBilling {
    /// The `detail` an OpenAI encoder asks for, so that what a model
    /// bills is what the catalog counts: `original` for the lines billed
    /// by that rule (GPT-5.x, whose frames must not be scaled down),
    /// `auto` for every other (the API's default).
    pub fn openai_detail(&self) -> &'static str {
        match self {
            ImageBilling::OpenAi => "original",
            _ => "auto",
        }
    }
}

/// Per-request image limits, where the provider documents them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ImageLimits {
    /// Most images one request may carry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_per_request: Option<u32>,
    /// Largest encoded size of one image, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    /// Longest edge accepted without rejection, in pixels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_edge_px: Option<u32>,
}

/// What abridge knows about one model line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelEntry {
    /// Canonical id, for example `claude-sonnet-4-5`.
    pub id: String,
    /// Prefixes (normalized like ids) that also select this entry, for dated
    /// snapshots and variants: `claude-sonnet-4-5` matches
    /// `claude-sonnet-4-5-20250929`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<String>,
    /// Provider family name, for example `anthropic`.
    pub provider: String,
    /// Tokens the prompt plus the reply may occupy.
    pub context_window: u64,
    /// Most tokens one reply may contain.
    pub max_output: u64,
    /// Whether the model reads images.
    #[serde(default)]
    pub vision: bool,
    /// The tokenizer the model uses.
    pub tokenizer: TokenizerFamily,
    /// How its images are billed.
    pub image_billing: ImageBilling,
    /// Per-request image limits.
    #[serde(default)]
    pub images: ImageLimits,
    /// Whether the model reasons before it answers (OpenAI's o-series and
    /// GPT-5 lines, Claude with extended thinking, Gemini 2.5 and later,
    /// DeepSeek's reasoner). Request shapes depend on it: OpenAI's
    /// reasoning lines take `max_completion_tokens` instead of
    /// `max_tokens`, and only reasoning models accept
    /// `include: ["reasoning.encrypted_content"]` on the Responses API.
    #[serde(default)]
    pub reasoning: bool,
}

impl ModelEntry {
    /// The entry used for ids nothing matches.
    ///
    /// Conservative on purpose: a 32k window makes compaction fire early
    /// rather than overflow a model we know nothing about; no vision, so
    /// frames are not sent to a model that may not read them; o200k as the
    /// tokenizer proxy and Anthropic billing (the higher of the two common
    /// patch formulas at ordinary sizes) for any image already present.
    pub fn conservative_default() -> Self {
        ModelEntry {
            id: "unknown".to_string(),
            patterns: Vec::new(),
            provider: "unknown".to_string(),
            context_window: 32_768,
            max_output: 4_096,
            vision: false,
            tokenizer: TokenizerFamily::O200k,
            image_billing: ImageBilling::Anthropic,
            images: ImageLimits::default(),
            reasoning: false,
        }
    }

    /// True for the reasoning lines OpenAI itself serves, which reject
    /// `max_tokens` on Chat Completions. The open-weight `gpt-oss` is left
    /// out: llama.cpp, vLLM, Ollama and gateways serve it, and some of them
    /// read only `max_tokens`.
    pub fn is_openai_reasoning(&self) -> bool {
        self.reasoning && self.provider == "openai" && !self.id.starts_with("gpt-oss")
    }
}

/// How a lookup found its entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Match {
    /// The normalized id is an entry's id.
    Exact,
    /// The id starts with this pattern of an entry.
    Family(String),
    /// Nothing matched; the conservative default applies.
    Default,
}

/// The answer to [`Catalog::lookup`]: the entry and how it was found, so
/// callers can warn when figures are guessed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    /// The entry that applies.
    pub entry: ModelEntry,
    /// How it was found.
    pub matched: Match,
}

impl Lookup {
    /// True when no entry matched and the figures are the conservative
    /// default.
    pub fn is_default(&self) -> bool {
        self.matched == Match::Default
    }
}

/// A list of model entries with lookup by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalog {
    entries: Vec<ModelEntry>,
    /// Each entry's id and patterns normalized once, in step with
    /// `entries`: a lookup runs on every request and every pricing, and
    /// normalizing the whole list each time cost more than the rest of
    /// a request's path.
    keys: Vec<EntryKeys>,
}

/// The normalized forms a lookup compares against.
#[derive(Debug, Clone, PartialEq, Eq)]
struct EntryKeys {
    id: String,
    /// The id first, then the entry's patterns, each with its original
    /// text (what a family match reports).
    patterns: Vec<(String, String)>,
}

impl EntryKeys {
    fn of(entry: &ModelEntry) -> Self {
        let patterns = std::iter::once(&entry.id)
            .chain(entry.patterns.iter())
            .map(|pattern| (normalize(pattern), pattern.clone()))
            .collect();
        EntryKeys {
            id: normalize(&entry.id),
            patterns,
        }
    }
}

impl Default for Catalog {
    fn default() -> Self {
        Self::builtin()
    }
}

impl Catalog {
    /// The built-in entries.
    pub fn builtin() -> Self {
        Catalog::from_entries(builtin_entries())
    }

    /// The built-in catalog, built once and shared, for per-request
    /// decisions (request shapes) that must not rebuild it on every call.
    pub fn shared() -> &'static Catalog {
        static SHARED: std::sync::LazyLock<Catalog> = std::sync::LazyLock::new(Catalog::builtin);
        &SHARED
    }

    /// A catalog holding only `entries`, for tests and for users who want
    /// none of the built-in figures.
    pub fn from_entries(entries: Vec<ModelEntry>) -> Self {
        let keys = entries.iter().map(EntryKeys::of).collect();
        Catalog { entries, keys }
    }

    /// The entries, built-in first, later additions last.
    pub fn entries(&self) -> &[ModelEntry] {
        &self.entries
    }

    /// Adds entries, replacing any with the same (normalized) id; added
    /// entries win ties against earlier ones in family matching.
    pub fn add(&mut self, entries: impl IntoIterator<Item = ModelEntry>) {
        for entry in entries {
            let keys = EntryKeys::of(&entry);
            while let Some(at) = self.keys.iter().position(|k| k.id == keys.id) {
                self.entries.remove(at);
                self.keys.remove(at);
            }
            self.entries.push(entry);
            self.keys.push(keys);
        }
    }

    /// The entry for `model_id`; never fails (see the module doc for the
    /// order of matching).
    pub fn lookup(&self, model_id: &str) -> Lookup {
        let id = canonical_id(model_id);
        if let Some(at) = self.keys.iter().rposition(|k| k.id == id) {
            return Lookup {
                entry: self.entries[at].clone(),
                matched: Match::Exact,
            };
        }
        let mut best: Option<(usize, &ModelEntry, &str)> = None;
        for (entry, keys) in self.entries.iter().zip(&self.keys) {
            for (norm, pattern) in &keys.patterns {
                if !norm.is_empty()
                    && prefix_at_boundary(&id, norm)
                    && best.is_none_or(|(len, _, _)| norm.len() >= len)
                {
                    best = Some((norm.len(), entry, pattern.as_str()));
                }
            }
        }
        match best {
            Some((_, entry, pattern)) => Lookup {
                entry: entry.clone(),
                matched: Match::Family(pattern.to_string()),
            },
            None => Lookup {
                entry: ModelEntry::conservative_default(),
                matched: Match::Default,
            },
        }
    }
}

/// Lower case, with `.` and `_` read as `-`, so `claude-sonnet-4.5` and
/// `claude-sonnet-4-5` are one id.
fn normalize(id: &str) -> String {
    id.trim()
        .chars()
        .map(|c| match c {
            '.' | '_' => '-',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

/// Vendor prefixes that cloud gateways put before a model id
/// (`us.anthropic.claude-...` on Bedrock).
const VENDOR_PREFIXES: &[&str] = &[
    "anthropic.",
    "openai.",
    "google.",
    "deepseek.",
    "qwen.",
    "moonshot.",
    "moonshotai.",
    "zai.",
    "meta.",
];

/// The model part of a gateway-routed id, normalized.
fn canonical_id(model_id: &str) -> String {
    let lower = model_id.trim().to_ascii_lowercase();
    // Gateways join segments with '/': the model is the last one.
    let mut last = lower.rsplit('/').next().unwrap_or("").to_string();
    // Vertex dates (`@20250929`) and Ollama/Bedrock tags (`:latest`, `:0`).
    if let Some(at) = last.find('@') {
        last.truncate(at);
    }
    if let Some(colon) = last.find(':') {
        last.truncate(colon);
    }
    // llama.cpp model files: `Qwen3-8B-Q4_K_M.gguf`.
    if let Some(stem) = last.strip_suffix(".gguf") {
        last = stem.to_string();
    }
    // Bedrock ids and cross-region profiles: `anthropic.claude-...`,
    // `us.anthropic.claude-...` (a vendor at the start or after a region).
    for vendor in VENDOR_PREFIXES {
        if let Some(pos) = last.find(vendor)
            && (pos == 0 || last[..pos].ends_with('.'))
        {
            last = last[pos + vendor.len()..].to_string();
            break;
        }
    }
    normalize(&last)
}

fn prefix_at_boundary(id: &str, pattern: &str) -> bool {
    match id.strip_prefix(pattern) {
        Some(rest) => rest.is_empty() || rest.starts_with('-') || pattern.ends_with('-'),
        None => false,
    }
}

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
fn builtin_entries() -> Vec<ModelEntry> {
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

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn exact_id_matches_exactly() {
        let lookup = Catalog::builtin().lookup("claude-sonnet-4-5");
        assert_eq!(lookup.matched, Match::Exact);
        assert_eq!(lookup.entry.context_window, 200_000);
        assert_eq!(lookup.entry.image_billing, ImageBilling::AnthropicStandard);
    }

    #[test]
    fn gateway_routed_ids_keep_their_family() {
        let catalog = Catalog::builtin();
        for id in [
            "openrouter/anthropic/claude-sonnet-4.5",
            "bedrock/us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "vertex_ai/claude-sonnet-4-5@20250929",
            "anthropic/claude-sonnet-4-5-20250929",
            "CLAUDE-SONNET-4.5",
        ] {
            let lookup = catalog.lookup(id);
            assert_eq!(lookup.entry.id, "claude-sonnet-4-5", "{id}");
            assert!(!lookup.is_default(), "{id}");
        }
    }

    #[test]
    fn longest_pattern_wins() {
        let catalog = Catalog::builtin();
        assert_eq!(
            catalog.lookup("gpt-4o-mini-2024-07-18").entry.id,
            "gpt-4o-mini"
        );
        assert_eq!(
            catalog.lookup("gpt-4o-mini-2024-07-18").matched,
            Match::Family("gpt-4o-mini".to_string())
        );
        assert_eq!(catalog.lookup("o3-mini-2025-01-31").entry.id, "o3-mini");
        assert_eq!(catalog.lookup("gpt-4.1-mini").entry.id, "gpt-4-1-mini");
        assert_eq!(catalog.lookup("gpt-4-0613").entry.id, "gpt-4");
        assert_eq!(catalog.lookup("gpt-5.1-codex-max").entry.id, "gpt-5");
        assert_eq!(catalog.lookup("gpt-5-chat-latest").entry.id, "gpt-5-chat");
        assert_eq!(
            catalog.lookup("claude-opus-4-1-20250805").entry.id,
            "claude-opus-4-1"
        );
        assert_eq!(
            catalog.lookup("claude-3-7-sonnet-latest").entry.id,
            "claude"
        );
        assert_eq!(
            catalog.lookup("gemini-2.5-flash-lite").entry.id,
            "gemini-2-5-flash"
        );
        assert_eq!(
            catalog.lookup("gemini-3-pro-preview").entry.image_billing,
            ImageBilling::Google
        );
        assert_eq!(
            catalog
                .lookup("llama.cpp/gemma-3-27b-it-Q4_K_M.gguf")
                .entry
                .id,
            "gemma-3"
        );
        assert_eq!(catalog.lookup("ollama/qwen3:32b").entry.id, "qwen3");
    }

    #[test]
    fn prefix_must_end_at_a_boundary() {
        // `o3` must not claim `o30-experimental`.
        let lookup = Catalog::builtin().lookup("o30-experimental");
        assert_eq!(lookup.matched, Match::Default);
    }

    #[test]
    fn unknown_ids_get_the_conservative_default_and_say_so() {
        let lookup = Catalog::builtin().lookup("mystery-model-7");
        assert!(lookup.is_default());
        assert_eq!(lookup.entry, ModelEntry::conservative_default());
        assert_eq!(Catalog::builtin().lookup("").matched, Match::Default);
        assert_eq!(Catalog::builtin().lookup("////").matched, Match::Default);
    }

    #[test]
    fn user_entries_override_and_add() {
        let mut catalog = Catalog::builtin();
        let json = r#"[
            {"id": "claude-sonnet-4-5", "provider": "anthropic", "context_window": 1000000,
             "max_output": 64000, "vision": true, "tokenizer": "claude",
             "image_billing": "anthropic"},
            {"id": "house-model", "patterns": ["house-"], "provider": "local",
             "context_window": 16384, "max_output": 2048, "tokenizer": "llama",
             "image_billing": {"flat": {"tokens": 300}},
             "images": {"max_per_request": 4}}
        ]"#;
        let entries: Vec<ModelEntry> = serde_json::from_str(json).unwrap();
        let before = catalog.entries().len();
        catalog.add(entries);
        assert_eq!(catalog.entries().len(), before + 1);
        let sonnet = catalog.lookup("claude-sonnet-4-5-20250929");
        assert_eq!(sonnet.entry.context_window, 1_000_000);
        let house = catalog.lookup("house-v2");
        assert_eq!(house.matched, Match::Family("house-".to_string()));
        assert_eq!(
            house.entry.image_billing,
            ImageBilling::Flat { tokens: 300 }
        );
        assert_eq!(house.entry.images.max_per_request, Some(4));
        assert!(!house.entry.vision);
    }

    #[test]
    fn entries_round_trip_through_json() {
        // Users write override lists in the same form the catalog prints.
        let entries = Catalog::builtin().entries().to_vec();
        let json = serde_json::to_string(&entries).unwrap();
        let back: Vec<ModelEntry> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, entries);
    }

    #[test]
    fn reasoning_lines_are_flagged() {
        let catalog = Catalog::shared();
        for id in [
            "gpt-5",
            "gpt-5.1-codex-max",
            "gpt-5-mini-2025-08-07",
            "o1",
            "o3-mini",
            "o4-mini-2025-04-16",
            "openai/o3",
        ] {
            let entry = catalog.lookup(id).entry;
            assert!(entry.reasoning, "{id}");
            assert!(entry.is_openai_reasoning(), "{id}");
        }
        for id in [
            "gpt-4o",
            "gpt-4.1-mini",
            "gpt-5-chat-latest",
            "gpt-3.5-turbo",
        ] {
            assert!(!catalog.lookup(id).entry.reasoning, "{id}");
        }
        // Reasoning, but not a line whose servers reject `max_tokens`.
        let oss = catalog.lookup("gpt-oss-120b").entry;
        assert!(oss.reasoning && !oss.is_openai_reasoning());
        let sonnet = catalog.lookup("claude-sonnet-4-5").entry;
        assert!(sonnet.reasoning && !sonnet.is_openai_reasoning());
        // Unknown models are assumed not to reason.
        assert!(!catalog.lookup("mystery-model-7").entry.reasoning);
        // A user entry without the field reads as not reasoning.
        let entry: ModelEntry = serde_json::from_str(
            r#"{"id": "house", "provider": "local", "context_window": 8192, "max_output": 1024,
                "tokenizer": "llama", "image_billing": "anthropic"}"#,
        )
        .unwrap();
        assert!(!entry.reasoning);
    }

    #[test]
    fn every_builtin_entry_is_sane() {
        for entry in Catalog::builtin().entries() {
            assert!(entry.max_output <= entry.context_window, "{}", entry.id);
            assert!(entry.context_window >= 4_096, "{}", entry.id);
            // Each entry finds itself.
            assert_eq!(Catalog::builtin().lookup(&entry.id).entry.id, entry.id);
        }
    }
}
