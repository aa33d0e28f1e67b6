//! Summarizer model candidates, every call recorded, and `soft_method`.
//!
//! A compaction call fails in practice (rate limits, 5xx, timeouts, a
//! model that answers with a tool call). Candidates are `(client, model)`
//! pairs tried in order: each is wrapped in a
//! [`RetryingClient`], which retries what can be retried and gives up at
//! once when the next wait would exceed [`RetryPolicy::max_wait`]; then
//! the next candidate is tried. An overflow or a cancel is returned at
//! once (the soft method halves its window on an overflow and starts
//! again from the first candidate).
//!
//! Every call is recorded in an [`AttemptLog`] built fresh for each run:
//! answers (used or rejected, with what they cost) and failed attempts
//! (with the error). A committed checkpoint carries the total cost in
//! `usage` and the list in `details.attempts`; a failed run attaches the
//! cost to its error ([`CompactError::with_usage`]), which
//! `compaction/end` records.

use std::fmt;
use std::sync::Arc;
use std::sync::Mutex;

use abridge_compact::Availability;
use abridge_compact::CompactError;
use abridge_compact::CompactionMethod;
use abridge_compact::MethodOutput;
use abridge_compact::Plan;
use abridge_compact::Summarizer;
use abridge_compact::Summary;
use abridge_compact::SummaryRequest;
use abridge_llm::Candidate;
use abridge_llm::LlmClient;
use abridge_llm::LlmError;
use abridge_llm::Request;
use abridge_llm::Response;
use abridge_llm::ResponseStream;
use abridge_llm::RetryEvent;
use abridge_llm::RetryPolicy;
use abridge_llm::RetryingClient;
use abridge_llm::StopReason;
use abridge_llm::Usage;
use async_trait::async_trait;
use futures::StreamExt;

use crate::cache_aligned::AlignedPrefix;
use crate::cache_aligned::ConversationPrefix;
use crate::llm::LlmSummarizer;
use crate::llm::RequestMode;
use crate::record::Attempt;
use crate::record::AttemptOutcome;
use crate::record::AttemptsRecord;
use crate::soft::SOFT;
use crate::soft::SoftConfig;
use crate::soft::SoftMethod;

/// Every call of one compaction run, in order. Cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub struct AttemptLog(Arc<Mutex<Vec<Attempt>>>);

impl AttemptLog {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Attempt>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records a call.
    pub fn push(&self, attempt: Attempt) {
        self.lock().push(attempt);
    }

    /// The calls so far.
    pub fn attempts(&self) -> Vec<Attempt> {
        self.lock().clone()
    }

    /// Number of calls so far.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// True before the first call.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Everything the calls cost, bucket by bucket.
    pub fn usage(&self) -> Usage {
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
    pub fn settle(
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
struct RecordingClient {
    inner: Arc<dyn LlmClient>,
    model: String,
    log: AttemptLog,
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

/// The summarizer models of a method: candidates tried in order, each
/// with the same retry policy.
#[derive(Debug, Clone)]
pub struct SummarizerCandidates {
    /// The candidates, first tried first. A candidate without a model asks
    /// its client's default model.
    pub candidates: Vec<Candidate>,
    /// Retry, timeout and early give-up for each candidate. Default
    /// [`RetryPolicy::default`] (4 attempts, 60 s `max_wait`).
    pub retry: RetryPolicy,
}

impl SummarizerCandidates {
    /// One candidate, `model` through `client`, with the default policy.
    pub fn new(client: Arc<dyn LlmClient>, model: impl Into<String>) -> Self {
        SummarizerCandidates {
            candidates: vec![Candidate::new(client, model)],
            retry: RetryPolicy::default(),
        }
    }

    /// Adds a candidate tried after the others.
    pub fn then(mut self, client: Arc<dyn LlmClient>, model: impl Into<String>) -> Self {
        self.candidates.push(Candidate::new(client, model));
        self
    }

    /// Sets the retry policy.
    pub fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The clients of one run: each candidate recorded into `log` and
    /// wrapped in the retry policy, with its model.
    pub(crate) fn clients(&self, log: &AttemptLog) -> Vec<(Arc<dyn LlmClient>, String)> {
        self.candidates
            .iter()
            .map(|candidate| {
                let model = candidate.model.clone().unwrap_or_default();
                let recording: Arc<dyn LlmClient> = Arc::new(RecordingClient {
                    inner: Arc::clone(&candidate.client),
                    model: model.clone(),
                    log: log.clone(),
                });
                let observed = log.clone();
                let provider = candidate.client.provider().to_string();
                let observed_model = model.clone();
                let observer = Arc::new(move |event: &RetryEvent| {
                    observed.push(Attempt {
                        provider: provider.clone(),
                        model: observed_model.clone(),
                        outcome: AttemptOutcome::Failed,
                        error: Some(event.error.to_string()),
                        usage: None,
                    });
                });
                let client: Arc<dyn LlmClient> = Arc::new(
                    RetryingClient::new(recording, self.retry.clone()).with_observer(observer),
                );
                (client, model)
            })
            .collect()
    }

    /// A summarizer over the candidates for one run, recording into `log`.
    pub fn summarizer(&self, mode: &RequestMode, log: &AttemptLog) -> CandidateSummarizer {
        let summarizers = self
            .clients(log)
            .into_iter()
            .map(|(client, model)| LlmSummarizer::new(client, model).with_mode(mode.clone()))
            .collect();
        CandidateSummarizer {
            name: self
                .candidates
                .first()
                .map_or_else(|| "none".to_string(), |c| c.client.provider().to_string()),
            summarizers,
            log: log.clone(),
        }
    }
}

/// True when trying another candidate cannot help.
fn final_error(error: &CompactError) -> bool {
    matches!(
        error.inner(),
        CompactError::Overflow { .. } | CompactError::Cancelled { .. }
    )
}

/// Tries each candidate's [`LlmSummarizer`] in turn: an error or an
/// unusable answer moves on to the next; an overflow or a cancel is
/// returned at once; when all fail, the last error is returned.
#[derive(Debug)]
pub struct CandidateSummarizer {
    name: String,
    summarizers: Vec<LlmSummarizer>,
    log: AttemptLog,
}

#[async_trait]
impl Summarizer for CandidateSummarizer {
    fn name(&self) -> &str {
        &self.name
    }

    async fn summarize(&self, request: &SummaryRequest) -> Result<Summary, CompactError> {
        let mut last = None;
        for (index, summarizer) in self.summarizers.iter().enumerate() {
            let before = self.log.len();
            match summarizer.summarize(request).await {
                Ok(summary) => return Ok(summary),
                Err(error) => {
                    if let CompactError::Summary { reason, .. } = error.inner() {
                        self.log.reject_since(before, reason);
                    }
                    if final_error(&error) {
                        return Err(error);
                    }
                    tracing::warn!(candidate = index, %error, "summarizer candidate failed; trying the next");
                    last = Some(error);
                }
            }
        }
        Err(last.unwrap_or_else(|| CompactError::Unavailable {
            method: SOFT.to_string(),
            reason: "no summarizer candidate is configured".to_string(),
        }))
    }
}

/// Checks a model's answer the way summaries are checked: a tool call,
/// output cut by the limit or empty text is [`CompactError::Summary`].
/// Returns the visible text.
pub(crate) fn usable_text(
    method: &str,
    response: &Response,
    max_tokens: u32,
) -> Result<String, CompactError> {
    let fail = |reason: String| CompactError::Summary {
        method: method.to_string(),
        reason,
    };
    if response.message.tool_calls().next().is_some() {
        return Err(fail(
            "the model called a tool instead of writing a summary".into(),
        ));
    }
    if response.stop_reason == StopReason::MaxTokens {
        return Err(fail(format!(
            "the summary was cut at the output limit of {max_tokens} tokens"
        )));
    }
    let text = crate::transcript::visible_text(&response.message);
    if text.trim().is_empty() {
        return Err(fail("the model returned an empty summary".into()));
    }
    Ok(text)
}

/// Sends `request` to each candidate in turn until one answers with
/// usable text (see [`usable_text`]). Overflow and cancel end at once.
pub(crate) async fn complete_with_candidates(
    method: &str,
    clients: &[(Arc<dyn LlmClient>, String)],
    log: &AttemptLog,
    request: &Request,
    max_tokens: u32,
) -> Result<(String, Response), CompactError> {
    let mut last = None;
    for (index, (client, model)) in clients.iter().enumerate() {
        let mut attempt = request.clone();
        attempt.model.clone_from(model);
        let before = log.len();
        let result = match client.complete(&attempt).await {
            Ok(response) => usable_text(method, &response, max_tokens).map(|text| (text, response)),
            Err(error) => Err(CompactError::from_llm(method, error)),
        };
        match result {
            Ok(done) => return Ok(done),
            Err(error) => {
                if let CompactError::Summary { reason, .. } = &error {
                    log.reject_since(before, reason);
                }
                if final_error(&error) {
                    return Err(error);
                }
                tracing::warn!(candidate = index, %error, "candidate failed; trying the next");
                last = Some(error);
            }
        }
    }
    Err(last.unwrap_or_else(|| CompactError::Unavailable {
        method: method.to_string(),
        reason: "no model candidate is configured".to_string(),
    }))
}

/// Plain configuration of [`soft_method`].
#[derive(Debug, Clone, Default)]
pub struct SoftSetup {
    /// Summary length, input window and halvings.
    pub soft: SoftConfig,
    /// `Some`: cache-aligned requests replaying this system prompt and
    /// these tools ([`RequestMode::CacheAligned`]); `None`: the flattened
    /// transcript, for endpoints without a prompt cache.
    pub prefix: Option<ConversationPrefix>,
    /// Retry policy of every candidate.
    pub retry: RetryPolicy,
    /// Candidates tried after the first, in order.
    pub fallbacks: Vec<Candidate>,
}

/// `soft` over model candidates, with every call recorded.
pub struct CandidateSoftMethod {
    candidates: SummarizerCandidates,
    soft: SoftConfig,
    prefix: Option<ConversationPrefix>,
}

impl fmt::Debug for CandidateSoftMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CandidateSoftMethod")
            .field("candidates", &self.candidates.candidates.len())
            .field("soft", &self.soft)
            .field("cache_aligned", &self.prefix.is_some())
            .finish()
    }
}

impl CandidateSoftMethod {
    /// `soft` over `candidates`; cache-aligned when `prefix` is given.
    pub fn new(
        candidates: SummarizerCandidates,
        soft: SoftConfig,
        prefix: Option<ConversationPrefix>,
    ) -> Self {
        CandidateSoftMethod {
            candidates,
            soft,
            prefix,
        }
    }

    /// Runs `soft` on `plan` and returns the result with its attempt log
    /// settled in.
    pub(crate) async fn run_logged(
        &self,
        plan: &Plan,
        log: &AttemptLog,
    ) -> Result<MethodOutput, CompactError> {
        let mode = match &self.prefix {
            Some(prefix) => {
                RequestMode::CacheAligned(Arc::new(AlignedPrefix::for_plan(prefix, plan)))
            }
            None => RequestMode::Transcript,
        };
        let summarizer = self.candidates.summarizer(&mode, log);
        let result = SoftMethod::new(Arc::new(summarizer))
            .with_config(self.soft)
            .run(plan)
            .await;
        log.settle(result)
    }
}

#[async_trait]
impl CompactionMethod for CandidateSoftMethod {
    fn name(&self) -> &str {
        SOFT
    }

    fn available(&self) -> Availability {
        if self.candidates.candidates.is_empty() {
            Availability::Unavailable {
                reason: "no summarizer model is configured".to_string(),
            }
        } else {
            Availability::Ready
        }
    }

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, CompactError> {
        self.run_logged(plan, &AttemptLog::default()).await
    }
}

/// The `soft` method for the command line and harnesses: `model` through
/// `client` (then `setup.fallbacks`), each candidate under
/// `setup.retry`, cache-aligned when `setup.prefix` is given. Every model
/// call is recorded on the compaction's events.
///
/// Needs a tokio runtime with timers (retry waits and timeouts).
pub fn soft_method(
    client: Arc<dyn LlmClient>,
    model: impl Into<String>,
    setup: SoftSetup,
) -> Arc<dyn CompactionMethod> {
    let mut candidates = SummarizerCandidates::new(client, model).with_retry(setup.retry);
    candidates.candidates.extend(setup.fallbacks);
    Arc::new(CandidateSoftMethod::new(
        candidates,
        setup.soft,
        setup.prefix,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

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
                halvings: 0,
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
        let inner = || CompactError::Summary {
            method: "soft".into(),
            reason: "empty".into(),
        };
        let spent = inner().with_usage(usage).with_usage(usage);
        assert_eq!(spent.kind(), abridge_compact::ErrorKind::Summary);
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
