//! HTTP clients for real providers (feature `providers`, on by default).

mod anthropic;
mod anthropic_decode;
mod anthropic_encode;
mod chat_decode;
mod chat_encode;
mod classify;
mod config;
mod count_tokens;
mod fragments;
mod http;
mod openai_chat;
mod openai_responses;
mod options;
#[cfg(test)]
mod reference;
mod responses_encode;
mod scan;
mod sse;
mod stream;
mod wire;

pub use anthropic::ANTHROPIC_BASE_URL;
pub use anthropic::ANTHROPIC_COMPACTION_BETA;
pub use anthropic::ANTHROPIC_VERSION;
pub use anthropic::AnthropicClient;
pub use anthropic::AnthropicOptions;
pub use classify::ANTHROPIC_OVERFLOW_PHRASES;
pub use classify::CONTEXT_OVERFLOW_PHRASES;
pub use classify::ErrorDialect;
pub use classify::OPENAI_OVERFLOW_PHRASES;
pub use classify::classify_http_error;
pub use classify::classify_http_error_in;
pub use classify::looks_like_context_overflow;
pub use classify::parse_http_date;
pub use classify::parse_retry_after;
pub use config::ApiKey;
pub use config::DEFAULT_MAX_RESPONSE_BYTES;
pub use config::ProviderConfig;
pub use count_tokens::CountTokensClient;
pub use http::Auth;
pub use http::Http;
pub use openai_chat::ChatOptions;
pub use openai_chat::MaxTokensField;
pub use openai_chat::OPENAI_BASE_URL;
pub use openai_chat::OpenAiChatClient;
pub use openai_chat::TOOL_IMAGES_INTRO;
pub use openai_responses::OpenAiResponsesClient;
pub use openai_responses::ResponsesOptions;
pub use wire::IMAGE_NOT_LOADED;

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
) -> Result<OpenAiChatClient, crate::LlmError> {
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
    ) -> Result<std::sync::Arc<dyn crate::LlmClient>, crate::LlmError> {
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
