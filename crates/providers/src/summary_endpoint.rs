//! A summary service driven like a model, so a summarizer's windows,
//! retries and validation apply to it unchanged.

use std::fmt;

use abridge_llm::LlmClient;
use abridge_llm::LlmError;
use abridge_llm::Message;
use abridge_llm::Request;
use abridge_llm::Response;
use abridge_llm::Role;
use abridge_llm::StopReason;
use abridge_llm::Usage;
use async_trait::async_trait;
use serde_json::Value;
use serde_json::json;

use crate::common::classify::ErrorDialect;
use crate::common::config::ApiKey;
use crate::common::http::Auth;
use crate::common::http::Http;
use crate::common::native::remote_config;

/// Provider name of a [`SummaryEndpoint`] in errors and attempts.
pub const SUMMARY_ENDPOINT: &str = "summary-endpoint";

/// A summary service: the request's system messages become
/// `system_prompt`, the rest of its text `prompt`, its output cap
/// `max_tokens`; `{"summary"}` comes back as the assistant's text, with
/// `usage` and `model` when the service reports them.
pub struct SummaryEndpoint {
    http: Http,
}

impl fmt::Debug for SummaryEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SummaryEndpoint")
            .field("http", &self.http)
            .finish()
    }
}

impl SummaryEndpoint {
    /// The service at `url`, authenticated with `key` (as a bearer token)
    /// when given.
    ///
    /// # Errors
    /// `InvalidConfig` for a URL that is not http(s) or a bad header.
    pub fn new(
        url: &str,
        key: Option<ApiKey>,
        headers: &[(String, String)],
    ) -> Result<Self, LlmError> {
        let http = Http::new(
            SUMMARY_ENDPOINT,
            &remote_config(url, key, headers),
            "",
            "",
            Auth::Bearer,
            ErrorDialect::Compatible,
            &[],
        )?;
        Ok(SummaryEndpoint { http })
    }

    /// The JSON body sent for `request`.
    fn body(request: &Request) -> Value {
        let join = |system: bool| {
            request
                .messages
                .iter()
                .filter(|m| matches!(m.role, Role::System | Role::Developer) == system)
                .map(|m| m.plain_text())
                .collect::<Vec<_>>()
                .join("\n\n")
        };
        json!({
            "system_prompt": join(true),
            "prompt": join(false),
            "max_tokens": request.max_output_tokens.unwrap_or(4096),
        })
    }
}

#[async_trait]
impl LlmClient for SummaryEndpoint {
    fn provider(&self) -> &str {
        SUMMARY_ENDPOINT
    }

    async fn complete(&self, request: &Request) -> Result<Response, LlmError> {
        let answer = self
            .http
            .post_json(&Self::body(request), request.purpose)
            .await?;
        let Some(summary) = answer.get("summary").and_then(Value::as_str) else {
            return Err(LlmError::Transport {
                provider: SUMMARY_ENDPOINT.to_string(),
                message: "the answer has no \"summary\" string".to_string(),
            });
        };
        let count = |key: &str| {
            answer
                .get("usage")
                .and_then(|u| u.get(key))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        let model = answer
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(SUMMARY_ENDPOINT)
            .to_string();
        Ok(Response {
            message: Message::assistant(summary),
            usage: Usage {
                input: count("input_tokens"),
                output: count("output_tokens"),
                ..Usage::default()
            },
            stop_reason: StopReason::EndTurn,
            model,
            native: None,
        })
    }
}
