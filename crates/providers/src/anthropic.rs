//! Anthropic Messages (`POST {base}/v1/messages`) with prompt-cache markers.

pub(crate) mod compaction;
pub(crate) mod count_tokens;
pub(crate) mod decode;
pub(crate) mod encode;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;
use serde_json::json;

use crate::anthropic::decode::AnthropicDecoder;
use crate::anthropic::decode::WireUsage;
use crate::anthropic::decode::stop_reason;
use crate::common::classify;
use crate::common::config::ProviderConfig;
use crate::common::fragments;
use crate::common::fragments::FragmentCache;
use crate::common::http::Auth;
use crate::common::http::Http;
use crate::common::stream;
use crate::common::wire;
use abridge_llm::Block;
use abridge_llm::LlmClient;
use abridge_llm::LlmError;
use abridge_llm::Request;
use abridge_llm::Response;
use abridge_llm::ResponseStream;
use abridge_llm::Usage;

/// Public Anthropic API base (the client appends `/v1/messages`).
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// The API version header value this client speaks.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

pub use crate::common::options::ANTHROPIC_COMPACTION_BETA;

pub use crate::common::options::AnthropicOptions;

/// A Messages API client.
///
/// Wire mapping: leading system and developer messages become `system`
/// text blocks (later ones become user text, since the API has no system
/// turn mid-conversation); user text and images are `text` and `image`
/// blocks (base64 or url sources); assistant thinking with a signature is a
/// `thinking` block (without one it is dropped: the API rejects unsigned
/// thinking), redacted thinking a `redacted_thinking` block, tool calls
/// `tool_use` blocks; tool results are `tool_result` blocks (text and
/// images, `is_error`) inside a user message. A compaction block this
/// provider wrote (a replayed native compaction) goes back in an
/// assistant turn with the keys the API reads on input, and the request
/// carries the compaction beta flag ([`AnthropicClient::betas`]).
/// Consecutive messages of the
/// same wire role are merged into one, and empty text blocks are left out,
/// both because the API rejects them. `ToolChoice::None` sends the tools
/// with `tool_choice: {"type":"none"}`; `Required` is `{"type":"any"}`.
#[derive(Debug)]
pub struct AnthropicClient {
    http: Http,
    options: AnthropicOptions,
    default_model: Option<String>,
    extra_body: serde_json::Map<String, Value>,
    fragments: FragmentCache,
}

impl AnthropicClient {
    /// Default provider name.
    pub const NAME: &'static str = crate::common::options::ANTHROPIC;

    /// A client for `config`, posting to `{base_url}/v1/messages` (base
    /// defaults to [`ANTHROPIC_BASE_URL`]; a base ending in `/v1` is
    /// accepted too) with `anthropic-version`
    /// [`ANTHROPIC_VERSION`]; the key goes in `x-api-key`.
    ///
    /// # Errors
    /// `InvalidConfig` for a bad URL or header.
    pub fn new(mut config: ProviderConfig, options: AnthropicOptions) -> Result<Self, LlmError> {
        let name = strip_v1(&mut config);
        let http = Http::new(
            &name,
            &config,
            ANTHROPIC_BASE_URL,
            "/v1/messages",
            Auth::XApiKey,
            classify::ErrorDialect::Anthropic,
            &[("anthropic-version", ANTHROPIC_VERSION)],
        )?;
        Ok(AnthropicClient {
            http,
            options,
            default_model: config.default_model,
            extra_body: config.extra_body,
            fragments: FragmentCache::default(),
        })
    }

    /// Anthropic's own API with `key`.
    ///
    /// # Errors
    /// `InvalidConfig` when the key is not a valid header value.
    pub fn anthropic(api_key: impl Into<crate::common::config::ApiKey>) -> Result<Self, LlmError> {
        Self::new(
            ProviderConfig::default().with_api_key(api_key),
            AnthropicOptions::default(),
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
        let provider = self.http.provider();
        let lead = encode::leading_system(request);
        let items = FragmentCache::uncached(
            &request.messages,
            |index, _| index >= lead,
            |m| encode::encode_message(provider, m),
        )?;
        let body = encode::body(request, model, &self.options, streaming, &items);
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
        let provider = self.http.provider();
        let lead = encode::leading_system(request);
        let items = self.fragments.items(
            &request.messages,
            |index, _| index >= lead,
            |m| encode::encode_message(provider, m),
        )?;
        let body = encode::body(request, model, &self.options, streaming, &items);
        wire::encode(
            provider,
            fragments::body_capacity(&items, request),
            &body,
            &self.extra_body,
        )
    }

    /// The `anthropic-beta` header `request` is sent with: the flags its
    /// contents need (a replayed compaction block needs
    /// [`ANTHROPIC_COMPACTION_BETA`]) joined to those the configuration
    /// sends; empty when there are none.
    pub fn betas(&self, request: &Request) -> String {
        self.http.betas(&encode::betas(request))
    }

    async fn send(
        &self,
        request: &Request,
        streaming: bool,
    ) -> Result<reqwest::Response, LlmError> {
        let bytes = self.encode_body(request, streaming)?;
        let betas = encode::betas(request);
        self.http
            .post_with_betas(bytes, request.purpose, streaming, &betas)
            .await
    }
}

fn block_from(wire: &Value) -> Option<Block> {
    let text = |key: &str| {
        wire.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    match wire.get("type").and_then(Value::as_str)? {
        "text" => Some(Block::Text { text: text("text") }).filter(|b| b.as_text() != Some("")),
        "thinking" => Some(Block::Thinking {
            thinking: text("thinking"),
            signature: wire
                .get("signature")
                .and_then(Value::as_str)
                .map(str::to_string),
        }),
        "redacted_thinking" => Some(Block::RedactedThinking { data: text("data") }),
        "tool_use" => Some(Block::ToolCall {
            id: text("id"),
            name: text("name"),
            arguments: wire.get("input").cloned().unwrap_or_else(|| json!({})),
        }),
        _ => None,
    }
}

/// Accepts a base written the OpenAI way (`.../v1`), since every path
/// this client posts to adds it, and returns the provider name to use.
pub(crate) fn strip_v1(config: &mut ProviderConfig) -> String {
    if let Some(base) = &mut config.base_url {
        let trimmed = base.trim_end_matches('/');
        if let Some(stripped) = trimmed.strip_suffix("/v1") {
            *base = stripped.to_string();
        }
    }
    config
        .name
        .clone()
        .unwrap_or_else(|| AnthropicClient::NAME.to_string())
}

#[async_trait]
impl LlmClient for AnthropicClient {
    fn provider(&self) -> &str {
        self.http.provider()
    }

    fn native_dialect(&self) -> Option<&str> {
        Some(Self::NAME)
    }

    fn native_account(&self) -> Option<&str> {
        Some(self.http.account())
    }

    async fn complete(&self, request: &Request) -> Result<Response, LlmError> {
        let requested =
            wire::model_for(self.http.provider(), request, self.default_model.as_deref())?;
        let response = self.send(request, false).await?;
        let value: Value = self.http.read_json(response).await?;
        if value.get("type").and_then(Value::as_str) == Some("error") {
            let mut body = classify::error_from_value(&value);
            body.message = self.http.scrub(body.message);
            return Err(classify::classify_stream_error(
                self.http.provider(),
                self.http.dialect(),
                &body,
            ));
        }
        let content = value
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| self.http.malformed("the answer has no content list"))?
            .iter()
            .filter_map(block_from)
            .collect();
        let mut usage = Usage::default();
        if let Some(wire_usage) = value.get("usage") {
            WireUsage::deserialize(wire_usage)
                .map_err(|e| {
                    self.http
                        .malformed(format!("the answer's usage is malformed ({e})"))
                })?
                .apply(&mut usage);
        }
        let model = value
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(requested)
            .to_string();
        let stop = stop_reason(value.get("stop_reason").and_then(Value::as_str));
        Ok(stream::response(
            self.http.provider(),
            model,
            content,
            usage,
            stop,
            None,
        ))
    }

    async fn stream(&self, request: &Request) -> Result<ResponseStream, LlmError> {
        let requested =
            wire::model_for(self.http.provider(), request, self.default_model.as_deref())?
                .to_string();
        let response = self.send(request, true).await?;
        let decoder = AnthropicDecoder::new(self.http.provider(), self.http.dialect(), requested);
        Ok(stream::drive(
            self.http.provider(),
            self.http.max_response_bytes(),
            response,
            decoder,
        ))
    }
}
