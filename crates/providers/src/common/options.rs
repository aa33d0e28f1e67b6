//! Each provider's dialect switches and wire constants, shared by its
//! client (which holds them) and its encoder (which reads them), so that
//! neither imports the other.

/// The provider name the Anthropic client answers to by default, and the
/// provider a native Anthropic item belongs to.
pub(crate) const ANTHROPIC: &str = "anthropic";
/// The `anthropic-beta` flag under which the Messages API reads (and
/// writes) server-side compaction blocks: sent with every request that
/// replays one, and with the compaction call itself.
pub const ANTHROPIC_COMPACTION_BETA: &str = "compact-2026-01-12";
/// The provider name the Responses client answers to by default, and the
/// provider a native Responses item belongs to.
pub(crate) const OPENAI_RESPONSES: &str = "openai-responses";

/// Dialect switches for the Messages API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnthropicOptions {
    /// `max_tokens` when the request sets none (the API requires one).
    /// Default 8192.
    pub default_max_tokens: u32,
    /// Mark cache breakpoints (`cache_control: ephemeral`): the last system
    /// block, the last tool, the last block of the last message, and the
    /// last block of the user message before it, so each call reads the
    /// prefix the previous call wrote. Default true.
    pub prompt_cache: bool,
}

impl Default for AnthropicOptions {
    fn default() -> Self {
        AnthropicOptions {
            default_max_tokens: 8192,
            prompt_cache: true,
        }
    }
}

/// Which body field carries the output cap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MaxTokensField {
    /// `max_tokens`: what llama.cpp, vLLM, Ollama and most gateways read.
    #[default]
    MaxTokens,
    /// `max_completion_tokens`: what OpenAI's reasoning models require.
    MaxCompletionTokens,
}

impl MaxTokensField {
    /// The field for `model` on a server that may be any OpenAI-compatible
    /// one: `max_completion_tokens` when the model catalog lists the model
    /// as one of OpenAI's reasoning lines (they reject `max_tokens`),
    /// `max_tokens` otherwise (what llama.cpp, vLLM, Ollama and most
    /// gateways read; some ignore the newer field).
    pub fn for_model(model: &str) -> Self {
        if abridge_llm::Catalog::shared()
            .lookup(model)
            .entry
            .is_openai_reasoning()
        {
            MaxTokensField::MaxCompletionTokens
        } else {
            MaxTokensField::MaxTokens
        }
    }
}

/// Dialect switches for servers that differ from OpenAI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatOptions {
    /// Field for the output cap. Default `max_tokens`.
    pub max_tokens_field: MaxTokensField,
    /// Send developer messages with role `developer`; otherwise as `system`
    /// (many chat templates know no developer role). Default false.
    pub developer_role: bool,
    /// Ask for usage at the end of a stream (`stream_options.include_usage`).
    /// Default true.
    pub stream_usage: bool,
}

impl Default for ChatOptions {
    fn default() -> Self {
        ChatOptions {
            max_tokens_field: MaxTokensField::MaxTokens,
            developer_role: false,
            stream_usage: true,
        }
    }
}

impl ChatOptions {
    /// What OpenAI's own API expects.
    pub fn openai() -> Self {
        ChatOptions {
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            developer_role: true,
            stream_usage: true,
        }
    }
}

/// Text sent before images that tool results returned, in the user message
/// that carries them.
pub const TOOL_IMAGES_INTRO: &str = "Images returned by the tool calls above:";

/// Dialect switches for the Responses API.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResponsesOptions {
    /// `store`: keep the response on OpenAI's side. Default false: abridge
    /// keeps history itself, and replays reasoning as encrypted items.
    pub store: bool,
    /// Ask for `reasoning.encrypted_content`, so reasoning can be replayed
    /// statelessly. `None` (the default) asks only when the model catalog
    /// lists the request's model as a reasoning model: models without
    /// reasoning reject the field, and an unknown model is assumed not to
    /// reason. `Some` forces the choice.
    pub include_encrypted_reasoning: Option<bool>,
}

impl ResponsesOptions {
    /// Whether a request for `model` asks for encrypted reasoning.
    pub fn includes_encrypted_reasoning(&self, model: &str) -> bool {
        self.include_encrypted_reasoning
            .unwrap_or_else(|| abridge_llm::Catalog::shared().lookup(model).entry.reasoning)
    }
}
