//! The method's side of native compaction: the provider's call shaped as
//! a model call (so the retry wrapper and the attempt log apply), and the
//! conversation a plan sends, with earlier native output replayed to the
//! same provider. The wire (bodies, answers) is abridge-providers'.

use std::fmt;
use std::sync::Arc;

use abridge_compact::Plan;
use abridge_llm::LlmClient;
use abridge_llm::LlmError;
use abridge_llm::Message;
use abridge_llm::Purpose;
use abridge_llm::Request;
use abridge_llm::Response;
use abridge_llm::StopReason;
use abridge_providers::AnthropicCompaction;
use abridge_providers::NativeAnswer;
use abridge_providers::NativeCompactor;
use abridge_providers::ResponsesCompaction;
use async_trait::async_trait;
use serde_json::Value;

use crate::cache_aligned::ConversationPrefix;

/// Stop reason with which [`NativeOnce`] reports an answer that holds no
/// usable compaction (its text says why).
const NO_COMPACTION: &str = "no_compaction";

/// One native compaction call shaped as a model call, so the retry
/// wrapper and the attempt log apply. The output items ride in
/// `Response.native` as an array; a readable summary, when the provider
/// writes one, is the message's text. An answer without a compaction comes
/// back as a response with no `native`, stop reason [`NO_COMPACTION`] and
/// the reason as its text.
pub(crate) struct NativeOnce {
    pub(crate) target: Arc<dyn NativeCompactor>,
    pub(crate) body: Value,
}

impl fmt::Debug for NativeOnce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NativeOnce")
            .field("url", &self.target.url())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl LlmClient for NativeOnce {
    fn provider(&self) -> &str {
        self.target.name()
    }

    async fn complete(&self, _request: &Request) -> Result<Response, LlmError> {
        Ok(match self.target.post(&self.body).await? {
            NativeAnswer::Compacted(native) => Response {
                message: Message::assistant(native.text.unwrap_or_default()),
                usage: native.usage,
                stop_reason: StopReason::EndTurn,
                model: native.model,
                native: Some(Value::Array(native.output)),
            },
            // An answer, not an error: the retry wrapper must not send the
            // billed call again, and the attempt log records its cost.
            NativeAnswer::Missing {
                reason,
                usage,
                model,
            } => Response {
                message: Message::assistant(reason),
                usage,
                stop_reason: StopReason::Other(NO_COMPACTION.to_string()),
                model,
                native: None,
            },
        })
    }
}

/// Where a native compaction request goes: what decides which of the
/// span's provider data it may carry.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NativeReader<'a> {
    /// The target's provider name, which the span's thinking must carry.
    pub(crate) provider: &'a str,
    /// The wire dialect, whose earlier compaction output is replayed.
    pub(crate) dialect: &'a str,
    /// The target's account (see [`NativeCompactor::account`]).
    pub(crate) account: &'a str,
    /// The model asked.
    pub(crate) model: &'a str,
}

/// The request a native compaction encodes for `plan`: `prefix`'s system
/// messages and tools, the session's leading system messages and the
/// planned span, under the rules a turn's request follows:
///
/// - the previous checkpoint at the span's head goes as its own native
///   compaction output when it has one for this dialect and account, so
///   the earlier compaction's state is the input of this one (its text
///   otherwise);
/// - thinking goes only when this provider and model wrote it, and for a
///   model that checks prefixes, not behind a message that changed since
///   (the previous checkpoint, a pruned result); an OpenAI reasoning item
///   stored as a signature never reaches Anthropic.
pub(crate) fn compaction_request(
    reader: NativeReader<'_>,
    prefix: Option<&ConversationPrefix>,
    plan: &Plan,
) -> Request {
    let mut messages: Vec<Message> = prefix.map(|p| p.system.clone()).unwrap_or_default();
    messages.extend(plan.head().iter().map(|m| (**m).clone()));
    // Messages before the span are older than anything in it.
    let mut written: Vec<u64> = vec![0; messages.len()];
    for (index, message) in plan.messages().iter().enumerate() {
        let replayed = plan.previous().filter(|_| index == 0).and_then(|previous| {
            crate::record::replayed_checkpoint(
                message,
                &previous.details,
                reader.dialect,
                reader.account,
            )
        });
        messages.push(replayed.unwrap_or_else(|| (**message).clone()));
    }
    written.extend(plan.seqs());
    let entry = abridge_llm::Catalog::shared().lookup(reader.model).entry;
    let prior = abridge_meter::PriorThinking::for_model(&entry);
    abridge_llm::keep_readable_thinking(
        &mut messages,
        &written,
        &abridge_llm::ThinkingReader {
            provider: Some(reader.provider),
            model: Some(reader.model),
            current_turn_only: false,
            prefix_bound: prior == abridge_meter::PriorThinking::Kept,
        },
    );
    let mut request = Request::new(reader.model, messages, Purpose::Compaction);
    request.tools = prefix.map(|p| p.tools.clone()).unwrap_or_default();
    request
}

impl<'a> NativeReader<'a> {
    /// The reader for `target`, whose stored output is `dialect`'s.
    fn of(target: &'a dyn NativeCompactor, dialect: &'a str) -> Self {
        NativeReader {
            provider: target.name(),
            dialect,
            account: target.account(),
            model: target.model(),
        }
    }
}

/// OpenAI's compaction body for `plan` (see [`compaction_request`]: a
/// previous OpenAI compaction at the span's head goes as its item).
pub(crate) fn responses_body(
    compact: &ResponsesCompaction,
    prefix: Option<&ConversationPrefix>,
    plan: &Plan,
) -> Result<Value, LlmError> {
    let reader = NativeReader::of(compact, ResponsesCompaction::NAME);
    compact.body(&compaction_request(reader, prefix, plan))
}

/// Anthropic's compaction body for `plan`, its summary capped at
/// `max_tokens`.
pub(crate) fn anthropic_body(
    compact: &AnthropicCompaction,
    prefix: Option<&ConversationPrefix>,
    plan: &Plan,
    max_tokens: u32,
) -> Result<Value, LlmError> {
    let reader = NativeReader::of(compact, AnthropicCompaction::NAME);
    compact.body(&compaction_request(reader, prefix, plan), max_tokens)
}
