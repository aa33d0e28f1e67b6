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

use crate::image::image_block_tokens;
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

/// Prices messages for one model: a tokenizer for text and an image
/// billing family for pictures.
#[derive(Debug, Clone)]
pub struct CostModel {
    tokenizer: Arc<dyn Tokenizer>,
    billing: ImageBilling,
}

impl CostModel {
    /// A cost model from its parts.
    pub fn new(tokenizer: Arc<dyn Tokenizer>, billing: ImageBilling) -> Self {
        CostModel { tokenizer, billing }
    }

    /// The cost model for a catalog entry: the closest tokenizer to its
    /// family, its image billing.
    pub fn for_model(entry: &ModelEntry) -> Self {
        CostModel::new(tokenizer_for(entry.tokenizer), entry.image_billing)
    }

    /// The tokenizer used for text.
    pub fn tokenizer(&self) -> &Arc<dyn Tokenizer> {
        &self.tokenizer
    }

    /// The image billing family.
    pub fn billing(&self) -> ImageBilling {
        self.billing
    }

    /// Tokens of a piece of text.
    pub fn text(&self, text: &str) -> u64 {
        self.tokenizer.count(text) as u64
    }

    /// Tokens a whole message costs: [`MESSAGE_OVERHEAD`] plus each block.
    pub fn message(&self, message: &Message) -> u64 {
        MESSAGE_OVERHEAD + message.content.iter().map(|b| self.block(b)).sum::<u64>()
    }

    /// Tokens one block costs, [`BLOCK_OVERHEAD`] included:
    ///
    /// - text: its tokens;
    /// - thinking: the reasoning's tokens plus the signature's (sent back
    ///   with every request that carries the block);
    /// - redacted thinking: the tokens of its opaque data;
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
                } => self.text(thinking) + signature.as_deref().map_or(0, |s| self.text(s)),
                Block::RedactedThinking { data } => self.text(data),
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
    fn thinking_counts_its_signature() {
        let m = model();
        let plain = Block::Thinking {
            thinking: "Let me think.".into(),
            signature: None,
        };
        let signed = Block::Thinking {
            thinking: "Let me think.".into(),
            signature: Some("EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxDGhM2".repeat(10)),
        };
        assert!(m.block(&signed) > m.block(&plain) + 50);
        let redacted = Block::RedactedThinking {
            data: "EmwKAhgBEgy3va3pzix/LafPsn4a".into(),
        };
        assert!(m.block(&redacted) > BLOCK_OVERHEAD);
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
        assert_eq!(cost("claude-sonnet-4-5"), frame + 3293);
        assert_eq!(cost("gpt-5"), frame + 2882);
        assert_eq!(cost("gemini-3-pro-preview"), frame + 1120);
    }
}
