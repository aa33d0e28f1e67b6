//! What a caller tells a provider client: where it lives, how to
//! authenticate, and which extras to send.

use std::fmt;
use std::time::Duration;

/// A provider key. It never prints: `Debug` shows a placeholder and there is
/// no `Display`, so a key cannot leak through logs, errors or panics by
/// accident.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key read by the caller (the CLI reads it from an environment
    /// variable the user names; libraries never read the environment).
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// The key itself, for building the authentication header. Callers
    /// should not need it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl From<String> for ApiKey {
    fn from(key: String) -> Self {
        ApiKey(key)
    }
}

impl From<&str> for ApiKey {
    fn from(key: &str) -> Self {
        ApiKey(key.to_string())
    }
}

/// How to reach one provider endpoint. Every field is chosen by the caller;
/// nothing is read from the environment.
///
/// `Debug` prints header names but not their values, and the key as a
/// placeholder, since callers often put secrets into extra headers too.
#[derive(Clone, Default)]
pub struct ProviderConfig {
    /// Base URL up to, not including, the endpoint path. `None` uses the
    /// provider's public API (`https://api.openai.com/v1`,
    /// `https://api.anthropic.com`). For llama.cpp, vLLM or Ollama give
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: Option<String>,
    /// The key, sent as `Authorization: Bearer` (OpenAI) or `x-api-key`
    /// (Anthropic). `None` sends no authentication (local servers).
    pub api_key: Option<ApiKey>,
    /// Extra headers sent with every request (gateway routing, beta flags).
    pub headers: Vec<(String, String)>,
    /// Name used in errors, logs and `Origin::Model`; `None` uses the
    /// client's default (`openai-chat`, `openai-responses`, `anthropic`).
    pub name: Option<String>,
    /// Model used when a request's `model` is empty, so a caller that knows
    /// only an endpoint (the CLI's `--llm-model`) can build requests without
    /// repeating it.
    pub default_model: Option<String>,
    /// When set, each request carries this header with the call's
    /// [`Purpose`](abridge_llm::Purpose) (`turn`, `compaction`, `branch_summary`,
    /// `handoff`), so a gateway can route or bill compaction work apart.
    pub purpose_header: Option<String>,
    /// Top-level JSON fields merged into every request body (for example
    /// `reasoning`, `prompt_cache_key` or a server's sampling options).
    /// They override fields the client wrote.
    pub extra_body: serde_json::Map<String, serde_json::Value>,
    /// Time allowed to open the connection; `None` waits as long as the OS
    /// does. The whole-call timeout belongs to [`RetryingClient`](abridge_llm::RetryingClient).
    pub connect_timeout: Option<Duration>,
    /// The largest answer body read, in bytes; `None` uses
    /// [`DEFAULT_MAX_RESPONSE_BYTES`]. An answer (or stream) that grows past
    /// it is dropped as soon as it does, with
    /// [`LlmError::Unusable`](abridge_llm::LlmError::Unusable) naming the cap, so a
    /// broken or hostile endpoint cannot make the process hold an unbounded
    /// reply in memory.
    pub max_response_bytes: Option<usize>,
}

/// The answer-size cap when [`ProviderConfig::max_response_bytes`] is unset:
/// 32 MiB, far above any model reply (a 128k-token answer is under 1 MiB of
/// text), and low enough that one runaway reply cannot exhaust memory.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;

impl ProviderConfig {
    /// A configuration for the endpoint at `base_url`.
    pub fn new(base_url: impl Into<String>) -> Self {
        ProviderConfig {
            base_url: Some(base_url.into()),
            ..ProviderConfig::default()
        }
    }

    /// Sets the key.
    pub fn with_api_key(mut self, key: impl Into<ApiKey>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// Adds one header sent with every request.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sets the model used when a request names none.
    pub fn with_default_model(mut self, model: impl Into<String>) -> Self {
        self.default_model = Some(model.into());
        self
    }

    /// Sets the provider name shown in errors, logs and origins.
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sends the call's purpose in header `name`.
    pub fn with_purpose_header(mut self, name: impl Into<String>) -> Self {
        self.purpose_header = Some(name.into());
        self
    }

    /// Caps the answer body at `bytes` (see
    /// [`max_response_bytes`](Self::max_response_bytes)).
    pub fn with_max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = Some(bytes);
        self
    }

    /// Merges one field into every request body.
    pub fn with_body_field(mut self, key: impl Into<String>, value: serde_json::Value) -> Self {
        self.extra_body.insert(key.into(), value);
        self
    }
}

impl fmt::Debug for ProviderConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("ProviderConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("header_names", &header_names)
            .field("name", &self.name)
            .field("default_model", &self.default_model)
            .field("purpose_header", &self.purpose_header)
            .field(
                "extra_body_keys",
                &self.extra_body.keys().collect::<Vec<_>>(),
            )
            .field("connect_timeout", &self.connect_timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_key_and_header_values() {
        let config = ProviderConfig::new("http://127.0.0.1:1/v1")
            .with_api_key("sk-secret-123456")
            .with_header("x-gateway-token", "gw-secret-654321");
        let shown = format!("{config:?}");
        assert!(!shown.contains("sk-secret-123456"), "{shown}");
        assert!(!shown.contains("gw-secret-654321"), "{shown}");
        assert!(shown.contains("x-gateway-token"), "{shown}");
        assert!(shown.contains("ApiKey(<redacted>)"), "{shown}");
    }
}
