//! OpenAI Chat Completions (`POST {base}/chat/completions`), the dialect
//! llama.cpp, vLLM, Ollama and most gateways also speak.

pub(crate) mod decode;
pub(crate) mod encode;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use crate::common::classify;
use crate::common::config::ProviderConfig;
use crate::common::fragments;
use crate::common::fragments::FragmentCache;
use crate::common::http::Auth;
use crate::common::http::Http;
use crate::common::stream;
use crate::common::wire;
use abridge_llm::LlmClient;
use abridge_llm::LlmError;
use abridge_llm::Request;
use abridge_llm::Response;
use abridge_llm::ResponseStream;

/// Public OpenAI API base.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

pub use crate::common::options::ChatOptions;
pub use crate::common::options::MaxTokensField;
pub use crate::common::options::TOOL_IMAGES_INTRO;

/// A Chat Completions client.
///
/// Wire mapping: system and developer messages become `system` (or
/// `developer`) messages; user text and images become content parts
/// (`image_url` with a `data:` URL for inline images); assistant text,
/// and tool calls as `tool_calls` with JSON-text arguments; each tool
/// result a `tool` message (text only: images a tool returned follow the
/// run of tool messages as one user message, since the dialect allows no
/// images in tool messages). Thinking is not sent back (the dialect has no
/// place for it); `reasoning_content` or `reasoning` in answers becomes a
/// thinking block. `ToolChoice::None` sends the tools with
/// `"tool_choice":"none"`.
#[derive(Debug)]
pub struct OpenAiChatClient {
    http: Http,
    options: ChatOptions,
    default_model: Option<String>,
    extra_body: serde_json::Map<String, Value>,
    fragments: FragmentCache,
}

impl OpenAiChatClient {
    /// Default provider name.
    pub const NAME: &'static str = "openai-chat";

    /// A client for `config`, posting to `{base_url}/chat/completions`
    /// (base defaults to [`OPENAI_BASE_URL`]).
    ///
    /// # Errors
    /// `InvalidConfig` for a bad URL or header.
    pub fn new(config: ProviderConfig, options: ChatOptions) -> Result<Self, LlmError> {
        let name = config
            .name
            .clone()
            .unwrap_or_else(|| Self::NAME.to_string());
        let http = Http::new(
            &name,
            &config,
            OPENAI_BASE_URL,
            "/chat/completions",
            Auth::Bearer,
            classify::ErrorDialect::OpenAi,
            &[],
        )?;
        Ok(OpenAiChatClient {
            http,
            options,
            default_model: config.default_model,
            extra_body: config.extra_body,
            fragments: FragmentCache::default(),
        })
    }

    /// OpenAI's own API with `key` and OpenAI's dialect options.
    ///
    /// # Errors
    /// `InvalidConfig` when the key is not a valid header value.
    pub fn openai(api_key: impl Into<crate::common::config::ApiKey>) -> Result<Self, LlmError> {
        Self::new(
            ProviderConfig::default().with_api_key(api_key),
            ChatOptions::openai(),
        )
    }

    /// The model used when a request names none.
    pub fn default_model(&self) -> Option<&str> {
        self.default_model.as_deref()
    }

    /// The request body exactly as it is sent, as JSON, for tests and
    /// callers that edit a body before sending it themselves.
    ///
    /// # Errors
    /// `InvalidConfig` when no model is named.
    pub fn build_body(&self, request: &Request, streaming: bool) -> Result<Value, LlmError> {
        let model = wire::model_for(self.http.provider(), request, self.default_model.as_deref())?;
        let (provider, options) = (self.http.provider(), &self.options);
        let detail = encode::chat_image_detail(model);
        let items = FragmentCache::uncached(&request.messages, encode::cacheable, |m| {
            encode::encode_message(provider, m, options, detail)
        })?;
        let body = encode::body(request, model, options, streaming, &items);
        wire::to_value(self.http.provider(), &body, &self.extra_body)
    }

    /// The request body as the bytes that are sent: typed wire structs
    /// borrowed from `request`, serialized once into a buffer sized up
    /// front.
    ///
    /// # Errors
    /// `InvalidConfig` when no model is named.
    pub fn encode_body(&self, request: &Request, streaming: bool) -> Result<Vec<u8>, LlmError> {
        let model = wire::model_for(self.http.provider(), request, self.default_model.as_deref())?;
        let (provider, options) = (self.http.provider(), &self.options);
        let detail = encode::chat_image_detail(model);
        let items = self.fragments.items_keyed(
            u64::from(detail.is_some()),
            &request.messages,
            encode::cacheable,
            |m| encode::encode_message(provider, m, options, detail),
        )?;
        let body = encode::body(request, model, options, streaming, &items);
        wire::encode(
            provider,
            fragments::body_capacity(&items, request),
            &body,
            &self.extra_body,
        )
    }

    async fn send(
        &self,
        request: &Request,
        streaming: bool,
    ) -> Result<reqwest::Response, LlmError> {
        let bytes = self.encode_body(request, streaming)?;
        self.http.post(bytes, request.purpose, streaming).await
    }
}

#[async_trait]
impl LlmClient for OpenAiChatClient {
    fn provider(&self) -> &str {
        self.http.provider()
    }

    async fn complete(&self, request: &Request) -> Result<Response, LlmError> {
        let response = self.send(request, false).await?;
        let value: Value = self.http.read_json(response).await?;
        if value.get("error").is_some_and(|e| !e.is_null()) {
            let mut body = classify::error_from_value(&value);
            body.message = self.http.scrub(body.message);
            return Err(classify::classify_stream_error(
                self.http.provider(),
                self.http.dialect(),
                &body,
            ));
        }
        // Read through `deserialize` (not `from_value`): the wire structs
        // borrow where they can, and from a `Value` they own.
        let answer = decode::WireAnswer::deserialize(value).map_err(|e| {
            self.http
                .malformed(format!("the answer is not a chat completion ({e})"))
        })?;
        let requested =
            wire::model_for(self.http.provider(), request, self.default_model.as_deref())?;
        Ok(decode::answer_to_response(
            self.http.provider(),
            requested,
            answer,
        ))
    }

    async fn stream(&self, request: &Request) -> Result<ResponseStream, LlmError> {
        let requested =
            wire::model_for(self.http.provider(), request, self.default_model.as_deref())?
                .to_string();
        let response = self.send(request, true).await?;
        let decoder =
            decode::ChatDecoder::new(self.http.provider(), self.http.dialect(), requested);
        Ok(stream::drive(
            self.http.provider(),
            self.http.max_response_bytes(),
            response,
            decoder,
        ))
    }
}
