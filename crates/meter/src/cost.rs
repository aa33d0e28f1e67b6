//! What one message costs: its blocks plus framing overhead.
//!
//! Providers render messages into their own chat templates; the text we
//! tokenize is the content, and the template's tokens are covered by fixed
//! overhead constants. The constants are deliberately a little generous:
//! undercounting leads to overflow, overcounting only to an earlier
//! compaction, and anchoring to reported usage corrects both.

use std::sync::Arc;

use abridge_llm::Block;
use abridge_llm::ImageBilling;
use abridge_llm::Message;
use abridge_llm::ModelEntry;

use crate::correction::claude_version;
use crate::correction::o200k_correction;
use crate::image::image_block_tokens;
use crate::known::KnownCounts;
use crate::tokenizer::Tokenizer;
use crate::tokenizer::tokenizer_for;

/// Tokens every message adds besides its content: the role marker and the
/// start and end delimiters. OpenAI's chat format spends 3 per message plus
/// the role; Anthropic's and the open chat templates (ChatML, Llama) a
/// similar handful.
pub const MESSAGE_OVERHEAD: u64 = 4;

/// Tokens every content block adds: the separator or type tag between
/// blocks of one message.
pub const BLOCK_OVERHEAD: u64 = 2;

/// Tokens a tool call adds beyond its name and arguments: the call id, the
/// call's type tag and the JSON or XML wrapping. Ids are not tokenized,
/// since random ids would make the figure depend on noise; 12 covers a
/// typical `toolu_...` or `call_...` id plus delimiters.
pub const TOOL_CALL_OVERHEAD: u64 = 12;

/// Tokens a tool result adds beyond its content: the call id it answers and
/// the wrapper, as for [`TOOL_CALL_OVERHEAD`].
pub const TOOL_RESULT_OVERHEAD: u64 = 10;

/// Tokens an error flag on a tool result adds (`is_error: true`).
pub const TOOL_ERROR_OVERHEAD: u64 = 2;

/// Bytes of an opaque reasoning blob (an Anthropic `signature` or
/// `redacted_thinking` payload, an OpenAI `encrypted_content`) per token of
/// the reasoning it carries: base64 packs 3 bytes in 4 characters and text
/// runs about 4 bytes a token, so 16/3 characters a token. The blob is never
/// read as text; this only sizes the reasoning behind it when the provider
/// keeps that reasoning in context (see [`PriorThinking`]).
pub const OPAQUE_CHARS_PER_TOKEN: f64 = 16.0 / 3.0;

/// What a provider does with thinking from earlier turns when the history
/// is sent back. A turn ends at the next user message; tool results do not
/// end it. See docs/token-accounting.md for the sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PriorThinking {
    /// Dropped from the context: it costs nothing. OpenAI reasoning items
    /// and most Claude lines (thinking and redacted thinking alike). The
    /// thinking of the current turn (the assistant messages after the last
    /// user message, a tool loop) is still read and costs its tokens.
    #[default]
    Dropped,
    /// Kept in the context and counted: Claude Opus 4.5 and later, Claude
    /// Sonnet 4.6 and later, Claude Haiku 5 and later, the Fable and
    /// Mythos lines. These models also check each replayed thinking
    /// block's prefix (preserved thinking): a block sent back after
    /// something before it changed is rejected or dropped.
    Kept,
}

impl PriorThinking {
    /// The rule for a catalog entry: [`Kept`](Self::Kept) for the Claude
    /// lines documented to keep earlier thinking, else
    /// [`Dropped`](Self::Dropped).
    pub fn for_model(entry: &ModelEntry) -> Self {
        if entry.provider != "anthropic" {
            return PriorThinking::Dropped;
        }
        let id = entry.id.as_str();
        let kept = claude_version(id, "claude-opus-").is_some_and(|v| v >= (4, 5))
            || claude_version(id, "claude-sonnet-").is_some_and(|v| v >= (4, 6))
            || claude_version(id, "claude-haiku-").is_some_and(|v| v >= (5, 0))
            || id.starts_with("claude-fable-")
            || id.starts_with("claude-mythos-");
        if kept {
            PriorThinking::Kept
        } else {
            PriorThinking::Dropped
        }
    }
}

/// A message's cost, block by block where the meter needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Priced {
    /// Everything but thinking.
    pub(crate) rest: u64,
    /// Thinking and redacted thinking, [`BLOCK_OVERHEAD`] included.
    pub(crate) thinking: u64,
    /// Each tool call block's cost, in block order.
    pub(crate) calls: Vec<u64>,
}

/// Prices messages for one model: a tokenizer for text and an image
/// billing family for pictures.
#[derive(Debug, Clone)]
pub struct CostModel {
    tokenizer: Arc<dyn Tokenizer>,
    billing: ImageBilling,
    prior_thinking: PriorThinking,
    /// Provider tokens per token of ours, for text (see
    /// [`o200k_correction`]).
    correction: f64,
    /// Counts the provider gave for whole messages, read before counting.
    known: Option<Arc<dyn KnownCounts>>,
}

impl CostModel {
    /// A cost model from its parts.
    pub fn new(tokenizer: Arc<dyn Tokenizer>, billing: ImageBilling) -> Self {
        CostModel {
            tokenizer,
            billing,
            prior_thinking: PriorThinking::default(),
            correction: 1.0,
            known: None,
        }
    }

    /// The same model with text sized `correction` times its tokenizer's
    /// count: the measured ratio of the provider's tokenizer to ours (see
    /// [`o200k_correction`]). Values that are not finite and positive are
    /// read as 1.
    #[must_use]
    pub fn with_correction(mut self, correction: f64) -> Self {
        self.correction = if correction.is_finite() && correction > 0.0 {
            correction
        } else {
            1.0
        };
        self
    }

    /// The correction in use (1.0 when none).
    pub fn correction(&self) -> f64 {
        self.correction
    }

    /// The same model reading the provider's own counts from `known`
    /// before counting a message itself (see [`KnownCounts`]).
    #[must_use]
    pub fn with_known(mut self, known: Arc<dyn KnownCounts>) -> Self {
        self.known = Some(known);
        self
    }

    /// The same model with another rule for earlier turns' thinking.
    #[must_use]
    pub fn with_prior_thinking(mut self, prior_thinking: PriorThinking) -> Self {
        self.prior_thinking = prior_thinking;
        self
    }

    /// What the provider does with earlier turns' thinking.
    pub fn prior_thinking(&self) -> PriorThinking {
        self.prior_thinking
    }

    /// The cost model for a catalog entry: the closest tokenizer to its
    /// family, its image billing, its rule for earlier turns' thinking, and
    /// the measured correction for a family counted with another
    /// tokenizer ([`o200k_correction`]).
    pub fn for_model(entry: &ModelEntry) -> Self {
        CostModel::new(tokenizer_for(entry.tokenizer), entry.image_billing)
            .with_prior_thinking(PriorThinking::for_model(entry))
            .with_correction(o200k_correction(entry))
    }

    /// The tokenizer used for text.
    pub fn tokenizer(&self) -> &Arc<dyn Tokenizer> {
        &self.tokenizer
    }

    /// The image billing family.
    pub fn billing(&self) -> ImageBilling {
        self.billing
    }

    /// Tokens of a piece of text, corrected to the provider's tokenizer.
    pub fn text(&self, text: &str) -> u64 {
        self.corrected(self.tokenizer.count(text) as u64)
    }

    fn corrected(&self, tokens: u64) -> u64 {
        if self.correction == 1.0 {
            return tokens;
        }
        (tokens as f64 * self.correction).round() as u64
    }

    /// Tokens a whole message costs when the provider reads all of it:
    /// [`MESSAGE_OVERHEAD`] plus each block. For an assistant message of an
    /// earlier turn under [`PriorThinking::Dropped`], subtract
    /// [`thinking`](Self::thinking): [`split`](Self::split) gives both.
    ///
    /// A message whose count the provider gave ([`with_known`](Self::with_known))
    /// costs that count plus our estimate of its thinking.
    pub fn message(&self, message: &Message) -> u64 {
        let (rest, thinking) = self.split(message);
        rest + thinking
    }

    /// Tokens of a message's thinking and redacted thinking blocks,
    /// [`BLOCK_OVERHEAD`] included: the part a provider drops once the turn
    /// is over.
    pub fn thinking(&self, message: &Message) -> u64 {
        message
            .content
            .iter()
            .filter(|b| matches!(b, Block::Thinking { .. } | Block::RedactedThinking { .. }))
            .map(|b| self.block(b))
            .sum()
    }

    /// A message's cost as `(rest, thinking)`: `rest + thinking` is
    /// [`message`](Self::message).
    pub fn split(&self, message: &Message) -> (u64, u64) {
        let priced = self.priced(message);
        (priced.rest, priced.thinking)
    }

    /// A message's cost in the parts the meter keeps, every block counted
    /// once: `(rest, thinking)` as [`split`](Self::split) gives them, and
    /// each tool call block's cost.
    pub(crate) fn priced(&self, message: &Message) -> Priced {
        let mut total = MESSAGE_OVERHEAD;
        let mut thinking = 0;
        let mut calls = Vec::new();
        for block in &message.content {
            let cost = self.block(block);
            total += cost;
            match block {
                Block::Thinking { .. } | Block::RedactedThinking { .. } => thinking += cost,
                Block::ToolCall { .. } => calls.push(cost),
                _ => {}
            }
        }
        let rest = self
            .known
            .as_ref()
            .and_then(|k| k.tokens(message))
            .unwrap_or(total - thinking);
        Priced {
            rest,
            thinking,
            calls,
        }
    }

    /// What identifies this model's counts when they are kept between
    /// processes ([`KeptCounts`](crate::KeptCounts)): tokenizer, image
    /// billing and correction. `None` when counts must not be kept: the
    /// model reads the provider's own counts ([`with_known`](Self::with_known)),
    /// which change as the provider reports, or its tokenizer has no name
    /// of its own (two unnamed tokenizers would share counts).
    pub fn kept_id(&self) -> Option<String> {
        let name = self.tokenizer.name();
        if self.known.is_some() || name == "custom" || name.contains(' ') {
            return None;
        }
        Some(format!("{name}:{:?}:{}", self.billing, self.correction))
    }

    /// Tokens of the reasoning behind an opaque blob of `chars` characters
    /// (see [`OPAQUE_CHARS_PER_TOKEN`]), corrected like text.
    pub fn opaque(&self, chars: usize) -> u64 {
        self.corrected((chars as f64 / OPAQUE_CHARS_PER_TOKEN).ceil() as u64)
    }

    /// Tokens one block costs, [`BLOCK_OVERHEAD`] included:
    ///
    /// - text: its tokens;
    /// - thinking, as read in the current turn: the larger of the visible
    ///   reasoning's tokens and the reasoning its signature carries
    ///   ([`opaque`](Self::opaque)). The signature is never tokenized as
    ///   text: an Anthropic signature verifies (and on Claude 4 lines
    ///   encrypts) the full reasoning, an OpenAI `encrypted_content` is the
    ///   reasoning encrypted; the provider decrypts it and counts the
    ///   reasoning, not the base64. The visible text may be only a summary;
    /// - redacted thinking: the reasoning its opaque data carries;
    /// - native provider item: an `encrypted_content` as opaque data,
    ///   anything else as its JSON text;
    /// - image: what [`image_block_tokens`] bills;
    /// - tool call: name plus compact JSON arguments plus
    ///   [`TOOL_CALL_OVERHEAD`];
    /// - tool result: each nested block plus [`TOOL_RESULT_OVERHEAD`], and
    ///   [`TOOL_ERROR_OVERHEAD`] when it is an error.
    pub fn block(&self, block: &Block) -> u64 {
        BLOCK_OVERHEAD
            + match block {
                Block::Text { text } => self.text(text),
                Block::Thinking {
                    thinking,
                    signature,
                } => self
                    .text(thinking)
                    .max(signature.as_deref().map_or(0, |s| self.opaque(s.len()))),
                Block::RedactedThinking { data } => self.opaque(data.len()),
                // An encrypted compaction is sized like other opaque
                // provider data; a readable one (Anthropic's) as its text.
                Block::Native { item, .. } => {
                    match item.get("encrypted_content").and_then(|v| v.as_str()) {
                        Some(data) => self.opaque(data.len()),
                        None => self.text(&item.to_string()),
                    }
                }
                Block::Image {
                    source,
                    width,
                    height,
                } => image_block_tokens(self.billing, source, *width, *height),
                Block::ToolCall {
                    name, arguments, ..
                } => {
                    // Strings are counted as the model sees them, not as a
                    // JSON string literal with quotes.
                    let args = match arguments {
                        serde_json::Value::String(s) => self.text(s),
                        other => self.text(&other.to_string()),
                    };
                    TOOL_CALL_OVERHEAD + self.text(name) + args
                }
                Block::ToolResult {
                    content, is_error, ..
                } => {
                    TOOL_RESULT_OVERHEAD
                        + if *is_error { TOOL_ERROR_OVERHEAD } else { 0 }
                        + content.iter().map(|b| self.block(b)).sum::<u64>()
                }
            }
    }
}

#[cfg(test)]
mod tests {
    use abridge_llm::ImageSource;
    use abridge_llm::Role;
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::tokenizer::Tiktoken;

    fn model() -> CostModel {
        CostModel::new(Arc::new(Tiktoken::o200k()), ImageBilling::Anthropic)
    }

    #[test]
    fn text_message() {
        let m = Message::user("The quick brown fox jumps over the lazy dog.");
        assert_eq!(model().message(&m), MESSAGE_OVERHEAD + BLOCK_OVERHEAD + 10);
        let empty = Message {
            role: Role::User,
            content: vec![],
            meta: Default::default(),
        };
        assert_eq!(model().message(&empty), MESSAGE_OVERHEAD);
    }

    #[test]
    fn opaque_reasoning_is_sized_not_tokenized() {
        let m = model();
        let plain = Block::Thinking {
            thinking: "Let me think.".into(),
            signature: None,
        };
        // 1,600 characters of base64: the reasoning behind it, 300 tokens,
        // not the ~1,100 tokens the characters would make as text.
        let blob = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxDGhM2".repeat(45)[..1600].to_string();
        assert!(m.text(&blob) > 600);
        let signed = Block::Thinking {
            thinking: "Let me think.".into(),
            signature: Some(blob.clone()),
        };
        assert_eq!(m.block(&signed), BLOCK_OVERHEAD + 300);
        assert_eq!(m.block(&plain), BLOCK_OVERHEAD + m.text("Let me think."));
        // Visible reasoning longer than the blob's share counts as text.
        let long = "word ".repeat(1000);
        let full = Block::Thinking {
            thinking: long.clone(),
            signature: Some("sig".into()),
        };
        assert_eq!(m.block(&full), BLOCK_OVERHEAD + m.text(&long));
        let redacted = Block::RedactedThinking { data: blob };
        assert_eq!(m.block(&redacted), BLOCK_OVERHEAD + 300);
        // `split` separates it from the rest of the message.
        let mut message = Message::assistant("done");
        message.content.insert(0, signed);
        let (rest, thinking) = m.split(&message);
        assert_eq!(thinking, BLOCK_OVERHEAD + 300);
        assert_eq!(rest + thinking, m.message(&message));
    }

    #[test]
    fn prior_thinking_follows_the_documented_lines() {
        let catalog = abridge_llm::Catalog::builtin();
        let rule = |id: &str| PriorThinking::for_model(&catalog.lookup(id).entry);
        assert_eq!(rule("gpt-5"), PriorThinking::Dropped);
        assert_eq!(rule("claude-sonnet-4-5"), PriorThinking::Dropped);
        assert_eq!(rule("claude-opus-4-1"), PriorThinking::Dropped);
        assert_eq!(rule("claude-opus-4-5"), PriorThinking::Kept);
        // Issue 29: the 4.6 lines resolved to the Opus 4 and Sonnet 4
        // entries, which drop earlier thinking.
        assert_eq!(rule("claude-opus-4-6"), PriorThinking::Kept);
        assert_eq!(rule("claude-sonnet-4-6"), PriorThinking::Kept);
        assert_eq!(rule("claude-sonnet-4-6-20260217"), PriorThinking::Kept);
        assert_eq!(rule("claude-fable-5-1"), PriorThinking::Kept);
        assert_eq!(rule("claude-haiku-5-5"), PriorThinking::Kept);
        assert_eq!(rule("claude-haiku-4-5"), PriorThinking::Dropped);
        let entry = |id: &str| abridge_llm::ModelEntry {
            id: id.to_string(),
            provider: "anthropic".to_string(),
            ..abridge_llm::ModelEntry::conservative_default()
        };
        assert_eq!(
            PriorThinking::for_model(&entry("claude-sonnet-4-6")),
            PriorThinking::Kept
        );
        assert_eq!(
            PriorThinking::for_model(&entry("claude-opus-5")),
            PriorThinking::Kept
        );
        assert_eq!(
            PriorThinking::for_model(&entry("claude-haiku-4-5")),
            PriorThinking::Dropped
        );
        assert_eq!(
            PriorThinking::for_model(&entry("claude-sonnet-4-20250514")),
            PriorThinking::Dropped
        );
    }

    #[test]
    fn tool_call_counts_name_and_arguments() {
        let m = model();
        let call = Block::ToolCall {
            id: "toolu_01A09q90qw90lq917835lq9".into(),
            name: "read_file".into(),
            arguments: serde_json::json!({"path": "src/lib.rs"}),
        };
        let expected = BLOCK_OVERHEAD
            + TOOL_CALL_OVERHEAD
            + m.text("read_file")
            + m.text(r#"{"path":"src/lib.rs"}"#);
        assert_eq!(m.block(&call), expected);
        // Ids do not change the figure.
        let other_id = Block::ToolCall {
            id: "x".into(),
            name: "read_file".into(),
            arguments: serde_json::json!({"path": "src/lib.rs"}),
        };
        assert_eq!(m.block(&other_id), expected);
    }

    #[test]
    fn tool_results_count_nested_blocks_and_images() {
        let m = model();
        let result = Block::ToolResult {
            call_id: "c1".into(),
            content: vec![
                Block::text("screenshot follows"),
                Block::Image {
                    source: ImageSource::Url {
                        url: "https://example.com/a.png".into(),
                    },
                    width: Some(1568),
                    height: Some(1568),
                },
            ],
            is_error: true,
        };
        let expected = BLOCK_OVERHEAD
            + TOOL_RESULT_OVERHEAD
            + TOOL_ERROR_OVERHEAD
            + (BLOCK_OVERHEAD + m.text("screenshot follows"))
            + (BLOCK_OVERHEAD + 3293);
        assert_eq!(m.block(&result), expected);
    }

    #[test]
    fn images_follow_the_model_family() {
        let image = Message {
            role: Role::User,
            content: vec![Block::Image {
                source: ImageSource::Url { url: "u".into() },
                width: Some(1568),
                height: Some(1568),
            }],
            meta: Default::default(),
        };
        let catalog = abridge_llm::Catalog::builtin();
        let cost = |id: &str| CostModel::for_model(&catalog.lookup(id).entry).message(&image);
        let frame = MESSAGE_OVERHEAD + BLOCK_OVERHEAD;
        // Claude 4.5 scales a 1568 px square down to about 1.2 MP first;
        // Opus 4.7 reads it whole.
        assert_eq!(cost("claude-sonnet-4-5"), frame + 1599);
        assert_eq!(cost("claude-opus-4-7"), frame + 3293);
        assert_eq!(cost("gpt-5"), frame + 2882);
        assert_eq!(cost("gemini-3-pro-preview"), frame + 1120);
    }
}
