//! Trying a list of candidate models in turn (feature `retry`).

use std::sync::Arc;

use async_trait::async_trait;

use crate::client::LlmClient;
use crate::client::Request;
use crate::client::Response;
use crate::client::ResponseStream;
use crate::error::LlmError;

/// One candidate: a client, and the model to ask it for (`None` keeps the
/// request's model).
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The client, usually a [`RetryingClient`](crate::RetryingClient) with a
    /// short `max_wait` so a rate-limited candidate is left quickly.
    pub client: Arc<dyn LlmClient>,
    /// Model id for this candidate.
    pub model: Option<String>,
}

impl Candidate {
    /// A candidate asking `client` for `model`.
    pub fn new(client: Arc<dyn LlmClient>, model: impl Into<String>) -> Self {
        Candidate {
            client,
            model: Some(model.into()),
        }
    }

    /// A candidate that keeps the request's model.
    pub fn same_model(client: Arc<dyn LlmClient>) -> Self {
        Candidate {
            client,
            model: None,
        }
    }
}

/// Tries candidates in order until one answers.
///
/// A failure moves on to the next candidate, except a context overflow (the
/// caller must send less; the summarizer halves its window) and a
/// cancellation, which are returned at once. When every candidate fails the
/// last error is returned. Streams fall through only on errors before the
/// stream is returned.
///
/// # Cancel safety
/// Dropping the future drops the call in flight; later candidates are not
/// tried.
#[derive(Debug, Clone)]
pub struct FallbackClient {
    candidates: Vec<Candidate>,
}

/// Provider name of a [`FallbackClient`] (errors carry the candidate's own).
pub const FALLBACK_PROVIDER: &str = "fallback";

impl FallbackClient {
    /// A client over `candidates`, tried first to last.
    pub fn new(candidates: Vec<Candidate>) -> Self {
        FallbackClient { candidates }
    }

    /// The candidates, in order.
    pub fn candidates(&self) -> &[Candidate] {
        &self.candidates
    }

    async fn run<T, F>(
        &self,
        request: &Request,
        call: impl Fn(Arc<dyn LlmClient>, Request) -> F,
    ) -> Result<T, LlmError>
    where
        F: Future<Output = Result<T, LlmError>>,
    {
        let mut last = LlmError::InvalidConfig {
            provider: FALLBACK_PROVIDER.to_string(),
            message: "the candidate list is empty".to_string(),
        };
        for (index, candidate) in self.candidates.iter().enumerate() {
            let mut attempt = request.clone();
            if let Some(model) = &candidate.model {
                attempt.model.clone_from(model);
            }
            match call(Arc::clone(&candidate.client), attempt).await {
                Ok(value) => return Ok(value),
                Err(error) if error.is_context_overflow() || error == LlmError::Cancelled => {
                    return Err(error);
                }
                Err(error) => {
                    tracing::warn!(
                        candidate = index,
                        provider = %candidate.client.provider(),
                        model = candidate.model.as_deref().unwrap_or(&request.model),
                        error = %error,
                        "candidate failed; trying the next"
                    );
                    last = error;
                }
            }
        }
        Err(last)
    }
}

#[async_trait]
impl LlmClient for FallbackClient {
    fn provider(&self) -> &str {
        FALLBACK_PROVIDER
    }

    async fn complete(&self, request: &Request) -> Result<Response, LlmError> {
        self.run(request, |client, request| async move {
            client.complete(&request).await
        })
        .await
    }

    async fn stream(&self, request: &Request) -> Result<ResponseStream, LlmError> {
        self.run(request, |client, request| async move {
            client.stream(&request).await
        })
        .await
    }
}
