//! The record of one compaction's model calls: every answer (used or
//! rejected, with what it cost) and every failed attempt (with its error).
//!
//! A log is built fresh for each run. A committed checkpoint carries the
//! total cost in `usage` and the list in `details.attempts`; a failed run
//! attaches the cost to its error ([`CompactError::with_usage`]), which
//! `compaction/end` records.

use std::sync::Arc;
use std::sync::Mutex;

use abridge_compact::CompactError;
use abridge_compact::MethodOutput;
use abridge_llm::LlmClient;
use abridge_llm::LlmError;
use abridge_llm::Request;
use abridge_llm::Response;
use abridge_llm::ResponseStream;
use abridge_llm::Usage;
use async_trait::async_trait;
use futures::StreamExt;
use serde::Serialize;

/// How one model call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum AttemptOutcome {
    /// The model answered and the answer was used.
    Ok,
    /// The model answered but the answer was unusable (a tool call, empty
    /// text, cut by the output limit).
    Rejected,
    /// The call failed (HTTP error, timeout, malformed body).
    Failed,
}

/// One model call made for a compaction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Attempt {
    /// The candidate's provider name.
    pub(crate) provider: String,
    /// The model asked for (empty: the client's default).
    pub(crate) model: String,
    /// How it ended.
    pub(crate) outcome: AttemptOutcome,
    /// Why it failed or was rejected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    /// What it cost, when the provider answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) usage: Option<Usage>,
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
        result: Result<MethodOutput, CompactError>,
    ) -> Result<MethodOutput, CompactError> {
        let usage = self.usage();
        match result {
            Ok(MethodOutput::Checkpoint(mut checkpoint)) => {
                if !usage.is_zero() {
                    checkpoint.usage = Some(usage);
                }
                if !self.is_empty() {
                    set_detail(
                        &mut checkpoint.details,
                        "attempts",
                        serde_json::to_value(self.attempts()),
                    );
                }
                Ok(MethodOutput::Checkpoint(checkpoint))
            }
            Ok(other) => Ok(other),
            Err(error) => Err(error.with_usage(usage)),
        }
    }
}

/// Sets `key` in a details object (turning `Null` into an object).
pub(crate) fn set_detail(
    details: &mut serde_json::Value,
    key: &str,
    value: Result<serde_json::Value, serde_json::Error>,
) {
    let Ok(value) = value else { return };
    if !details.is_object() {
        let old = std::mem::take(details);
        *details = serde_json::json!({});
        if !old.is_null()
            && let Some(map) = details.as_object_mut()
        {
            map.insert("method".to_string(), old);
        }
    }
    if let Some(map) = details.as_object_mut() {
        map.insert(key.to_string(), value);
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
    fn details_keep_the_methods_own_fields() {
        let mut details = serde_json::json!({"calls": 2});
        set_detail(&mut details, "attempts", Ok(serde_json::json!([])));
        assert_eq!(details, serde_json::json!({"calls": 2, "attempts": []}));
        let mut null = serde_json::Value::Null;
        set_detail(&mut null, "x", Ok(serde_json::json!(1)));
        assert_eq!(null, serde_json::json!({"x": 1}));
    }

    #[test]
    fn spent_errors_keep_the_inner_kind_and_text() {
        let usage = Usage {
            input: 5,
            output: 2,
            ..Usage::default()
        };
        let inner = || CompactError::Summary {
            method: "soft".into(),
            reason: "empty".into(),
        };
        let spent = inner().with_usage(usage).with_usage(usage);
        assert_eq!(spent.kind(), "summary");
        assert_eq!(spent.to_string(), inner().to_string());
        assert_eq!(spent.usage().map(|u| (u.input, u.output)), Some((10, 4)));
        assert!(matches!(spent.inner(), CompactError::Summary { .. }));
        assert!(inner().with_usage(Usage::default()).usage().is_none());
        let cancelled = CompactError::Cancelled { by: "hook".into() }.with_usage(usage);
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
