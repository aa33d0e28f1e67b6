//! Retry with backoff, a per-call timeout, and early give-up, around any
//! [`LlmClient`] (feature `retry`, on by default).
//!
//! Provider clients never retry (see the [`LlmClient`] contract); this
//! wrapper is where the policy is configured, once. Its waits and
//! timeouts need no particular runtime (see `timer`): under tokio they use
//! tokio's clock, under any other executor a background timer thread.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;

use crate::client::LlmClient;
use crate::client::Request;
use crate::client::Response;
use crate::client::ResponseStream;
use crate::error::LlmError;
use crate::timer;

/// When and how long to retry.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included. Default 4.
    pub max_attempts: u32,
    /// Wait before the first retry when the provider names none. Default 1 s.
    pub initial_backoff: Duration,
    /// Cap on a computed wait. Default 30 s.
    pub max_backoff: Duration,
    /// Growth of the wait per retry. Default 2.
    pub multiplier: f64,
    /// Scale computed waits by a random factor in [0.5, 1) so that many
    /// clients do not retry in step. Default true; tests turn it off.
    pub jitter: bool,
    /// Time allowed for one attempt, a stream included from first byte to
    /// `Done`; `None` waits forever. Default 10 minutes.
    pub timeout: Option<Duration>,
    /// Give up, returning the error, when the next wait (computed or asked
    /// for by Retry-After) would be longer than this, so a caller with
    /// other candidates can move on. Default 60 s.
    pub max_wait: Option<Duration>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(30),
            multiplier: 2.0,
            jitter: true,
            timeout: Some(Duration::from_secs(600)),
            max_wait: Some(Duration::from_secs(60)),
        }
    }
}

impl RetryPolicy {
    /// The default policy without jitter, so waits are exactly
    /// predictable (tests, reproducible benchmarks).
    pub fn deterministic() -> Self {
        RetryPolicy {
            jitter: false,
            ..RetryPolicy::default()
        }
    }

    /// One attempt, no retries; the timeout still applies.
    pub fn no_retries() -> Self {
        RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        }
    }

    /// The wait before retry number `retry` (1 for the first retry) when
    /// the provider names none, before jitter.
    pub fn backoff(&self, retry: u32) -> Duration {
        let exponent = i32::try_from(retry.saturating_sub(1)).unwrap_or(i32::MAX);
        let secs = self.initial_backoff.as_secs_f64() * self.multiplier.max(1.0).powi(exponent);
        let capped = secs.min(self.max_backoff.as_secs_f64());
        Duration::try_from_secs_f64(capped).unwrap_or(self.max_backoff)
    }

    /// The wait before retry number `retry` after `error`: the provider's
    /// Retry-After when it gave one, else the backoff (with jitter when
    /// enabled).
    pub fn wait_for(&self, retry: u32, error: &LlmError) -> Duration {
        if let Some(asked) = error.retry_after() {
            return asked;
        }
        let base = self.backoff(retry);
        if self.jitter {
            base.mul_f64(0.5 + 0.5 * random_unit())
        } else {
            base
        }
    }
}

/// A number in [0, 1) from the standard library's randomly keyed hasher;
/// good enough to spread retries, and free of dependencies.
fn random_unit() -> f64 {
    use std::hash::BuildHasher;
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let hash = std::collections::hash_map::RandomState::new().hash_one(n);
    (hash >> 11) as f64 / (1u64 << 53) as f64
}

/// What the retry loop decided after a failed attempt, for observers
/// (logs, compaction events that record failed attempts).
#[derive(Debug, Clone, PartialEq)]
pub struct RetryEvent {
    /// The attempt that failed, from 1.
    pub attempt: u32,
    /// How it failed.
    pub error: LlmError,
    /// The wait before the next attempt, or `None` when the loop gives up
    /// and returns `error`.
    pub wait: Option<Duration>,
}

/// Called after every failed attempt.
pub type RetryObserver = Arc<dyn Fn(&RetryEvent) + Send + Sync>;

/// Retries retryable errors of an inner client with backoff, honours
/// Retry-After, bounds each attempt with a timeout, and gives up early when
/// the next wait is longer than `max_wait`.
///
/// Only errors before the first stream event are retried: once a stream
/// has yielded, a later error is passed on (the caller has seen text that
/// a retry would repeat).
///
/// # Cancel safety
/// Dropping the future (or the stream) drops the inner call and any
/// pending sleep; nothing keeps running.
#[derive(Clone)]
pub struct RetryingClient {
    inner: Arc<dyn LlmClient>,
    policy: RetryPolicy,
    observer: Option<RetryObserver>,
}

impl fmt::Debug for RetryingClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryingClient")
            .field("inner", &self.inner)
            .field("policy", &self.policy)
            .field("observer", &self.observer.is_some())
            .finish()
    }
}

impl RetryingClient {
    /// Wraps `inner` with `policy`.
    pub fn new(inner: Arc<dyn LlmClient>, policy: RetryPolicy) -> Self {
        RetryingClient {
            inner,
            policy,
            observer: None,
        }
    }

    /// Calls `observer` after every failed attempt.
    pub fn with_observer(mut self, observer: RetryObserver) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The wrapped client.
    pub fn get_ref(&self) -> &Arc<dyn LlmClient> {
        &self.inner
    }

    /// The policy.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// The wrapped client, unwrapped.
    pub fn into_inner(self) -> Arc<dyn LlmClient> {
        self.inner
    }

    fn timeout_error(&self, after: Duration) -> LlmError {
        LlmError::Timeout {
            provider: self.inner.provider().to_string(),
            after,
        }
    }

    /// Decides what follows a failed attempt: `Some(wait)` to retry.
    fn next_wait(&self, attempt: u32, error: &LlmError) -> Option<Duration> {
        let wait = if !error.is_retryable() || attempt >= self.policy.max_attempts {
            None
        } else {
            let wait = self.policy.wait_for(attempt, error);
            match self.policy.max_wait {
                Some(max) if wait > max => None,
                _ => Some(wait),
            }
        };
        match wait {
            Some(wait) => tracing::warn!(
                provider = %self.inner.provider(), attempt, error = %error,
                wait_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                "model call failed; retrying"
            ),
            None => {
                tracing::warn!(provider = %self.inner.provider(), attempt, error = %error, "model call failed; giving up")
            }
        }
        if let Some(observer) = &self.observer {
            observer(&RetryEvent {
                attempt,
                error: error.clone(),
                wait,
            });
        }
        wait
    }

    async fn run<T, F>(&self, mut call: impl FnMut() -> F) -> Result<T, LlmError>
    where
        F: Future<Output = Result<T, LlmError>>,
    {
        let mut attempt = 1;
        loop {
            let result = match self.policy.timeout {
                Some(limit) => timer::timeout(limit, call())
                    .await
                    .unwrap_or_else(|_| Err(self.timeout_error(limit))),
                None => call().await,
            };
            let error = match result {
                Ok(value) => return Ok(value),
                Err(error) => error,
            };
            match self.next_wait(attempt, &error) {
                Some(wait) => timer::sleep(wait).await,
                None => return Err(error),
            }
            attempt += 1;
        }
    }
}

#[async_trait]
impl LlmClient for RetryingClient {
    fn provider(&self) -> &str {
        self.inner.provider()
    }

    fn native_dialect(&self) -> Option<&str> {
        self.inner.native_dialect()
    }

    fn native_account(&self) -> Option<&str> {
        self.inner.native_account()
    }

    async fn complete(&self, request: &Request) -> Result<Response, LlmError> {
        self.run(|| self.inner.complete(request)).await
    }

    async fn stream(&self, request: &Request) -> Result<ResponseStream, LlmError> {
        let Some(limit) = self.policy.timeout else {
            return self.run(|| self.inner.stream(request)).await;
        };
        let (stream, deadline) = self
            .run(|| async {
                let deadline = timer::now() + limit;
                let stream = self.inner.stream(request).await?;
                Ok((stream, deadline))
            })
            .await?;
        let timeout = self.timeout_error(limit);
        let bounded = futures::stream::unfold(Some(stream), move |state| {
            let timeout = timeout.clone();
            async move {
                let mut stream = state?;
                match timer::timeout_at(deadline, stream.next()).await {
                    Ok(Some(item)) => Some((item, Some(stream))),
                    Ok(None) => None,
                    Err(_) => Some((Err(timeout), None)),
                }
            }
        });
        Ok(bounded.boxed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        let policy = RetryPolicy::deterministic();
        assert_eq!(policy.backoff(1), Duration::from_secs(1));
        assert_eq!(policy.backoff(2), Duration::from_secs(2));
        assert_eq!(policy.backoff(3), Duration::from_secs(4));
        assert_eq!(policy.backoff(40), Duration::from_secs(30));
    }

    #[test]
    fn retry_after_wins_over_backoff() {
        let policy = RetryPolicy::default();
        let error = LlmError::RateLimited {
            provider: "p".into(),
            retry_after: Some(Duration::from_secs(7)),
            message: String::new(),
        };
        assert_eq!(policy.wait_for(1, &error), Duration::from_secs(7));
    }

    #[test]
    fn jitter_stays_within_half_to_full() {
        let policy = RetryPolicy::default();
        let error = LlmError::Server {
            provider: "p".into(),
            status: 500,
            retry_after: None,
            message: String::new(),
        };
        for _ in 0..100 {
            let wait = policy.wait_for(2, &error);
            assert!(
                wait >= Duration::from_secs(1) && wait < Duration::from_secs(2),
                "{wait:?}"
            );
        }
    }
}
