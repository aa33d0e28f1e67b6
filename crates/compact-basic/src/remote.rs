//! `remote`: a checkpoint written somewhere else, falling back to the
//! local summary when that fails (feature `remote`).
//!
//! Three kinds of remote, chosen by [`RemoteKind`]:
//!
//! - [`RemoteKind::Endpoint`]: a summary service. `POST URL` with
//!   `{"system_prompt", "prompt", "max_tokens"}`, answered by
//!   `{"summary"}` (optionally `"usage": {"input_tokens",
//!   "output_tokens"}` and `"model"`). It is driven like a model through
//!   [`SummaryEndpoint`], so windows, retries and validation are the
//!   `soft` method's.
//! - [`RemoteKind::ChatCompletions`]: any OpenAI-compatible
//!   `/chat/completions` URL, through abridge-llm's `OpenAiChatClient`
//!   and the `soft` method (cache-aligned when a prefix is given).
//! - [`RemoteKind::ResponsesCompact`]: OpenAI's `POST
//!   {base}/responses/compact` with `{"model", "input": [items]}`. The
//!   answer's `output` (the user messages it kept plus one opaque
//!   `{"type": "compaction", "encrypted_content"}` item) is kept in the
//!   checkpoint's `details.native`, to be replayed only to the same
//!   provider; the checkpoint's text, which every other provider gets, is
//!   the local summary.
//!
//! Whatever fails (HTTP errors after retries, malformed bodies, unusable
//! answers), the local method (`digest` unless configured) writes the
//! checkpoint instead, and `details` says what failed and what was used
//! (`remote_error`; for native compaction also `remote_attempts`, each
//! call with its cost). A native answer without a compaction was billed:
//! it is final, never retried, and its cost counts in the checkpoint's
//! usage.

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use abridge_compact::Availability;
use abridge_compact::CompactError;
use abridge_compact::CompactionMethod;
use abridge_compact::Details;
use abridge_compact::MethodOutput;
use abridge_compact::Plan;
use abridge_llm::ApiKey;
use abridge_llm::ChatOptions;
use abridge_llm::LlmClient;
use abridge_llm::LlmError;
use abridge_llm::MaxTokensField;
use abridge_llm::Message;
use abridge_llm::OpenAiChatClient;
use abridge_llm::OpenAiResponsesClient;
use abridge_llm::ProviderConfig;
use abridge_llm::Purpose;
use abridge_llm::Request;
use abridge_llm::Response;
use abridge_llm::ResponsesOptions;
use abridge_llm::Role;
use abridge_llm::StopReason;
use abridge_llm::Usage;
use async_trait::async_trait;
use serde_json::Value;
use serde_json::json;

use crate::cache_aligned::ConversationPrefix;
use crate::candidates::AttemptLog;
use crate::candidates::CandidateSoftMethod;
use crate::candidates::SummarizerCandidates;
use crate::digest::DigestMethod;
use crate::record::AttemptsRecord;
use crate::record::NativeRecord;
use crate::record::RemoteRecord;
use crate::soft::SoftConfig;

/// The name `remote` registers under.
pub const REMOTE: &str = "remote";
/// Provider name of a [`SummaryEndpoint`] in errors and attempts.
pub const SUMMARY_ENDPOINT: &str = "summary-endpoint";
/// Path OpenAI's native compaction is posted to, after the base URL.
pub const RESPONSES_COMPACT_PATH: &str = "/responses/compact";
/// Output item type of OpenAI's opaque compaction, and content block type
/// of Anthropic's compaction.
pub const COMPACTION_ITEM: &str = "compaction";
/// Beta header value that enables Anthropic's server-side compaction.
pub const ANTHROPIC_COMPACTION_BETA: &str = "compact-2026-01-12";
/// Anthropic's compaction strategy, as named in `context_management.edits`.
pub const ANTHROPIC_COMPACTION_EDIT: &str = "compact_20260112";
/// The smallest trigger Anthropic accepts, in input tokens: a span
/// smaller than this is never sent there (the local summary is used).
pub const ANTHROPIC_MIN_TRIGGER: u64 = 50_000;
/// The user turn that closes an Anthropic compaction request whose span
/// ends on the assistant: the models that compact reject a request ending
/// on an assistant message (prefill), and the documented shape ends on the
/// user.
const ANTHROPIC_CLOSING_TURN: &str = "Continue.";
/// Stop reason with which [`NativeOnce`] reports an answer that holds no
/// usable compaction (its text says why).
const NO_COMPACTION: &str = "no_compaction";

/// Which remote writes the checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RemoteKind {
    /// A `{system_prompt, prompt, max_tokens}` -> `{summary}` service at
    /// the URL.
    Endpoint,
    /// An OpenAI-compatible server; the URL is its base (`.../v1`) or the
    /// full `.../chat/completions` address.
    ChatCompletions,
    /// OpenAI's `/responses/compact`; the URL is the base (empty: OpenAI's
    /// public API) or the full address.
    ResponsesCompact,
    /// Anthropic's server-side compaction (beta
    /// [`ANTHROPIC_COMPACTION_BETA`]) on `POST {base}/v1/messages`; the URL
    /// is the base (empty: Anthropic's public API).
    AnthropicCompaction,
}

/// Plain configuration of [`remote_method`].
#[derive(Clone)]
pub struct RemoteConfig {
    /// Which remote.
    pub kind: RemoteKind,
    /// Where it is (see [`RemoteKind`]).
    pub url: String,
    /// The model to ask (chat and compact); ignored by an endpoint.
    pub model: String,
    /// Sent as `Authorization: Bearer`; never logged.
    pub api_key: Option<ApiKey>,
    /// Extra headers on every request (values never logged).
    pub headers: Vec<(String, String)>,
    /// Retry, per-call timeout and early give-up.
    pub retry: abridge_llm::RetryPolicy,
    /// Windows and summary length for the endpoint and chat kinds.
    pub soft: SoftConfig,
    /// The live conversation's system prompt and tools: makes the chat
    /// kind cache-aligned and is replayed at the head of a compact input.
    pub prefix: Option<ConversationPrefix>,
    /// Writes the checkpoint when the remote fails, and the text of a
    /// native compaction. `None`: `digest`.
    pub local: Option<Arc<dyn CompactionMethod>>,
}

impl fmt::Debug for RemoteConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("RemoteConfig")
            .field("kind", &self.kind)
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key", &self.api_key)
            .field("header_names", &header_names)
            .field("retry", &self.retry)
            .field("soft", &self.soft)
            .field("prefix", &self.prefix.is_some())
            .field("local", &self.local.as_ref().map(|m| m.name().to_string()))
            .finish()
    }
}

impl RemoteConfig {
    /// A configuration of `kind` at `url` asking `model`, with defaults
    /// for everything else.
    pub fn new(kind: RemoteKind, url: impl Into<String>, model: impl Into<String>) -> Self {
        RemoteConfig {
            kind,
            url: url.into(),
            model: model.into(),
            api_key: None,
            headers: Vec::new(),
            retry: abridge_llm::RetryPolicy::default(),
            soft: SoftConfig::default(),
            prefix: None,
            local: None,
        }
    }
}

fn invalid(provider: &str, message: impl Into<String>) -> LlmError {
    LlmError::InvalidConfig {
        provider: provider.to_string(),
        message: message.into(),
    }
}

/// Headers with the key (`Authorization: Bearer`, or `x-api-key` when
/// `x_api_key`) and extras, values marked sensitive.
fn header_map(
    provider: &str,
    key: Option<&ApiKey>,
    x_api_key: bool,
    extra: &[(String, String)],
) -> Result<reqwest::header::HeaderMap, LlmError> {
    use reqwest::header::HeaderName;
    use reqwest::header::HeaderValue;
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Some(key) = key {
        let text = if x_api_key {
            key.expose().to_string()
        } else {
            format!("Bearer {}", key.expose())
        };
        let mut value = HeaderValue::from_str(&text)
            .map_err(|_| invalid(provider, "the api key is not a valid header value"))?;
        value.set_sensitive(true);
        let name = if x_api_key {
            HeaderName::from_static("x-api-key")
        } else {
            reqwest::header::AUTHORIZATION
        };
        headers.insert(name, value);
    }
    for (name, value) in extra {
        let header = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| invalid(provider, format!("header name {name:?} is not valid")))?;
        let mut value = HeaderValue::from_str(value).map_err(|_| {
            invalid(
                provider,
                format!("the value of header {name:?} is not valid"),
            )
        })?;
        value.set_sensitive(true);
        headers.insert(header, value);
    }
    Ok(headers)
}

fn check_url(provider: &str, url: &str) -> Result<(), LlmError> {
    if url.starts_with("http://") || url.starts_with("https://") {
        Ok(())
    } else {
        Err(invalid(provider, format!("url {url:?} is not http(s)")))
    }
}

/// `message` with any occurrence of the key replaced.
fn scrub(message: &str, key: Option<&ApiKey>) -> String {
    match key {
        Some(key) if !key.expose().is_empty() => message.replace(key.expose(), "<redacted>"),
        _ => message.to_string(),
    }
}

/// Posts `body` and returns the answer's JSON, classifying failures.
async fn post_json(
    http: &reqwest::Client,
    provider: &str,
    url: &str,
    headers: &reqwest::header::HeaderMap,
    key: Option<&ApiKey>,
    body: &Value,
) -> Result<Value, LlmError> {
    let transport = |message: String| LlmError::Transport {
        provider: provider.to_string(),
        message: scrub(&message, key),
    };
    let bytes = serde_json::to_vec(body)
        .map_err(|e| transport(format!("could not encode the request: {e}")))?;
    let response = http
        .post(url)
        .headers(headers.clone())
        .body(bytes)
        .send()
        .await
        .map_err(|e| transport(e.without_url().to_string()))?;
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| abridge_llm::parse_retry_after(v, SystemTime::now()));
    let text = response
        .text()
        .await
        .map_err(|e| transport(format!("the answer was cut: {}", e.without_url())))?;
    if !(200..300).contains(&status) {
        return Err(abridge_llm::classify_http_error(
            provider,
            status,
            retry_after,
            scrub(&text, key).as_bytes(),
        ));
    }
    serde_json::from_str(&text).map_err(|e| transport(format!("the answer is not JSON: {e}")))
}

/// What a native compaction attempt came to.
enum NativeAttempt {
    /// The provider answered; the log holds what every call cost.
    Answered(Response, AttemptLog),
    /// Building or sending the request failed: the local method's result.
    FellBack(Result<MethodOutput, CompactError>),
}

/// A summary service driven like a model: the request's system messages
/// become `system_prompt`, the rest of its text `prompt`, its output cap
/// `max_tokens`; `{"summary"}` comes back as the assistant's text.
pub struct SummaryEndpoint {
    http: reqwest::Client,
    url: String,
    headers: reqwest::header::HeaderMap,
    key: Option<ApiKey>,
}

impl fmt::Debug for SummaryEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SummaryEndpoint")
            .field("url", &self.url)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl SummaryEndpoint {
    /// The service at `url`, authenticated with `key` when given.
    ///
    /// # Errors
    /// `InvalidConfig` for a URL that is not http(s) or a bad header.
    pub fn new(
        url: impl Into<String>,
        key: Option<ApiKey>,
        headers: &[(String, String)],
    ) -> Result<Self, LlmError> {
        let url = url.into();
        check_url(SUMMARY_ENDPOINT, &url)?;
        Ok(SummaryEndpoint {
            http: reqwest::Client::new(),
            headers: header_map(SUMMARY_ENDPOINT, key.as_ref(), false, headers)?,
            url,
            key,
        })
    }

    /// The JSON body sent for `request`.
    pub fn body(request: &Request) -> Value {
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
        let answer = post_json(
            &self.http,
            SUMMARY_ENDPOINT,
            &self.url,
            &self.headers,
            self.key.as_ref(),
            &Self::body(request),
        )
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

/// A [`Summarizer`](abridge_compact::Summarizer) over the summary service
/// at `url` (see [`SummaryEndpoint`]), for callers that want summaries
/// without a compaction method (branch summaries, a custom method). No
/// retries: wrap the endpoint in a `RetryingClient` yourself for those.
///
/// # Errors
/// `InvalidConfig` for a URL that is not http(s) or a bad header.
pub fn endpoint_summarizer(
    url: impl Into<String>,
    key: Option<ApiKey>,
) -> Result<crate::llm::LlmSummarizer, LlmError> {
    Ok(crate::llm::LlmSummarizer::new(
        Arc::new(SummaryEndpoint::new(url, key, &[])?),
        "",
    ))
}

/// What a provider's native compaction returned.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeCompaction {
    /// A readable summary, when the provider writes one (Anthropic does;
    /// OpenAI's output is opaque).
    pub text: Option<String>,
    /// The answer's `output` items, in order, verbatim.
    pub output: Vec<Value>,
    /// What the call cost.
    pub usage: Usage,
    /// The model that answered.
    pub model: String,
}

/// What a provider answered to a native compaction request.
enum NativeAnswer {
    /// The compaction, with what it cost.
    Compacted(NativeCompaction),
    /// A success answer (billed) without a usable compaction.
    Missing {
        /// What the answer lacks.
        reason: String,
        /// What the call cost.
        usage: Usage,
        /// The model that answered.
        model: String,
    },
}

/// OpenAI's native compaction endpoint.
pub struct ResponsesCompact {
    http: reqwest::Client,
    url: String,
    model: String,
    headers: reqwest::header::HeaderMap,
    key: Option<ApiKey>,
    encoder: OpenAiResponsesClient,
    name: String,
}

impl fmt::Debug for ResponsesCompact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponsesCompact")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl ResponsesCompact {
    /// Provider name recorded with the native output.
    pub const NAME: &'static str = OpenAiResponsesClient::NAME;

    /// The endpoint under `base` (empty: `https://api.openai.com/v1`; a
    /// URL already ending in `/responses/compact` is used as it is).
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
            abridge_llm::OPENAI_BASE_URL
        } else {
            base
        };
        let trimmed = base.trim_end_matches('/');
        let url = if trimmed.ends_with(RESPONSES_COMPACT_PATH) {
            trimmed.to_string()
        } else {
            format!("{trimmed}{RESPONSES_COMPACT_PATH}")
        };
        check_url(Self::NAME, &url)?;
        let encoder =
            OpenAiResponsesClient::new(ProviderConfig::new(trimmed), ResponsesOptions::default())?;
        Ok(ResponsesCompact {
            http: reqwest::Client::new(),
            headers: header_map(Self::NAME, key.as_ref(), false, headers)?,
            url,
            model: model.into(),
            key,
            encoder,
            name: Self::NAME.to_string(),
        })
    }

    /// The JSON body for `plan`: `{model, input}`, the input items being
    /// the Responses encoding of `prefix`'s system messages, the session's
    /// leading system messages and the planned span.
    ///
    /// # Errors
    /// `InvalidConfig` when no model is named.
    pub fn body(
        &self,
        prefix: Option<&ConversationPrefix>,
        plan: &Plan,
    ) -> Result<Value, LlmError> {
        let mut messages: Vec<Message> = prefix.map(|p| p.system.clone()).unwrap_or_default();
        messages.extend(plan.head().iter().map(|m| (**m).clone()));
        messages.extend(plan.messages().iter().map(|m| (**m).clone()));
        let request = Request::new(self.model.clone(), messages, Purpose::Compaction);
        let encoded = self.encoder.build_body(&request, false)?;
        Ok(json!({
            "model": self.model,
            "input": encoded.get("input").cloned().unwrap_or(Value::Array(Vec::new())),
        }))
    }

    /// Compacts `plan` natively (one call, no retry).
    ///
    /// # Errors
    /// A classified [`LlmError`]; `Unusable` (not retryable: the call was
    /// billed) when the answer holds no compaction item.
    pub async fn compact(
        &self,
        prefix: Option<&ConversationPrefix>,
        plan: &Plan,
    ) -> Result<NativeCompaction, LlmError> {
        match self.post(&self.body(prefix, plan)?).await? {
            NativeAnswer::Compacted(native) => Ok(native),
            NativeAnswer::Missing { reason, .. } => Err(LlmError::Unusable {
                provider: self.name.clone(),
                message: reason,
            }),
        }
    }

    /// Posts a prepared body and reads the answer.
    async fn post(&self, body: &Value) -> Result<NativeAnswer, LlmError> {
        let answer = post_json(
            &self.http,
            &self.name,
            &self.url,
            &self.headers,
            self.key.as_ref(),
            body,
        )
        .await?;
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

/// A provider-native compaction target: posts a prepared body and reads
/// the answer into a [`NativeCompaction`].
#[async_trait]
trait NativeTarget: Send + Sync + fmt::Debug {
    fn name(&self) -> &str;
    fn url(&self) -> &str;
    async fn post(&self, body: &Value) -> Result<NativeAnswer, LlmError>;
}

#[async_trait]
impl NativeTarget for ResponsesCompact {
    fn name(&self) -> &str {
        &self.name
    }
    fn url(&self) -> &str {
        &self.url
    }
    async fn post(&self, body: &Value) -> Result<NativeAnswer, LlmError> {
        ResponsesCompact::post(self, body).await
    }
}

#[async_trait]
impl NativeTarget for AnthropicCompact {
    fn name(&self) -> &str {
        AnthropicCompact::NAME
    }
    fn url(&self) -> &str {
        &self.url
    }
    async fn post(&self, body: &Value) -> Result<NativeAnswer, LlmError> {
        AnthropicCompact::post(self, body).await
    }
}

enum Writer {
    Soft(CandidateSoftMethod),
    OpenAi(Arc<ResponsesCompact>),
    Anthropic(Arc<AnthropicCompact>),
}

/// The remote compaction method.
pub struct RemoteMethod {
    kind: RemoteKind,
    writer: Writer,
    retry: abridge_llm::RetryPolicy,
    prefix: Option<ConversationPrefix>,
    max_tokens: u32,
    local: Arc<dyn CompactionMethod>,
}

impl fmt::Debug for RemoteMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteMethod")
            .field("kind", &self.kind)
            .field("local", &self.local.name())
            .finish_non_exhaustive()
    }
}

fn kind_name(kind: RemoteKind) -> &'static str {
    match kind {
        RemoteKind::Endpoint => "endpoint",
        RemoteKind::ChatCompletions => "chat_completions",
        RemoteKind::ResponsesCompact => "responses_compact",
        RemoteKind::AnthropicCompaction => "anthropic_compaction",
    }
}

impl RemoteMethod {
    /// Runs the local method after the remote failed with `error`,
    /// recording both in the details.
    async fn fall_back(
        &self,
        plan: &Plan,
        error: CompactError,
    ) -> Result<MethodOutput, CompactError> {
        self.fall_back_logged(plan, error, None).await
    }

    /// [`Self::fall_back`], also listing the remote's calls (`log`) as
    /// `details.remote_attempts`.
    async fn fall_back_logged(
        &self,
        plan: &Plan,
        error: CompactError,
        log: Option<&AttemptLog>,
    ) -> Result<MethodOutput, CompactError> {
        tracing::warn!(kind = kind_name(self.kind), %error, local = self.local.name(), "remote compaction failed; using the local summary");
        if error.stops_fallthrough() {
            return Err(error);
        }
        let spent = error.usage().copied();
        match self.local.run(plan).await {
            Ok(MethodOutput::Checkpoint(mut checkpoint)) => {
                if let Some(spent) = spent {
                    let mut usage = checkpoint.usage.unwrap_or_default();
                    usage.add(&spent);
                    checkpoint.usage = Some(usage);
                }
                checkpoint.details.insert(&RemoteRecord {
                    kind: kind_name(self.kind).to_string(),
                    written_by: Some(self.local.name().to_string()),
                    error: Some(error.to_string()),
                    attempts: log.map(AttemptLog::attempts).unwrap_or_default(),
                })?;
                Ok(MethodOutput::Checkpoint(checkpoint))
            }
            Ok(other) => Ok(other),
            Err(local) => Err(CompactError::Summary {
                method: REMOTE.to_string(),
                reason: format!(
                    "remote failed ({error}) and the local {} failed too ({local})",
                    self.local.name()
                ),
            }
            .with_usage(spent.unwrap_or_default())),
        }
    }

    /// Sends the native request built as `body` (or falls back when it could
    /// not be built); when the call fails, the local method's output stands
    /// in, carrying what the failed calls cost.
    async fn attempt_native(
        &self,
        target: Arc<dyn NativeTarget>,
        body: Result<Value, LlmError>,
        plan: &Plan,
    ) -> NativeAttempt {
        let body = match body {
            Ok(body) => body,
            Err(error) => {
                let error = CompactError::from_llm(REMOTE, error);
                return NativeAttempt::FellBack(self.fall_back(plan, error).await);
            }
        };
        let log = AttemptLog::default();
        let provider = target.name().to_string();
        let error = match self.call_native(target, body, &log).await {
            Ok(response) if response.native.is_some() => {
                return NativeAttempt::Answered(response, log);
            }
            // Answered and billed without a compaction: final, not retried.
            Ok(response) => {
                let reason = response.message.plain_text();
                log.reject_since(0, &reason);
                LlmError::Unusable {
                    provider,
                    message: reason,
                }
            }
            Err(error) => error,
        };
        let error = CompactError::from_llm(REMOTE, error).with_usage(log.usage());
        NativeAttempt::FellBack(self.fall_back_logged(plan, error, Some(&log)).await)
    }

    /// One native call under the retry policy, recorded.
    async fn call_native(
        &self,
        target: Arc<dyn NativeTarget>,
        body: Value,
        log: &AttemptLog,
    ) -> Result<Response, LlmError> {
        let name = target.name().to_string();
        let once: Arc<dyn LlmClient> = Arc::new(NativeOnce { target, body });
        let candidates = SummarizerCandidates::new(once, name).with_retry(self.retry.clone());
        let clients = candidates.clients(log);
        let request = Request::new("", Vec::new(), Purpose::Compaction);
        match clients.first() {
            Some((client, _)) => client.complete(&request).await,
            None => Err(invalid(REMOTE, "no native target")),
        }
    }

    /// OpenAI: the opaque output goes to `details.native`; the text is the
    /// local method's.
    async fn openai(
        &self,
        compact: &Arc<ResponsesCompact>,
        plan: &Plan,
    ) -> Result<MethodOutput, CompactError> {
        let target: Arc<dyn NativeTarget> = Arc::clone(compact) as Arc<dyn NativeTarget>;
        let (native, log) = match self
            .attempt_native(target, compact.body(self.prefix.as_ref(), plan), plan)
            .await
        {
            NativeAttempt::Answered(response, log) => (response, log),
            NativeAttempt::FellBack(result) => return result,
        };
        let output = match self.local.run(plan).await {
            Ok(output) => output,
            Err(error) => return Err(error.with_usage(log.usage())),
        };
        let MethodOutput::Checkpoint(mut checkpoint) = output else {
            return Ok(output);
        };
        let mut usage = checkpoint.usage.unwrap_or_default();
        usage.add(&log.usage());
        checkpoint.usage = (!usage.is_zero()).then_some(usage);
        checkpoint.details.insert(&RemoteRecord {
            kind: kind_name(self.kind).to_string(),
            written_by: Some(self.local.name().to_string()),
            ..RemoteRecord::default()
        })?;
        checkpoint.details.insert(&AttemptsRecord {
            attempts: log.attempts(),
        })?;
        checkpoint.details.insert(&NativeRecord {
            provider: ResponsesCompact::NAME.to_string(),
            endpoint: compact.url.clone(),
            model: native.model,
            output: native.native.unwrap_or(Value::Null),
        })?;
        Ok(MethodOutput::Checkpoint(checkpoint))
    }

    /// Anthropic: the compaction block's text is the checkpoint; the block
    /// itself goes to `details.native`.
    async fn anthropic(
        &self,
        compact: &Arc<AnthropicCompact>,
        plan: &Plan,
    ) -> Result<MethodOutput, CompactError> {
        let input = plan.tokens().head + plan.tokens().hidden;
        if input < ANTHROPIC_MIN_TRIGGER {
            let error = CompactError::Unavailable {
                method: REMOTE.to_string(),
                reason: format!(
                    "the span of about {input} tokens is below Anthropic's smallest compaction trigger of {ANTHROPIC_MIN_TRIGGER}"
                ),
            };
            return self.fall_back(plan, error).await;
        }
        let target: Arc<dyn NativeTarget> = Arc::clone(compact) as Arc<dyn NativeTarget>;
        let (native, log) = match self
            .attempt_native(
                target,
                compact.body(self.prefix.as_ref(), plan, self.max_tokens),
                plan,
            )
            .await
        {
            NativeAttempt::Answered(response, log) => (response, log),
            NativeAttempt::FellBack(result) => return result,
        };
        let text = native.message.plain_text();
        let files = crate::files::cumulative_file_ops(plan);
        let content = crate::files::with_files_tree(&text, &files);
        let usage = log.usage();
        let details = Details::new()
            .with(&RemoteRecord {
                kind: kind_name(self.kind).to_string(),
                ..RemoteRecord::default()
            })?
            .with(&AttemptsRecord {
                attempts: log.attempts(),
            })?
            .with(&NativeRecord {
                provider: AnthropicCompact::NAME.to_string(),
                endpoint: compact.url.clone(),
                model: native.model.clone(),
                output: native.native.unwrap_or(Value::Null),
            })?;
        let short = crate::transcript::clip(&text.replace('\n', " "), 300);
        Ok(MethodOutput::Checkpoint(
            abridge_compact::Checkpoint::new(text)
                .with_content(vec![abridge_llm::Block::text(content)])
                .with_short_summary(short)
                .with_files(files)
                .with_usage((!usage.is_zero()).then_some(usage))
                .with_model(native.model)
                .with_details(details),
        ))
    }
}

/// One native compaction call shaped as a model call, so the retry
/// wrapper and the attempt log apply. The output items ride in
/// `Response.native` as an array; a readable summary, when the provider
/// writes one, is the message's text. An answer without a compaction comes
/// back as a response with no `native`, stop reason [`NO_COMPACTION`] and
/// the reason as its text.
struct NativeOnce {
    target: Arc<dyn NativeTarget>,
    body: Value,
}

impl fmt::Debug for NativeOnce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NativeOnce")
            .field("url", &self.target.url())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl LlmClient for NativeOnce {
    fn provider(&self) -> &str {
        self.target.name()
    }

    async fn complete(&self, _request: &Request) -> Result<Response, LlmError> {
        Ok(match self.target.post(&self.body).await? {
            NativeAnswer::Compacted(native) => Response {
                message: Message::assistant(native.text.unwrap_or_default()),
                usage: native.usage,
                stop_reason: StopReason::EndTurn,
                model: native.model,
                native: Some(Value::Array(native.output)),
            },
            // An answer, not an error: the retry wrapper must not send the
            // billed call again, and the attempt log records its cost.
            NativeAnswer::Missing {
                reason,
                usage,
                model,
            } => Response {
                message: Message::assistant(reason),
                usage,
                stop_reason: StopReason::Other(NO_COMPACTION.to_string()),
                model,
                native: None,
            },
        })
    }
}

/// Anthropic's server-side compaction, asked for explicitly: the
/// conversation is sent with a `compact_20260112` edit whose trigger is
/// the smallest allowed and `pause_after_compaction`, so the answer is
/// the compaction block alone (`stop_reason: "compaction"`).
pub struct AnthropicCompact {
    http: reqwest::Client,
    url: String,
    model: String,
    headers: reqwest::header::HeaderMap,
    key: Option<ApiKey>,
    encoder: abridge_llm::AnthropicClient,
}

impl fmt::Debug for AnthropicCompact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicCompact")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

impl AnthropicCompact {
    /// Provider name recorded with the native block.
    pub const NAME: &'static str = abridge_llm::AnthropicClient::NAME;

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
            abridge_llm::ANTHROPIC_BASE_URL
        } else {
            base
        };
        let trimmed = base.trim_end_matches('/').trim_end_matches("/v1");
        let url = format!("{trimmed}/v1/messages");
        check_url(Self::NAME, &url)?;
        let mut extra = headers.to_vec();
        extra.push((
            "anthropic-version".to_string(),
            abridge_llm::ANTHROPIC_VERSION.to_string(),
        ));
        extra.push((
            "anthropic-beta".to_string(),
            ANTHROPIC_COMPACTION_BETA.to_string(),
        ));
        let encoder = abridge_llm::AnthropicClient::new(
            ProviderConfig::new(trimmed),
            abridge_llm::AnthropicOptions::default(),
        )?;
        Ok(AnthropicCompact {
            http: reqwest::Client::new(),
            headers: header_map(Self::NAME, key.as_ref(), true, &extra)?,
            url,
            model: model.into(),
            key,
            encoder,
        })
    }

    /// The JSON body for `plan`: the Messages encoding of `prefix`, the
    /// session's leading system messages and the planned span, plus the
    /// compaction edit. A span that ends on the assistant is closed by a
    /// short user turn, since the request must end on the user.
    ///
    /// # Errors
    /// `InvalidConfig` when no model is named.
    pub fn body(
        &self,
        prefix: Option<&ConversationPrefix>,
        plan: &Plan,
        max_tokens: u32,
    ) -> Result<Value, LlmError> {
        let mut messages: Vec<Message> = prefix.map(|p| p.system.clone()).unwrap_or_default();
        messages.extend(plan.head().iter().map(|m| (**m).clone()));
        messages.extend(plan.messages().iter().map(|m| (**m).clone()));
        let mut request = Request::new(self.model.clone(), messages, Purpose::Compaction);
        request.tools = prefix.map(|p| p.tools.clone()).unwrap_or_default();
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

    /// Posts a prepared body and reads the compaction block.
    async fn post(&self, body: &Value) -> Result<NativeAnswer, LlmError> {
        let answer = post_json(
            &self.http,
            Self::NAME,
            &self.url,
            &self.headers,
            self.key.as_ref(),
            body,
        )
        .await?;
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

#[async_trait]
impl CompactionMethod for RemoteMethod {
    fn name(&self) -> &str {
        REMOTE
    }

    fn available(&self) -> Availability {
        match &self.writer {
            Writer::Soft(soft) => soft.available(),
            Writer::OpenAi(_) | Writer::Anthropic(_) => Availability::Ready,
        }
    }

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, CompactError> {
        match &self.writer {
            Writer::Soft(soft) => {
                let log = AttemptLog::default();
                match soft.run_logged(plan, &log).await {
                    Ok(MethodOutput::Checkpoint(mut checkpoint)) => {
                        checkpoint.details.insert(&RemoteRecord {
                            kind: kind_name(self.kind).to_string(),
                            ..RemoteRecord::default()
                        })?;
                        Ok(MethodOutput::Checkpoint(checkpoint))
                    }
                    Ok(other) => Ok(other),
                    Err(error) => self.fall_back(plan, error).await,
                }
            }
            Writer::OpenAi(compact) => self.openai(compact, plan).await,
            Writer::Anthropic(compact) => self.anthropic(compact, plan).await,
        }
    }
}

/// The base of a chat URL: the address without a trailing
/// `/chat/completions`.
fn chat_base(url: &str) -> &str {
    let trimmed = url.trim_end_matches('/');
    trimmed.strip_suffix("/chat/completions").unwrap_or(trimmed)
}

/// The `remote` method for the command line and harnesses. See the module
/// docs for the wire shapes and [`RemoteConfig`] for the knobs. Needs a
/// tokio runtime with timers.
///
/// # Errors
/// `InvalidConfig` for a URL that is not http(s) or a bad header.
pub fn remote_method(config: RemoteConfig) -> Result<Arc<dyn CompactionMethod>, LlmError> {
    let local = config
        .local
        .clone()
        .unwrap_or_else(|| Arc::new(DigestMethod));
    let writer = match config.kind {
        RemoteKind::Endpoint => {
            let endpoint =
                SummaryEndpoint::new(config.url.clone(), config.api_key.clone(), &config.headers)?;
            let candidates = SummarizerCandidates::new(Arc::new(endpoint), config.model.clone())
                .with_retry(config.retry.clone());
            Writer::Soft(CandidateSoftMethod::new(candidates, config.soft, None))
        }
        RemoteKind::ChatCompletions => {
            let mut provider = ProviderConfig::new(chat_base(&config.url))
                .with_default_model(config.model.clone())
                .with_name("openai-compatible");
            provider.api_key = config.api_key.clone();
            provider.headers = config.headers.clone();
            // OpenAI's reasoning lines reject `max_tokens`; the catalog
            // says which models those are.
            let options = ChatOptions {
                max_tokens_field: MaxTokensField::for_model(&config.model),
                ..ChatOptions::default()
            };
            let client = OpenAiChatClient::new(provider, options)?;
            let candidates = SummarizerCandidates::new(Arc::new(client), config.model.clone())
                .with_retry(config.retry.clone());
            Writer::Soft(CandidateSoftMethod::new(
                candidates,
                config.soft,
                config.prefix.clone(),
            ))
        }
        RemoteKind::ResponsesCompact => Writer::OpenAi(Arc::new(ResponsesCompact::new(
            &config.url,
            config.model.clone(),
            config.api_key.clone(),
            &config.headers,
        )?)),
        RemoteKind::AnthropicCompaction => Writer::Anthropic(Arc::new(AnthropicCompact::new(
            &config.url,
            config.model.clone(),
            config.api_key.clone(),
            &config.headers,
        )?)),
    };
    Ok(Arc::new(RemoteMethod {
        kind: config.kind,
        writer,
        retry: config.retry,
        prefix: config.prefix,
        max_tokens: config.soft.max_summary_tokens,
        local,
    }))
}
