//! The `remote` method: runs the configured remote and, when it fails,
//! the local method, recording what each call cost.

use std::fmt;
use std::sync::Arc;

use abridge_compact::Availability;
use abridge_compact::Capabilities;
use abridge_compact::Checkpoint;
use abridge_compact::CompactionMethod;
use abridge_compact::Details;
use abridge_compact::MethodError;
use abridge_compact::MethodOutput;
use abridge_compact::Plan;
use abridge_llm::Block;
use abridge_llm::LlmClient;
use abridge_llm::LlmError;
use abridge_llm::Purpose;
use abridge_llm::Request;
use abridge_llm::Response;
use abridge_llm::RetryPolicy;
use abridge_llm::Usage;
use abridge_providers::ANTHROPIC_MIN_TRIGGER;
use abridge_providers::AnthropicCompaction;
use abridge_providers::ChatOptions;
use abridge_providers::MaxTokensField;
use abridge_providers::NativeCompactor;
use abridge_providers::OpenAiChatClient;
use abridge_providers::ProviderConfig;
use abridge_providers::ResponsesCompaction;
use abridge_providers::SummaryEndpoint;
use async_trait::async_trait;
use serde_json::Value;

use super::config::REMOTE;
use super::config::RemoteConfig;
use super::config::RemoteKind;
use super::config::kind_name;
use super::native::NativeOnce;
use super::native::anthropic_body;
use super::native::responses_body;
use crate::attempts::AttemptLog;
use crate::attempts::AttemptsRecord;
use crate::cache_aligned::ConversationPrefix;
use crate::candidates::CandidateSoftMethod;
use crate::candidates::SummarizerCandidates;
use crate::digest::DigestMethod;
use crate::files::cumulative_file_ops;
use crate::files::with_files_tree;
use crate::record::NativeRecord;
use crate::record::RemoteRecord;
use crate::transcript::clip;

/// What a native compaction attempt came to.
enum NativeAttempt {
    /// The provider answered; the log holds what every call cost.
    Answered(Response, AttemptLog),
    /// Building or sending the request failed: the local method's result.
    FellBack(Result<MethodOutput, MethodError>),
}

enum Writer {
    Soft(CandidateSoftMethod),
    OpenAi(Arc<ResponsesCompaction>),
    Anthropic(Arc<AnthropicCompaction>),
}

/// The remote compaction method.
pub(crate) struct RemoteMethod {
    kind: RemoteKind,
    writer: Writer,
    retry: RetryPolicy,
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

impl RemoteMethod {
    /// Runs the local method after the remote failed with `error`,
    /// recording both in the details.
    async fn fall_back(
        &self,
        plan: &Plan,
        error: MethodError,
    ) -> Result<MethodOutput, MethodError> {
        self.fall_back_logged(plan, error, None).await
    }

    /// Marks a checkpoint that the local method wrote while this remote
    /// ran: what the remote's calls cost (`spent`) joins its usage, and
    /// `record` (naming the remote and the writer) joins its details.
    fn mark_local(
        &self,
        checkpoint: &mut Checkpoint,
        spent: Usage,
        record: &RemoteRecord,
    ) -> Result<(), MethodError> {
        let mut usage = checkpoint.usage.unwrap_or_default();
        usage.add(&spent);
        checkpoint.usage = (!usage.is_zero()).then_some(usage);
        checkpoint.details.insert(record)?;
        Ok(())
    }

    /// The record of a checkpoint the local method wrote for this remote.
    fn written_locally(&self) -> RemoteRecord {
        RemoteRecord {
            kind: kind_name(self.kind).to_string(),
            written_by: Some(self.local.name().to_string()),
            ..RemoteRecord::default()
        }
    }

    /// [`Self::fall_back`], also listing the remote's calls (`log`) as
    /// `details.remote_attempts`.
    async fn fall_back_logged(
        &self,
        plan: &Plan,
        error: MethodError,
        log: Option<&AttemptLog>,
    ) -> Result<MethodOutput, MethodError> {
        tracing::warn!(kind = kind_name(self.kind), %error, local = self.local.name(), "remote compaction failed; using the local summary");
        if error.stops_fallthrough() {
            return Err(error);
        }
        let spent = error.usage().copied();
        match self.local.run(plan).await {
            Ok(MethodOutput::Checkpoint(mut checkpoint)) => {
                let record = RemoteRecord {
                    error: Some(error.to_string()),
                    attempts: log.map(AttemptLog::attempts).unwrap_or_default(),
                    ..self.written_locally()
                };
                self.mark_local(&mut checkpoint, spent.unwrap_or_default(), &record)?;
                Ok(MethodOutput::Checkpoint(checkpoint))
            }
            Ok(other) => Ok(other),
            Err(local) => Err(MethodError::Summary {
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
        target: Arc<dyn NativeCompactor>,
        body: Result<Value, LlmError>,
        plan: &Plan,
    ) -> NativeAttempt {
        let body = match body {
            Ok(body) => body,
            Err(error) => {
                let error = MethodError::from_llm(REMOTE, error);
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
        let error = MethodError::from_llm(REMOTE, error).with_usage(log.usage());
        NativeAttempt::FellBack(self.fall_back_logged(plan, error, Some(&log)).await)
    }

    /// One native call under the retry policy, recorded.
    async fn call_native(
        &self,
        target: Arc<dyn NativeCompactor>,
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
            None => Err(LlmError::InvalidConfig {
                provider: REMOTE.to_string(),
                message: "no native target".to_string(),
            }),
        }
    }

    /// OpenAI: the opaque output goes to `details.native`; the text is the
    /// local method's.
    async fn openai(
        &self,
        compact: &Arc<ResponsesCompaction>,
        plan: &Plan,
    ) -> Result<MethodOutput, MethodError> {
        let target: Arc<dyn NativeCompactor> = Arc::clone(compact) as Arc<dyn NativeCompactor>;
        let (native, log) = match self
            .attempt_native(
                target,
                responses_body(compact, self.prefix.as_ref(), plan),
                plan,
            )
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
        self.mark_local(&mut checkpoint, log.usage(), &self.written_locally())?;
        checkpoint.details.insert(&AttemptsRecord {
            attempts: log.attempts(),
        })?;
        checkpoint.details.insert(&NativeRecord {
            provider: ResponsesCompaction::NAME.to_string(),
            endpoint: compact.url().to_string(),
            account: Some(compact.account().to_string()),
            model: native.model,
            output: native.native.unwrap_or(Value::Null),
        })?;
        Ok(MethodOutput::Checkpoint(checkpoint))
    }

    /// Anthropic: the compaction block's text is the checkpoint; the block
    /// itself goes to `details.native`.
    async fn anthropic(
        &self,
        compact: &Arc<AnthropicCompaction>,
        plan: &Plan,
    ) -> Result<MethodOutput, MethodError> {
        let input = plan.tokens().head + plan.tokens().hidden;
        if input < ANTHROPIC_MIN_TRIGGER {
            let error = MethodError::Unavailable {
                method: REMOTE.to_string(),
                reason: format!(
                    "the span of about {input} tokens is below Anthropic's smallest compaction trigger of {ANTHROPIC_MIN_TRIGGER}"
                ),
            };
            return self.fall_back(plan, error).await;
        }
        let target: Arc<dyn NativeCompactor> = Arc::clone(compact) as Arc<dyn NativeCompactor>;
        let (native, log) = match self
            .attempt_native(
                target,
                anthropic_body(compact, self.prefix.as_ref(), plan, self.max_tokens),
                plan,
            )
            .await
        {
            NativeAttempt::Answered(response, log) => (response, log),
            NativeAttempt::FellBack(result) => return result,
        };
        let text = native.message.plain_text();
        let files = cumulative_file_ops(plan);
        let content = with_files_tree(&text, &files);
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
                provider: AnthropicCompaction::NAME.to_string(),
                endpoint: compact.url().to_string(),
                account: Some(compact.account().to_string()),
                model: native.model.clone(),
                output: native.native.unwrap_or(Value::Null),
            })?;
        let short = clip(&text.replace('\n', " "), 300);
        Ok(MethodOutput::Checkpoint(
            Checkpoint::new(text)
                .with_content(vec![Block::text(content)])
                .with_short_summary(short)
                .with_files(files)
                .with_usage((!usage.is_zero()).then_some(usage))
                .with_model(native.model)
                .with_details(details),
        ))
    }
}

#[async_trait]
impl CompactionMethod for RemoteMethod {
    fn name(&self) -> &str {
        REMOTE
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::model_backed()
    }

    fn available(&self) -> Availability {
        match &self.writer {
            Writer::Soft(soft) => soft.available(),
            Writer::OpenAi(_) | Writer::Anthropic(_) => Availability::Ready,
        }
    }

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
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

/// A native compaction request as it would be sent: the JSON body and the
/// `anthropic-beta` header (empty for OpenAI).
#[derive(Debug, Clone, PartialEq)]
pub struct NativeRequest {
    /// The body posted.
    pub body: Value,
    /// The `anthropic-beta` header sent with it; empty when none.
    pub beta: String,
}

/// What the native compaction of `config` would post for `plan`, without
/// posting it: for checks of the wire against the providers' definitions.
/// `None` for the kinds that are not a provider's native compaction.
///
/// # Errors
/// `InvalidConfig` for a bad URL or header, or when no model is named.
pub fn native_request(
    config: &RemoteConfig,
    plan: &Plan,
) -> Result<Option<NativeRequest>, LlmError> {
    Ok(match config.kind {
        RemoteKind::ResponsesCompact => {
            let compact = ResponsesCompaction::new(
                &config.url,
                config.model.clone(),
                config.api_key.clone(),
                &config.headers,
            )?;
            Some(NativeRequest {
                body: responses_body(&compact, config.prefix.as_ref(), plan)?,
                beta: String::new(),
            })
        }
        RemoteKind::AnthropicCompaction => {
            let compact = AnthropicCompaction::new(
                &config.url,
                config.model.clone(),
                config.api_key.clone(),
                &config.headers,
            )?;
            Some(NativeRequest {
                body: anthropic_body(
                    &compact,
                    config.prefix.as_ref(),
                    plan,
                    config.soft.max_summary_tokens,
                )?,
                beta: compact.beta(),
            })
        }
        RemoteKind::Endpoint | RemoteKind::ChatCompletions => None,
    })
}

/// The base of a chat URL: the address without a trailing
/// `/chat/completions`.
fn chat_base(url: &str) -> &str {
    let trimmed = url.trim_end_matches('/');
    trimmed.strip_suffix("/chat/completions").unwrap_or(trimmed)
}

/// The `remote` method for the command line and harnesses. See the module
/// docs for the wire shapes and [`RemoteConfig`] for the knobs. Needs a
/// tokio runtime: its HTTP client runs on one.
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
                SummaryEndpoint::new(&config.url, config.api_key.clone(), &config.headers)?;
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
        RemoteKind::ResponsesCompact => Writer::OpenAi(Arc::new(ResponsesCompaction::new(
            &config.url,
            config.model.clone(),
            config.api_key.clone(),
            &config.headers,
        )?)),
        RemoteKind::AnthropicCompaction => Writer::Anthropic(Arc::new(AnthropicCompaction::new(
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
