//! Anthropic's server-side compaction (beta), asked for explicitly on
//! `POST {base}/v1/messages`: the answer's compaction block carries a
//! readable summary and is itself what a later request replays.

use abridge_llm::LlmError;
use abridge_llm::Purpose;
use abridge_llm::Request;
use abridge_llm::Usage;
use async_trait::async_trait;
use serde_json::Value;
use serde_json::json;

use super::ANTHROPIC_BASE_URL;
use super::ANTHROPIC_COMPACTION_BETA;
use super::ANTHROPIC_VERSION;
use super::AnthropicClient;
use super::AnthropicOptions;
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

/// Anthropic's compaction strategy, as named in `context_management.edits`.
const ANTHROPIC_COMPACTION_EDIT: &str = "compact_20260112";
/// The smallest trigger Anthropic accepts, in input tokens: a span
/// smaller than this is never sent there (the local summary is used).
pub const ANTHROPIC_MIN_TRIGGER: u64 = 50_000;
/// The user turn that closes an Anthropic compaction request whose span
/// ends on the assistant: the models that compact reject a request ending
/// on an assistant message (prefill), and the documented shape ends on the
/// user.
const ANTHROPIC_CLOSING_TURN: &str = "Continue.";

/// Anthropic's server-side compaction, asked for explicitly: the
/// conversation is sent with a `compact_20260112` edit whose trigger is
/// the smallest allowed and `pause_after_compaction`, so the answer is
/// the compaction block alone (`stop_reason: "compaction"`).
#[derive(Debug)]
pub struct AnthropicCompaction {
    http: Http,
    model: String,
    encoder: AnthropicClient,
}

impl AnthropicCompaction {
    /// Provider name recorded with the native block.
    pub const NAME: &'static str = AnthropicClient::NAME;

    /// The Messages endpoint under `base` (empty: Anthropic's public API).
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
            ANTHROPIC_BASE_URL
        } else {
            base
        };
        let root = base.trim_end_matches('/').trim_end_matches("/v1");
        let http = Http::new(
            Self::NAME,
            &remote_config(root, key, headers),
            ANTHROPIC_BASE_URL,
            "/v1/messages",
            Auth::XApiKey,
            ErrorDialect::Anthropic,
            &[
                ("anthropic-version", ANTHROPIC_VERSION),
                ("anthropic-beta", ANTHROPIC_COMPACTION_BETA),
            ],
        )?;
        let encoder = AnthropicClient::new(ProviderConfig::new(root), AnthropicOptions::default())?;
        Ok(AnthropicCompaction {
            http,
            model: model.into(),
            encoder,
        })
    }

    /// The `anthropic-beta` header the call sends: the compaction flag and
    /// the caller's own.
    pub fn beta(&self) -> String {
        self.http.betas(&[])
    }

    /// The JSON body for `request` (the conversation to compact, as the
    /// caller chose it): its Messages encoding with `max_tokens` as the
    /// output cap, plus the compaction edit. A conversation that ends on
    /// the assistant is closed by a short user turn, since the request
    /// must end on the user.
    ///
    /// # Errors
    /// `InvalidConfig` when no model is named.
    pub fn body(&self, request: &Request, max_tokens: u32) -> Result<Value, LlmError> {
        let mut request = request.clone();
        request.max_output_tokens = Some(max_tokens);
        let mut body = self.encoder.build_body(&request, false)?;
        if let Some(turns) = body.get_mut("messages").and_then(Value::as_array_mut)
            && turns
                .last()
                .is_some_and(|turn| turn.get("role").and_then(Value::as_str) == Some("assistant"))
        {
            turns.push(json!({
                "role": "user",
                "content": [{"type": "text", "text": ANTHROPIC_CLOSING_TURN}],
            }));
        }
        body["context_management"] = json!({"edits": [{
            "type": ANTHROPIC_COMPACTION_EDIT,
            "trigger": {"type": "input_tokens", "value": ANTHROPIC_MIN_TRIGGER},
            "pause_after_compaction": true,
        }]});
        Ok(body)
    }
}

#[async_trait]
impl NativeCompactor for AnthropicCompaction {
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
        let usage = answer.get("usage").cloned().unwrap_or(Value::Null);
        let read = |value: &Value, key: &str| value.get(key).and_then(Value::as_u64).unwrap_or(0);
        let mut total = Usage::default();
        match usage.get("iterations").and_then(Value::as_array) {
            Some(iterations) if !iterations.is_empty() => {
                for step in iterations {
                    total.add(&Usage {
                        input: read(step, "input_tokens"),
                        output: read(step, "output_tokens"),
                        cache_read: read(step, "cache_read_input_tokens"),
                        cache_write: read(step, "cache_creation_input_tokens"),
                    });
                }
            }
            _ => {
                total = Usage {
                    input: read(&usage, "input_tokens"),
                    output: read(&usage, "output_tokens"),
                    cache_read: read(&usage, "cache_read_input_tokens"),
                    cache_write: read(&usage, "cache_creation_input_tokens"),
                };
            }
        }
        let model = answer
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(&self.model)
            .to_string();
        let missing = |reason: &str| {
            Ok(NativeAnswer::Missing {
                reason: reason.to_string(),
                usage: total,
                model: model.clone(),
            })
        };
        let blocks = answer
            .get("content")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let Some(block) = blocks
            .iter()
            .find(|b| b.get("type").and_then(Value::as_str) == Some(COMPACTION_ITEM))
        else {
            return missing(
                "the answer holds no compaction block (was the input below the trigger?)",
            );
        };
        let Some(text) = block
            .get("content")
            .and_then(Value::as_str)
            .filter(|t| !t.trim().is_empty())
        else {
            return missing("the compaction block is empty (the provider failed to summarize)");
        };
        Ok(NativeAnswer::Compacted(NativeCompaction {
            text: Some(text.to_string()),
            output: vec![block.clone()],
            usage: total,
            model,
        }))
    }
}
