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

mod builtin;

use builtin::builtin_entries;

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
