//! Summarizer model candidates and `soft_method`: the one fallback
//! mechanism for model calls made by a compaction.
//!
//! A compaction call fails in practice (rate limits, 5xx, timeouts, a
//! model that answers with a tool call). Candidates are `(client, model)`
//! pairs tried in order: each is wrapped in a
//! [`RetryingClient`], which retries what can be retried and gives up at
//! once when the next wait would exceed [`RetryPolicy::max_wait`]; then
//! the next candidate is tried. An unusable answer (a tool call, empty or
//! cut text) also moves on, which a fallback below the summarizer could
//! not see. An overflow or a cancel is returned at once (the soft method
//! halves its window on an overflow and starts again from the first
//! candidate). Every call is recorded in an [`AttemptLog`].

use std::fmt;
use std::sync::Arc;

use crate::summarizer::Summarizer;
use crate::summarizer::Summary;
use crate::summarizer::SummaryRequest;
use abridge_compact::Availability;
use abridge_compact::Capabilities;
use abridge_compact::CompactionMethod;
use abridge_compact::MethodError;
use abridge_compact::MethodOutput;
use abridge_compact::Plan;
use abridge_llm::LlmClient;
use abridge_llm::Request;
use abridge_llm::Response;
use abridge_llm::RetryEvent;
use abridge_llm::RetryPolicy;
use abridge_llm::RetryingClient;
use async_trait::async_trait;

use crate::attempts::Attempt;
use crate::attempts::AttemptLog;
use crate::attempts::AttemptOutcome;
use crate::attempts::RecordingClient;
use crate::cache_aligned::AlignedPrefix;
use crate::cache_aligned::ConversationPrefix;
use crate::llm::LlmSummarizer;
use crate::llm::RequestMode;
use crate::llm::usable_text;
use crate::soft::SOFT;
use crate::soft::SoftConfig;
use crate::soft::SoftMethod;

/// One summarizer model to try: a client and the model to ask it for.
/// A framework with two providers lists the second as a fallback
/// ([`SoftSetup::fallbacks`], [`HandoffConfig::fallbacks`](crate::HandoffConfig)).
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The client. Do not wrap it in a retry layer yourself: the method
    /// applies its retry policy and records every call.
    pub client: Arc<dyn LlmClient>,
    /// The model id; empty asks the client's default model.
    pub model: String,
}

impl Candidate {
    /// A candidate asking `client` for `model`.
    pub fn new(client: Arc<dyn LlmClient>, model: impl Into<String>) -> Self {
        Candidate {
            client,
            model: model.into(),
        }
    }
}

/// The summarizer models of a method: candidates tried in order, each
/// with the same retry policy.
#[derive(Debug, Clone)]
pub(crate) struct SummarizerCandidates {
    /// The candidates, first tried first. A candidate without a model asks
    /// its client's default model.
    pub(crate) candidates: Vec<Candidate>,
    /// Retry, timeout and early give-up for each candidate. Default
    /// [`RetryPolicy::default`] (4 attempts, 60 s `max_wait`).
    pub(crate) retry: RetryPolicy,
}

impl SummarizerCandidates {
    /// One candidate, `model` through `client`, with the default policy.
    pub(crate) fn new(client: Arc<dyn LlmClient>, model: impl Into<String>) -> Self {
        SummarizerCandidates {
            candidates: vec![Candidate::new(client, model)],
            retry: RetryPolicy::default(),
        }
    }

    /// Sets the retry policy.
    pub(crate) fn with_retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The clients of one run: each candidate recorded into `log` and
    /// wrapped in the retry policy, with its model.
    pub(crate) fn clients(&self, log: &AttemptLog) -> Vec<(Arc<dyn LlmClient>, String)> {
        self.candidates
            .iter()
            .map(|candidate| {
                let model = candidate.model.clone();
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
    pub(crate) fn summarizer(&self, mode: &RequestMode, log: &AttemptLog) -> CandidateSummarizer {
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
fn final_error(error: &MethodError) -> bool {
    matches!(
        error.inner(),
        MethodError::Overflow { .. } | MethodError::Cancelled { .. }
    )
}

/// Tries each candidate's [`LlmSummarizer`] in turn: an error or an
/// unusable answer moves on to the next; an overflow or a cancel is
/// returned at once; when all fail, the last error is returned.
#[derive(Debug)]
pub(crate) struct CandidateSummarizer {
    name: String,
    summarizers: Vec<LlmSummarizer>,
    log: AttemptLog,
}

#[async_trait]
impl Summarizer for CandidateSummarizer {
    fn name(&self) -> &str {
        &self.name
    }

    async fn summarize(&self, request: &SummaryRequest) -> Result<Summary, MethodError> {
        let mut last = None;
        for (index, summarizer) in self.summarizers.iter().enumerate() {
            let before = self.log.len();
            match summarizer.summarize(request).await {
                Ok(summary) => return Ok(summary),
                Err(error) => {
                    if let MethodError::Summary { reason, .. } = error.inner() {
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
        Err(last.unwrap_or_else(|| MethodError::Unavailable {
            method: SOFT.to_string(),
            reason: "no summarizer candidate is configured".to_string(),
        }))
    }
}

/// Sends `request` to each candidate in turn until one answers with
/// usable text (see [`usable_text`]). Overflow and cancel end at once.
pub(crate) async fn complete_with_candidates(
    method: &str,
    clients: &[(Arc<dyn LlmClient>, String)],
    log: &AttemptLog,
    request: &Request,
    max_tokens: u32,
) -> Result<(String, Response), MethodError> {
    let mut last = None;
    for (index, (client, model)) in clients.iter().enumerate() {
        let mut attempt = request.clone();
        attempt.model.clone_from(model);
        let before = log.len();
        let result = match client.complete(&attempt).await {
            Ok(response) => usable_text(method, &response, max_tokens).map(|text| (text, response)),
            Err(error) => Err(MethodError::from_llm(method, error)),
        };
        match result {
            Ok(done) => return Ok(done),
            Err(error) => {
                if let MethodError::Summary { reason, .. } = &error {
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
    Err(last.unwrap_or_else(|| MethodError::Unavailable {
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
    /// these tools; `None`: the flattened
    /// transcript, for endpoints without a prompt cache.
    pub prefix: Option<ConversationPrefix>,
    /// Retry policy of every candidate.
    pub retry: RetryPolicy,
    /// Candidates tried after the first, in order.
    pub fallbacks: Vec<Candidate>,
}

/// `soft` over model candidates, with every call recorded.
pub(crate) struct CandidateSoftMethod {
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
    pub(crate) fn new(
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
    ) -> Result<MethodOutput, MethodError> {
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

    fn capabilities(&self) -> Capabilities {
        Capabilities::model_backed()
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

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        self.run_logged(plan, &AttemptLog::default()).await
    }
}

/// The `soft` method for the command line and harnesses: `model` through
/// `client` (then `setup.fallbacks`), each candidate under
/// `setup.retry`, cache-aligned when `setup.prefix` is given. Every model
/// call is recorded on the compaction's events.
///
/// Runs on any executor: retry waits and timeouts use abridge-llm's
/// timer (tokio's inside a tokio runtime, a timer thread elsewhere).
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
    use std::sync::Mutex;

    use abridge_llm::LlmError;
    use abridge_llm::Message;
    use abridge_llm::Purpose;
    use abridge_llm::StopReason;
    use abridge_llm::Usage;

    use super::*;

    /// Answers each call with the next scripted result and remembers the
    /// model each call asked for.
    #[derive(Debug)]
    struct Scripted {
        name: &'static str,
        replies: Mutex<Vec<Result<Response, LlmError>>>,
        models: Mutex<Vec<String>>,
    }

    impl Scripted {
        fn new(name: &'static str, replies: Vec<Result<Response, LlmError>>) -> Arc<Self> {
            Arc::new(Scripted {
                name,
                replies: Mutex::new(replies),
                models: Mutex::new(Vec::new()),
            })
        }

        fn models(&self) -> Vec<String> {
            self.models.lock().unwrap().clone()
        }
    }

    #[async_trait]
    impl LlmClient for Scripted {
        fn provider(&self) -> &str {
            self.name
        }

        async fn complete(&self, request: &Request) -> Result<Response, abridge_llm::LlmError> {
            self.models.lock().unwrap().push(request.model.clone());
            self.replies.lock().unwrap().remove(0)
        }
    }

    fn answer(text: &str) -> Result<Response, LlmError> {
        Ok(Response {
            message: Message::assistant(text),
            usage: Usage {
                input: 100,
                output: 10,
                ..Usage::default()
            },
            stop_reason: StopReason::EndTurn,
            model: String::new(),
            native: None,
        })
    }

    fn server_error() -> LlmError {
        LlmError::Server {
            provider: "a".into(),
            status: 503,
            retry_after: None,
            message: "busy".into(),
        }
    }

    async fn ask(
        candidates: &[(Arc<Scripted>, &str)],
    ) -> (Result<(String, Response), MethodError>, AttemptLog) {
        let mut list = SummarizerCandidates {
            candidates: Vec::new(),
            retry: RetryPolicy::no_retries(),
        };
        for (client, model) in candidates {
            list.candidates.push(Candidate::new(
                Arc::clone(client) as Arc<dyn LlmClient>,
                *model,
            ));
        }
        let log = AttemptLog::default();
        let request = Request::new("", Vec::new(), Purpose::Compaction);
        let result = complete_with_candidates(SOFT, &list.clients(&log), &log, &request, 100).await;
        (result, log)
    }

    #[tokio::test]
    async fn a_failed_candidate_moves_on_to_the_next_with_its_own_model() {
        let first = Scripted::new("a", vec![Err(server_error())]);
        let second = Scripted::new("b", vec![answer("## Goal\nfrom b")]);
        let (result, log) = ask(&[(first.clone(), "a-1"), (second.clone(), "b-1")]).await;
        assert_eq!(result.unwrap().0, "## Goal\nfrom b");
        assert_eq!(first.models(), ["a-1"]);
        assert_eq!(second.models(), ["b-1"]);
        let outcomes: Vec<_> = log.attempts().iter().map(|a| a.outcome).collect();
        assert_eq!(outcomes, [AttemptOutcome::Failed, AttemptOutcome::Ok]);
        assert_eq!(log.usage().input, 100);
    }

    #[tokio::test]
    async fn an_unusable_answer_moves_on_and_both_costs_count() {
        let first = Scripted::new("a", vec![answer("  ")]);
        let second = Scripted::new("b", vec![answer("## Goal\nfrom b")]);
        let (result, log) = ask(&[(first, "a-1"), (second, "b-1")]).await;
        assert!(result.is_ok());
        let outcomes: Vec<_> = log.attempts().iter().map(|a| a.outcome).collect();
        assert_eq!(outcomes, [AttemptOutcome::Rejected, AttemptOutcome::Ok]);
        assert_eq!(log.usage().input, 200);
    }

    #[tokio::test]
    async fn an_overflow_stops_at_the_first_candidate() {
        let overflow = LlmError::ContextOverflow {
            provider: "a".into(),
            message: "too long".into(),
        };
        let first = Scripted::new("a", vec![Err(overflow)]);
        let second = Scripted::new("b", vec![answer("never")]);
        let (result, _) = ask(&[(first, "a-1"), (second.clone(), "b-1")]).await;
        assert!(matches!(result, Err(MethodError::Overflow { .. })));
        assert!(second.models().is_empty());
    }

    #[tokio::test]
    async fn when_every_candidate_fails_the_last_error_is_returned() {
        let missing = LlmError::BadRequest {
            provider: "b".into(),
            status: 404,
            message: "no such model".into(),
        };
        let first = Scripted::new("a", vec![Err(server_error())]);
        let second = Scripted::new("b", vec![Err(missing)]);
        let (result, _) = ask(&[(first, "a-1"), (second, "b-1")]).await;
        let error = result.unwrap_err();
        assert!(error.to_string().contains("no such model"), "{error}");
        let (empty, _) = ask(&[]).await;
        assert!(matches!(empty, Err(MethodError::Unavailable { .. })));
    }
}
