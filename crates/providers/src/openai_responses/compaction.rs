//! OpenAI's native compaction: `POST {base}/responses/compact` with
//! `{"model", "input": [items]}`, answered by `output` items of which one
//! is an opaque `{"type": "compaction", "encrypted_content"}`.

use abridge_llm::LlmError;
use abridge_llm::Purpose;
use abridge_llm::Request;
use abridge_llm::Usage;
use async_trait::async_trait;
use serde_json::Value;
use serde_json::json;

use super::OpenAiResponsesClient;
use super::ResponsesOptions;
use crate::common::classify::ErrorDialect;
use crate::common::config::ApiKey;
use crate::common::config::ProviderConfig;
use crate::common::http::Auth;
use crate::common::http::Http;
use crate::common::native::COMPACTION_ITEM;
use crate::common::native::NativeAnswer;
use crate::common::native::NativeCompaction;
use crate::common::native::NativeCompactor;
use crate::common::native::remote_config;
use crate::openai_chat::OPENAI_BASE_URL;

/// Path OpenAI's native compaction is posted to, after the base URL.
const RESPONSES_COMPACT_PATH: &str = "/responses/compact";

/// OpenAI's native compaction endpoint.
#[derive(Debug)]
pub struct ResponsesCompaction {
    http: Http,
    model: String,
    encoder: OpenAiResponsesClient,
}

impl ResponsesCompaction {
    /// Provider name recorded with the native output.
    pub const NAME: &'static str = OpenAiResponsesClient::NAME;

    /// The endpoint under `base` (empty: OpenAI's public API; a URL
    /// already ending in `/responses/compact` is used as it is).
    ///
    /// # Errors
    /// `InvalidConfig` for a URL that is not http(s) or a bad header.
    pub fn new(
        base: &str,
        model: impl Into<String>,
        key: Option<ApiKey>,
        headers: &[(String, String)],
    ) -> Result<Self, LlmError> {
        let base = if base.is_empty() {
            OPENAI_BASE_URL
        } else {
            base
        };
        let trimmed = base.trim_end_matches('/');
        let root = trimmed
            .strip_suffix(RESPONSES_COMPACT_PATH)
            .unwrap_or(trimmed);
        let http = Http::new(
            Self::NAME,
            &remote_config(root, key, headers),
            OPENAI_BASE_URL,
            RESPONSES_COMPACT_PATH,
            Auth::Bearer,
            ErrorDialect::OpenAi,
            &[],
        )?;
        let encoder =
            OpenAiResponsesClient::new(ProviderConfig::new(root), ResponsesOptions::default())?;
        Ok(ResponsesCompaction {
            http,
            model: model.into(),
            encoder,
        })
    }

    /// The JSON body for `request` (the conversation to compact, as the
    /// caller chose it): `{model, input}`, the input items being its
    /// Responses encoding, so a previous compaction the conversation
    /// replays goes as its `compaction` item.
    ///
    /// # Errors
    /// `InvalidConfig` when no model is named.
    pub fn body(&self, request: &Request) -> Result<Value, LlmError> {
        let encoded = self.encoder.build_body(request, false)?;
        Ok(json!({
            "model": self.model,
            "input": encoded.get("input").cloned().unwrap_or(Value::Array(Vec::new())),
        }))
    }
}

#[async_trait]
impl NativeCompactor for ResponsesCompaction {
    fn name(&self) -> &str {
        self.http.provider()
    }

    fn url(&self) -> &str {
        self.http.url()
    }

    fn account(&self) -> &str {
        self.http.account()
    }

    fn model(&self) -> &str {
        &self.model
    }

    async fn post(&self, body: &Value) -> Result<NativeAnswer, LlmError> {
        let answer = self.http.post_json(body, Purpose::Compaction).await?;
        let output = answer
            .get("output")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let count = |path: &[&str]| {
            let mut value = answer.get("usage");
            for key in path {
                value = value.and_then(|v| v.get(*key));
            }
            value.and_then(Value::as_u64).unwrap_or(0)
        };
        let cached = count(&["input_tokens_details", "cached_tokens"]);
        let usage = Usage {
            input: count(&["input_tokens"]).saturating_sub(cached),
            output: count(&["output_tokens"]),
            cache_read: cached,
            cache_write: 0,
        };
        let model = answer
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(&self.model)
            .to_string();
        if !output
            .iter()
            .any(|item| item.get("type").and_then(Value::as_str) == Some(COMPACTION_ITEM))
        {
            return Ok(NativeAnswer::Missing {
                reason: "the answer holds no compaction item".to_string(),
                usage,
                model,
            });
        }
        Ok(NativeAnswer::Compacted(NativeCompaction {
            text: None,
            output,
            usage,
            model,
        }))
    }
}
