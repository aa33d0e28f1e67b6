//! OpenAI's native compaction: `POST {base}/responses/compact` with
//! `{"model", "input": [items]}`, answered by `output` items of which one
//! is an opaque `{"type": "compaction", "encrypted_content"}`.

use abridge_compact::Plan;
use abridge_llm::ApiKey;
use abridge_llm::Auth;
use abridge_llm::ErrorDialect;
use abridge_llm::Http;
use abridge_llm::LlmError;
use abridge_llm::OPENAI_BASE_URL;
use abridge_llm::OpenAiResponsesClient;
use abridge_llm::ProviderConfig;
use abridge_llm::Purpose;
use abridge_llm::ResponsesOptions;
use abridge_llm::Usage;
use async_trait::async_trait;
use serde_json::Value;
use serde_json::json;

use super::native::COMPACTION_ITEM;
use super::native::NativeAnswer;
use super::native::NativeCompaction;
use super::native::NativeReader;
use super::native::NativeTarget;
use super::native::compaction_request;
use super::native::remote_config;
use crate::cache_aligned::ConversationPrefix;

/// Path OpenAI's native compaction is posted to, after the base URL.
const RESPONSES_COMPACT_PATH: &str = "/responses/compact";

/// OpenAI's native compaction endpoint.
#[derive(Debug)]
pub(crate) struct ResponsesCompact {
    http: Http,
    model: String,
    encoder: OpenAiResponsesClient,
}

impl ResponsesCompact {
    /// Provider name recorded with the native output.
    pub(crate) const NAME: &'static str = OpenAiResponsesClient::NAME;

    /// The endpoint under `base` (empty: OpenAI's public API; a URL
    /// already ending in `/responses/compact` is used as it is).
    ///
    /// # Errors
    /// `InvalidConfig` for a URL that is not http(s) or a bad header.
    pub(crate) fn new(
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
        Ok(ResponsesCompact {
            http,
            model: model.into(),
            encoder,
        })
    }

    /// The JSON body for `plan`: `{model, input}`, the input items being
    /// the Responses encoding of `prefix`'s system messages, the session's
    /// leading system messages and the planned span (see
    /// [`compaction_request`]: a previous OpenAI compaction at its head
    /// goes as its `compaction` item).
    ///
    /// # Errors
    /// `InvalidConfig` when no model is named.
    pub(crate) fn body(
        &self,
        prefix: Option<&ConversationPrefix>,
        plan: &Plan,
    ) -> Result<Value, LlmError> {
        let reader = NativeReader {
            provider: self.http.provider(),
            dialect: Self::NAME,
            account: self.http.account(),
            model: &self.model,
        };
        let request = compaction_request(reader, prefix, plan);
        let encoded = self.encoder.build_body(&request, false)?;
        Ok(json!({
            "model": self.model,
            "input": encoded.get("input").cloned().unwrap_or(Value::Array(Vec::new())),
        }))
    }
}

#[async_trait]
impl NativeTarget for ResponsesCompact {
    fn name(&self) -> &str {
        self.http.provider()
    }

    fn url(&self) -> &str {
        self.http.url()
    }

    fn account(&self) -> &str {
        self.http.account()
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
