//! The `LlmClient` contract: one call to a model, whole or streamed.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use futures::stream::BoxStream;
use serde::Deserialize;
use serde::Serialize;

use crate::error::LlmError;
use crate::message::Message;
use crate::message::SharedMessage;
use crate::usage::StopReason;
use crate::usage::Usage;

/// Why a call is made. Providers may map it to headers or cache keys; the
/// summarizer uses it to pick prompts; logs use it to tell turns from
/// compaction work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Purpose {
    /// An ordinary agent turn.
    Turn,
    /// Writing a compaction checkpoint.
    Compaction,
    /// Summarizing a branch that navigation left.
    BranchSummary,
    /// Writing a handoff document for the next context window.
    Handoff,
}

/// A tool the model may call, described for the provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Tool name.
    pub name: String,
    /// What it does, for the model.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of its arguments.
    #[serde(default)]
    pub parameters: serde_json::Value,
}

/// Whether the model may call tools in this request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolChoice {
    /// The model decides.
    #[default]
    Auto,
    /// Tools are listed (so the prompt prefix stays cache-identical) but must
    /// not be called. Summaries and handoffs use this.
    None,
    /// The model must call a tool.
    Required,
}

/// One request to a model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Model id as the provider knows it.
    pub model: String,
    /// The conversation, system messages included, in order.
    pub messages: Vec<SharedMessage>,
    /// Tools offered.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// Whether tools may be called.
    #[serde(default)]
    pub tool_choice: ToolChoice,
    /// Cap on generated tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// Sampling temperature.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    /// Why the call is made.
    pub purpose: Purpose,
}

impl Request {
    /// A request with no tools and provider defaults.
    pub fn new(model: impl Into<String>, messages: Vec<Message>, purpose: Purpose) -> Self {
        Request {
            model: model.into(),
            messages: messages.into_iter().map(Arc::new).collect(),
            tools: Vec::new(),
            tool_choice: ToolChoice::Auto,
            max_output_tokens: None,
            temperature: None,
            purpose,
        }
    }
}

/// A finished call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The assistant message, its `meta` filled with origin, usage and stop
    /// reason.
    pub message: Message,
    /// What the provider billed.
    pub usage: Usage,
    /// Why it stopped.
    pub stop_reason: StopReason,
    /// The model id the provider says answered.
    pub model: String,
    /// Provider-native items worth keeping verbatim (for example OpenAI's
    /// opaque compaction output), replayed only to the same provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native: Option<serde_json::Value>,
}

/// A piece of a streamed answer.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamEvent {
    /// More visible text.
    TextDelta(String),
    /// More reasoning text.
    ThinkingDelta(String),
    /// A tool call began (id and name are known).
    ToolCallStart {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
    },
    /// More argument JSON for the tool call most recently started.
    ToolCallDelta(String),
    /// The call is complete. Always the last event of a successful stream.
    Done(Box<Response>),
}

/// A stream of events ending in `Done` or an error.
pub type ResponseStream = BoxStream<'static, Result<StreamEvent, LlmError>>;

/// A model endpoint.
///
/// # Contract
///
/// - `complete` returns the whole answer or a classified [`LlmError`];
///   callers ask only [`LlmError::is_retryable`] and
///   [`LlmError::is_context_overflow`], so implementors must map every
///   provider's wording of an overflow to `ContextOverflow`.
/// - `stream` yields deltas then exactly one `Done`; an error ends the
///   stream. A stream that ends without `Done` must yield an error first
///   (a cut connection is `Transport`, not success).
/// - Dropping either future, or the stream, cancels the request at once:
///   implementors must not keep working in a detached task.
/// - Keys and other secrets never appear in errors, logs or `Debug`.
/// - Implementors do not retry; retry policy belongs to a wrapper (so it is
///   configured once, not per provider).
///
/// The default `stream` runs `complete` and yields its text then `Done`, so
/// a client that cannot stream still satisfies callers that want a stream.
#[async_trait]
pub trait LlmClient: Send + Sync + Debug {
    /// Short provider name for errors and logs (`openai`, `anthropic`, ...).
    fn provider(&self) -> &str;

    /// The provider whose native items ([`Block::Native`](crate::Block::Native))
    /// this client's wire format carries: `anthropic` for the Messages
    /// API, `openai-responses` for the Responses API, `None` (the default)
    /// for a format with no place for them. Unlike [`provider`](Self::provider),
    /// it does not change when a client is renamed, so a native
    /// compaction is still replayed to a renamed client of its dialect.
    fn native_dialect(&self) -> Option<&str> {
        None
    }

    /// The endpoint and credentials this client's native items are bound
    /// to (OpenAI's encrypted compaction output works only for the
    /// organization and backend that made it): a string that two clients
    /// share exactly when one may replay what the other received. `None`
    /// (the default) replays nothing native. See abridge-providers' `Http::account` for the
    /// provider clients' form.
    fn native_account(&self) -> Option<&str> {
        None
    }

    /// Runs the request to completion.
    ///
    /// # Errors
    /// A classified [`LlmError`].
    async fn complete(&self, request: &Request) -> Result<Response, LlmError>;

    /// Runs the request, yielding the answer as it is written.
    ///
    /// # Errors
    /// A classified [`LlmError`], before the first event or inside the stream.
    async fn stream(&self, request: &Request) -> Result<ResponseStream, LlmError> {
        let response = self.complete(request).await?;
        let text = response.message.plain_text();
        let mut events = Vec::with_capacity(2);
        if !text.is_empty() {
            events.push(Ok(StreamEvent::TextDelta(text)));
        }
        events.push(Ok(StreamEvent::Done(Box::new(response))));
        Ok(Box::pin(futures::stream::iter(events)))
    }
}

#[async_trait]
impl<T: LlmClient + ?Sized> LlmClient for Arc<T> {
    fn provider(&self) -> &str {
        (**self).provider()
    }
    fn native_dialect(&self) -> Option<&str> {
        (**self).native_dialect()
    }
    fn native_account(&self) -> Option<&str> {
        (**self).native_account()
    }
    async fn complete(&self, request: &Request) -> Result<Response, LlmError> {
        (**self).complete(request).await
    }
    async fn stream(&self, request: &Request) -> Result<ResponseStream, LlmError> {
        (**self).stream(request).await
    }
}

#[async_trait]
impl<T: LlmClient + ?Sized> LlmClient for Box<T> {
    fn provider(&self) -> &str {
        (**self).provider()
    }
    fn native_dialect(&self) -> Option<&str> {
        (**self).native_dialect()
    }
    fn native_account(&self) -> Option<&str> {
        (**self).native_account()
    }
    async fn complete(&self, request: &Request) -> Result<Response, LlmError> {
        (**self).complete(request).await
    }
    async fn stream(&self, request: &Request) -> Result<ResponseStream, LlmError> {
        (**self).stream(request).await
    }
}
