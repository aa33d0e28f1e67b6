//! The record of one compaction's model calls: every answer (used or
//! rejected, with what it cost) and every failed attempt (with its error).
//!
//! A log is built fresh for each run. A committed checkpoint carries the
//! total cost in `usage` and the list in `details.attempts`; a failed run
//! attaches the cost to its error ([`MethodError::with_usage`]), which
//! `compaction/end` records.

use std::sync::Arc;
use std::sync::Mutex;

use abridge_compact::DetailSection;
use abridge_compact::MethodError;
use abridge_compact::MethodOutput;
use abridge_llm::LlmClient;
use abridge_llm::LlmError;
use abridge_llm::Request;
use abridge_llm::Response;
use abridge_llm::ResponseStream;
use abridge_llm::Usage;
use async_trait::async_trait;
use futures::StreamExt;
use serde::Deserialize;
use serde::Serialize;

/// How one model call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptOutcome {
    /// The model answered and the answer was used.
    Ok,
    /// The model answered but the answer was unusable (a tool call, empty
    /// text, cut by the output limit).
    Rejected,
    /// The call failed (HTTP error, timeout, malformed body).
    Failed,
}

/// One model call made for a compaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempt {
    /// The candidate's provider name.
    pub provider: String,
    /// The model asked for (empty: the client's default).
    pub model: String,
    /// How it ended.
    pub outcome: AttemptOutcome,
    /// Why it failed or was rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What it cost, when the provider answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// Every model call of a run that tried candidates in turn, with each
/// call's cost, so failed calls are accounted for: the record a
/// checkpoint carries under `attempts`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AttemptsRecord {
    /// The calls, in order.
    pub attempts: Vec<Attempt>,
}

impl DetailSection for AttemptsRecord {
    const KEY: &'static str = "attempts";
    const VERSION: u32 = 1;
}

/// Every call of one compaction run, in order. Cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub(crate) struct AttemptLog(Arc<Mutex<Vec<Attempt>>>);

impl AttemptLog {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Attempt>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records a call.
    pub(crate) fn push(&self, attempt: Attempt) {
        self.lock().push(attempt);
    }

    /// The calls so far.
    pub(crate) fn attempts(&self) -> Vec<Attempt> {
        self.lock().clone()
    }

    /// Number of calls so far.
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    /// True before the first call.
    pub(crate) fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Everything the calls cost, bucket by bucket.
    pub(crate) fn usage(&self) -> Usage {
        let mut total = Usage::default();
        for attempt in self.lock().iter() {
            if let Some(usage) = &attempt.usage {
                total.add(usage);
            }
        }
        total
    }

    /// Marks the answered calls from index `from` on as rejected for
    /// `reason`.
    pub(crate) fn reject_since(&self, from: usize, reason: &str) {
        for attempt in self.lock().iter_mut().skip(from) {
            if attempt.outcome == AttemptOutcome::Ok {
                attempt.outcome = AttemptOutcome::Rejected;
                attempt.error = Some(reason.to_string());
            }
        }
    }

    /// Merges the log into a method's result: a checkpoint gets the total
    /// cost as `usage` and the calls as `details.attempts`; an error gets
    /// the cost attached.
    pub(crate) fn settle(
        &self,
        result: Result<MethodOutput, MethodError>,
    ) -> Result<MethodOutput, MethodError> {
        let usage = self.usage();
        match result {
            Ok(MethodOutput::Checkpoint(mut checkpoint)) => {
                if !usage.is_zero() {
                    checkpoint.usage = Some(usage);
                }
                if !self.is_empty() {
                    checkpoint.details.insert(&AttemptsRecord {
                        attempts: self.attempts(),
                    })?;
                }
                Ok(MethodOutput::Checkpoint(checkpoint))
            }
            Ok(other) => Ok(other),
            Err(error) => Err(error.with_usage(usage)),
        }
    }
}

/// Records every answer of the wrapped client (failures are recorded by
/// the retry observer, which also sees timeouts).
#[derive(Debug)]
pub(crate) struct RecordingClient {
    pub(crate) inner: Arc<dyn LlmClient>,
    pub(crate) model: String,
    pub(crate) log: AttemptLog,
}

impl RecordingClient {
    fn record(&self, response: &Response) {
        self.log.push(Attempt {
            provider: self.inner.provider().to_string(),
            model: if response.model.is_empty() {
                self.model.clone()
            } else {
                response.model.clone()
            },
            outcome: AttemptOutcome::Ok,
            error: None,
            usage: Some(response.usage),
        });
    }
}

#[async_trait]
impl LlmClient for RecordingClient {
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
        let response = self.inner.complete(request).await?;
        self.record(&response);
        Ok(response)
    }

    async fn stream(&self, request: &Request) -> Result<ResponseStream, LlmError> {
        let stream = self.inner.stream(request).await?;
        let log = self.log.clone();
        let provider = self.inner.provider().to_string();
        let model = self.model.clone();
        Ok(stream
            .inspect(move |event| {
                if let Ok(abridge_llm::StreamEvent::Done(response)) = event {
                    log.push(Attempt {
                        provider: provider.clone(),
                        model: model.clone(),
                        outcome: AttemptOutcome::Ok,
                        error: None,
                        usage: Some(response.usage),
                    });
                }
            })
            .boxed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recording_client_speaks_the_dialect_of_the_client_it_wraps() {
        // The host and `abridge serve` read `native_dialect` to decide
        // whether a provider's own compaction can be replayed; a wrapper
        // that recorded attempts must not change that answer.
        let inner = abridge_test_support::scripted::unreachable_anthropic();
        let recording = RecordingClient {
            inner: Arc::clone(&inner),
            model: "claude-sonnet-4-5".into(),
            log: AttemptLog::default(),
        };
        assert_eq!(recording.native_dialect(), Some("anthropic"));
        assert_eq!(recording.native_dialect(), inner.native_dialect());
        assert_eq!(recording.provider(), inner.provider());
    }

    #[test]
    fn settling_adds_the_attempts_beside_the_methods_own_record() {
        let log = AttemptLog::default();
        log.push(Attempt {
            provider: "p".into(),
            model: "m".into(),
            outcome: AttemptOutcome::Failed,
            error: Some("503".into()),
            usage: None,
        });
        let checkpoint = abridge_compact::Checkpoint::new("summary")
            .with_section(&crate::record::SoftRecord {
                calls: 2,
                ..Default::default()
            })
            .unwrap();
        let Ok(MethodOutput::Checkpoint(settled)) =
            log.settle(Ok(MethodOutput::Checkpoint(checkpoint)))
        else {
            panic!("a checkpoint settles into a checkpoint");
        };
        let soft = settled.details.get::<crate::record::SoftRecord>().unwrap();
        assert_eq!(soft.map(|s| s.calls), Some(2));
        let attempts = settled.details.get::<AttemptsRecord>().unwrap().unwrap();
        assert_eq!(attempts.attempts, log.attempts());
    }

    #[test]
    fn spent_errors_keep_the_inner_kind_and_text() {
        let usage = Usage {
            input: 5,
            output: 2,
            ..Usage::default()
        };
        let inner = || MethodError::Summary {
            method: "soft".into(),
            reason: "empty".into(),
        };
        let spent = inner().with_usage(usage).with_usage(usage);
        assert_eq!(spent.kind(), abridge_compact::ErrorKind::Summary);
        assert_eq!(spent.to_string(), inner().to_string());
        assert_eq!(spent.usage().map(|u| (u.input, u.output)), Some((10, 4)));
        assert!(matches!(spent.inner(), MethodError::Summary { .. }));
        assert!(inner().with_usage(Usage::default()).usage().is_none());
        let cancelled = MethodError::Cancelled { by: "hook".into() }.with_usage(usage);
        assert!(cancelled.stops_fallthrough());
    }

    #[test]
    fn log_sums_and_rejects() {
        let log = AttemptLog::default();
        for input in [10, 20] {
            log.push(Attempt {
                provider: "p".into(),
                model: "m".into(),
                outcome: AttemptOutcome::Ok,
                error: None,
                usage: Some(Usage {
                    input,
                    output: 1,
                    ..Usage::default()
                }),
            });
        }
        log.reject_since(1, "empty");
        let attempts = log.attempts();
        assert_eq!(attempts[0].outcome, AttemptOutcome::Ok);
        assert_eq!(attempts[1].outcome, AttemptOutcome::Rejected);
        assert_eq!(log.usage().input, 30);
        assert_eq!(log.usage().output, 2);
    }
}
