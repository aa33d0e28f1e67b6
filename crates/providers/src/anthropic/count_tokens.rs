//! Anthropic's token counter (`POST {base}/v1/messages/count_tokens`): the
//! provider's own count of a Messages request's input, without running the
//! model.
//!
//! The body is the Messages body minus what only generation reads: the
//! same encoder builds it (so what is counted is what a turn would send),
//! and only `model`, `messages`, `system`, `tools`, `tool_choice` and
//! `thinking` are kept; `max_tokens`, `stream`, `temperature` and any other
//! generation field are dropped, and no prompt-cache markers are written
//! (they change nothing in the count). The answer is `{"input_tokens": N}`.
//! Calls are free but rate limited per minute, apart from the Messages
//! limits; Anthropic calls the figure an estimate that may differ from a
//! real call's by a small amount.

use serde_json::Value;

use crate::anthropic::ANTHROPIC_BASE_URL;
use crate::anthropic::ANTHROPIC_VERSION;
use crate::anthropic::AnthropicClient;
use crate::anthropic::AnthropicOptions;
use crate::anthropic::encode;
use crate::anthropic::strip_v1;
use crate::common::classify;
use crate::common::config::ProviderConfig;
use crate::common::http::Auth;
use crate::common::http::Http;
use crate::common::wire;
use abridge_llm::LlmError;
use abridge_llm::Request;

/// The body fields the counting endpoint reads.
const COUNTED_FIELDS: &[&str] = &[
    "model",
    "messages",
    "system",
    "tools",
    "tool_choice",
    "thinking",
];

/// A client for Anthropic's token-counting endpoint.
///
/// Errors are classified as every Anthropic call's ([`LlmError`]): a 429
/// is `RateLimited` with the server's Retry-After, a 5xx or 529 `Server`,
/// another 4xx `BadRequest` with its status (a model the endpoint does not
/// count answers 400), an answer that is not `{"input_tokens": N}`
/// `Transport`. The key never appears in an error.
#[derive(Debug)]
pub struct CountTokensClient {
    http: Http,
    /// Builds bodies; never sends.
    encoder: AnthropicClient,
}

impl CountTokensClient {
    /// The path posted to, after the base.
    pub const PATH: &'static str = "/v1/messages/count_tokens";

    /// A counter for `config` (the same configuration as an
    /// [`AnthropicClient`]'s: base defaulting to [`ANTHROPIC_BASE_URL`], a
    /// base ending in `/v1` accepted, the key in `x-api-key`,
    /// `anthropic-version` [`ANTHROPIC_VERSION`]).
    ///
    /// # Errors
    /// `InvalidConfig` for a bad URL or header.
    pub fn new(mut config: ProviderConfig) -> Result<Self, LlmError> {
        let name = strip_v1(&mut config);
        let http = Http::new(
            &name,
            &config,
            ANTHROPIC_BASE_URL,
            Self::PATH,
            Auth::XApiKey,
            classify::ErrorDialect::Anthropic,
            &[("anthropic-version", ANTHROPIC_VERSION)],
        )?;
        let encoder = AnthropicClient::new(
            config,
            AnthropicOptions {
                prompt_cache: false,
                ..AnthropicOptions::default()
            },
        )?;
        Ok(CountTokensClient { http, encoder })
    }

    /// The provider name errors carry.
    pub fn provider(&self) -> &str {
        self.http.provider()
    }

    /// The `anthropic-beta` header counting `request` sends (see
    /// [`AnthropicClient::betas`]).
    pub fn betas(&self, request: &Request) -> String {
        self.http.betas(&encode::betas(request))
    }

    /// The body exactly as it is sent, for tests and benchmarks.
    ///
    /// # Errors
    /// `InvalidConfig` when no model is named.
    pub fn build_body(&self, request: &Request) -> Result<Value, LlmError> {
        let mut body = self.encoder.build_body(request, false)?;
        if let Value::Object(map) = &mut body {
            map.retain(|key, _| COUNTED_FIELDS.contains(&key.as_str()));
        }
        Ok(body)
    }

    /// Anthropic's count of `request`'s input tokens: its messages, system
    /// prompt and tools.
    ///
    /// # Errors
    /// Classified as described on the type.
    ///
    /// # Cancel safety
    /// Dropping the future drops the connection; nothing is left behind.
    pub async fn count(&self, request: &Request) -> Result<u64, LlmError> {
        let body = self.build_body(request)?;
        let bytes = wire::encode(self.http.provider(), 0, &body, &serde_json::Map::new())?;
        let betas = encode::betas(request);
        let response = self
            .http
            .post_with_betas(bytes, request.purpose, false, &betas)
            .await?;
        let value: Value = self.http.read_json(response).await?;
        if value.get("type").and_then(Value::as_str) == Some("error") {
            let mut error = classify::error_from_value(&value);
            error.message = self.http.scrub(error.message);
            return Err(classify::classify_stream_error(
                self.http.provider(),
                self.http.dialect(),
                &error,
            ));
        }
        value
            .get("input_tokens")
            .and_then(Value::as_u64)
            .ok_or_else(|| self.http.malformed("the answer has no input_tokens count"))
    }
}
