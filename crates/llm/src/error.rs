//! Errors from model calls, classified by what the caller does next.

use std::time::Duration;

/// A failed model call.
///
/// Callers ask two questions: [`is_retryable`](Self::is_retryable) and
/// [`is_context_overflow`](Self::is_context_overflow). Variants carry the
/// provider's name and its message (secrets removed) so a person can act.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LlmError {
    /// The prompt does not fit the model's window. Retrying the same
    /// request cannot help: compact, or send less.
    #[error(
        "{provider}: the prompt is larger than the model's context window ({message}); compact the history or send less"
    )]
    ContextOverflow {
        /// Provider name.
        provider: String,
        /// What the provider said.
        message: String,
    },
    /// Too many requests; wait `retry_after` when the provider says how long.
    #[error("{provider}: rate limited{}: {message}", retry_after.map(|d| format!(" (retry after {:.1}s)", d.as_secs_f64())).unwrap_or_default())]
    RateLimited {
        /// Provider name.
        provider: String,
        /// The provider's Retry-After, if any.
        retry_after: Option<Duration>,
        /// What the provider said.
        message: String,
    },
    /// The provider failed (5xx, overloaded). Transient; wait
    /// `retry_after` when the provider says how long (a 503 often does).
    #[error("{provider}: server error {status}{}: {message}", retry_after.map(|d| format!(" (retry after {:.1}s)", d.as_secs_f64())).unwrap_or_default())]
    Server {
        /// Provider name.
        provider: String,
        /// HTTP status.
        status: u16,
        /// The provider's Retry-After, if any.
        retry_after: Option<Duration>,
        /// What the provider said.
        message: String,
    },
    /// No answer within the per-call timeout. Transient.
    #[error("{provider}: no answer within {:.1}s", after.as_secs_f64())]
    Timeout {
        /// Provider name.
        provider: String,
        /// The timeout that elapsed.
        after: Duration,
    },
    /// The caller cancelled the call.
    #[error("the call was cancelled")]
    Cancelled,
    /// The provider rejected the request as malformed or unauthorized, or
    /// the account cannot pay for it (OpenAI's 429 `insufficient_quota`).
    /// Retrying the same request cannot help.
    #[error("{provider}: request rejected with status {status}: {message}")]
    BadRequest {
        /// Provider name.
        provider: String,
        /// HTTP status.
        status: u16,
        /// What the provider said.
        message: String,
    },
    /// The client was configured wrongly (an invalid header name or value, a
    /// base URL that does not parse). Fix the configuration; retrying the
    /// same call cannot help.
    #[error("{provider}: invalid client configuration: {message}")]
    InvalidConfig {
        /// Provider name.
        provider: String,
        /// What is wrong, naming the setting.
        message: String,
    },
    /// The provider answered with success, and billed the call, but the
    /// answer lacks what the request exists to get (a compaction request
    /// answered without a compaction). Not transient: the same request
    /// would most likely be billed again for the same answer.
    #[error("{provider}: the answer cannot be used: {message}")]
    Unusable {
        /// Provider name.
        provider: String,
        /// What the answer lacks.
        message: String,
    },
    /// The connection failed or was cut, or the answer could not be parsed
    /// (malformed or truncated stream). Transient.
    #[error("{provider}: transport failure: {message}")]
    Transport {
        /// Provider name.
        provider: String,
        /// What went wrong.
        message: String,
    },
}

impl LlmError {
    /// True when the same request may succeed if sent again later.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            LlmError::RateLimited { .. }
                | LlmError::Server { .. }
                | LlmError::Timeout { .. }
                | LlmError::Transport { .. }
        )
    }

    /// True when the prompt was too large for the model.
    pub fn is_context_overflow(&self) -> bool {
        matches!(self, LlmError::ContextOverflow { .. })
    }

    /// How long the provider asked us to wait, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            LlmError::RateLimited { retry_after, .. } | LlmError::Server { retry_after, .. } => {
                *retry_after
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unusable_answer_is_final() {
        let error = LlmError::Unusable {
            provider: "p".into(),
            message: "no compaction item".into(),
        };
        assert!(!error.is_retryable());
        assert!(!error.is_context_overflow());
        assert_eq!(
            error.to_string(),
            "p: the answer cannot be used: no compaction item"
        );
    }
}
