//! What a remote is: its kind, address, model, key and the knobs of the
//! local summary it falls back to.

use std::fmt;
use std::sync::Arc;

use abridge_compact::CompactionMethod;
use abridge_llm::RetryPolicy;
use abridge_providers::ApiKey;

use crate::cache_aligned::ConversationPrefix;
use crate::soft::SoftConfig;

/// The name `remote` registers under.
pub const REMOTE: &str = "remote";

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
    /// Anthropic's server-side compaction (beta header
    /// `anthropic-beta: compact-2026-01-12`) on `POST {base}/v1/messages`; the URL
    /// is the base (empty: Anthropic's public API).
    AnthropicCompaction,
}

/// Plain configuration of the `remote` method (`remote_method`).
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
    pub retry: RetryPolicy,
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
            retry: RetryPolicy::default(),
            soft: SoftConfig::default(),
            prefix: None,
            local: None,
        }
    }
}

/// The name of `kind` in a checkpoint's `details.remote`.
pub(crate) fn kind_name(kind: RemoteKind) -> &'static str {
    match kind {
        RemoteKind::Endpoint => "endpoint",
        RemoteKind::ChatCompletions => "chat_completions",
        RemoteKind::ResponsesCompact => "responses_compact",
        RemoteKind::AnthropicCompaction => "anthropic_compaction",
    }
}
