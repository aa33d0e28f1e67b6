//! The provider clients of abridge: OpenAI Chat Completions (also
//! llama.cpp, vLLM, Ollama and gateways; see [`openai_compatible`]),
//! OpenAI Responses and Anthropic Messages, over reqwest with rustls.
//!
//! `abridge-llm` holds the vocabulary and the [`LlmClient`] contract every
//! other crate speaks; this crate is the volatile part that speaks each
//! provider's wire, so a decoder change rebuilds only what sends requests.
//!
//! # Layout
//!
//! One folder a provider, each with what the provider's wire needs:
//!
//! - `anthropic/`: `encode` (request bodies and the provider's role and
//!   ordering rules), `decode` (streamed events), `count_tokens`
//!   ([`CountTokensClient`]) and `compaction` ([`AnthropicCompaction`], the
//!   server-side compaction call).
//! - `openai_chat/`: `encode` and `decode`.
//! - `openai_responses/`: `encode`, the stream decoder beside the client,
//!   and `compaction` ([`ResponsesCompaction`], `/responses/compact`).
//! - `summary_endpoint`: a plain summary service driven like a model
//!   ([`SummaryEndpoint`]).
//! - `common/`: what every dialect shares: [`ProviderConfig`], the one
//!   JSON-over-HTTP path ([`Http`]), server-sent events, the stream
//!   assembly, error classification ([`classify_http_error`]), cached
//!   message fragments, and the shape of a native compaction's answer
//!   ([`NativeCompactor`]).
//!
//! [`LlmClient`]: abridge_llm::LlmClient

mod anthropic;
mod common;
mod openai_chat;
mod openai_responses;
mod summary_endpoint;

pub use anthropic::ANTHROPIC_BASE_URL;
pub use anthropic::ANTHROPIC_COMPACTION_BETA;
pub use anthropic::ANTHROPIC_VERSION;
pub use anthropic::AnthropicClient;
pub use anthropic::AnthropicOptions;
pub use anthropic::compaction::ANTHROPIC_MIN_TRIGGER;
pub use anthropic::compaction::AnthropicCompaction;
pub use anthropic::count_tokens::CountTokensClient;
pub use common::classify::ANTHROPIC_OVERFLOW_PHRASES;
pub use common::classify::CONTEXT_OVERFLOW_PHRASES;
pub use common::classify::ErrorDialect;
pub use common::classify::OPENAI_OVERFLOW_PHRASES;
pub use common::classify::classify_http_error;
pub use common::classify::classify_http_error_in;
pub use common::classify::looks_like_context_overflow;
pub use common::classify::parse_http_date;
pub use common::classify::parse_retry_after;
pub use common::config::ApiKey;
pub use common::config::DEFAULT_MAX_RESPONSE_BYTES;
pub use common::config::ProviderConfig;
pub use common::http::Auth;
pub use common::http::Http;
pub use common::native::COMPACTION_ITEM;
pub use common::native::NativeAnswer;
pub use common::native::NativeCompaction;
pub use common::native::NativeCompactor;
pub use common::wire::IMAGE_NOT_LOADED;
pub use openai_chat::ChatOptions;
pub use openai_chat::MaxTokensField;
pub use openai_chat::OPENAI_BASE_URL;
pub use openai_chat::OpenAiChatClient;
pub use openai_chat::TOOL_IMAGES_INTRO;
pub use openai_responses::OpenAiResponsesClient;
pub use openai_responses::ResponsesOptions;
pub use openai_responses::compaction::ResponsesCompaction;
pub use summary_endpoint::SUMMARY_ENDPOINT;
pub use summary_endpoint::SummaryEndpoint;

/// A Chat Completions client for an OpenAI-compatible server (llama.cpp,
/// vLLM, Ollama, a gateway) at `base_url` (for example
/// `http://127.0.0.1:8080/v1`), with `model` as the default for requests
/// that name none and an optional bearer key. Named `openai-compatible` in
/// errors and origins.
///
/// # Errors
/// `InvalidConfig` for a URL that is not http(s) or a key that is not a
/// valid header value.
pub fn openai_compatible(
    base_url: impl Into<String>,
    model: impl Into<String>,
    api_key: Option<String>,
) -> Result<OpenAiChatClient, abridge_llm::LlmError> {
    let mut config = ProviderConfig::new(base_url)
        .with_default_model(model)
        .with_name("openai-compatible");
    config.api_key = api_key.map(ApiKey::new);
    OpenAiChatClient::new(config, ChatOptions::default())
}

/// Which wire dialect an endpoint speaks, for callers that choose it at
/// run time (the CLI's provider flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// OpenAI Chat Completions and compatible servers.
    OpenAiChat,
    /// OpenAI Responses.
    OpenAiResponses,
    /// Anthropic Messages.
    Anthropic,
}

impl ProviderKind {
    /// Every kind with the names [`std::str::FromStr`] accepts first.
    pub const ALL: [(ProviderKind, &'static str); 3] = [
        (ProviderKind::OpenAiChat, "openai-chat"),
        (ProviderKind::OpenAiResponses, "openai-responses"),
        (ProviderKind::Anthropic, "anthropic"),
    ];

    /// Builds a client of this kind with the dialect's default options
    /// (OpenAI's own options when no base URL is given, compatible-server
    /// options otherwise).
    ///
    /// # Errors
    /// `InvalidConfig` for a bad URL or header.
    pub fn client(
        self,
        config: ProviderConfig,
    ) -> Result<std::sync::Arc<dyn abridge_llm::LlmClient>, abridge_llm::LlmError> {
        Ok(match self {
            ProviderKind::OpenAiChat => {
                let options = if config.base_url.is_none() {
                    ChatOptions::openai()
                } else {
                    ChatOptions::default()
                };
                std::sync::Arc::new(OpenAiChatClient::new(config, options)?)
            }
            ProviderKind::OpenAiResponses => std::sync::Arc::new(OpenAiResponsesClient::new(
                config,
                ResponsesOptions::default(),
            )?),
            ProviderKind::Anthropic => {
                std::sync::Arc::new(AnthropicClient::new(config, AnthropicOptions::default())?)
            }
        })
    }
}

impl std::str::FromStr for ProviderKind {
    type Err = String;

    /// Accepts `openai-chat` (also `openai`, `chat`, `openai-compatible`,
    /// `llama.cpp`), `openai-responses` (also `responses`) and `anthropic`.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name.to_ascii_lowercase().as_str() {
            "openai-chat" | "openai" | "chat" | "openai-compatible" | "llama.cpp" | "llamacpp" => {
                Ok(ProviderKind::OpenAiChat)
            }
            "openai-responses" | "responses" => Ok(ProviderKind::OpenAiResponses),
            "anthropic" => Ok(ProviderKind::Anthropic),
            other => Err(format!(
                "unknown provider {other:?}; use openai-chat, openai-responses or anthropic"
            )),
        }
    }
}
