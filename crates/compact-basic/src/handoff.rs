//! `handoff`: the live model writes a handoff document for the next
//! context window, committed as a checkpoint.
//!
//! The request is a side call on the live conversation: the caller's
//! system prompt and tools, the session's whole surface as the last turn
//! sent it (leading system messages, the planned span, the kept part),
//! then [`HANDOFF_PROMPT`] as the last user message, with tools listed but
//! disabled ([`ToolChoice::None`]). The prefix is therefore the one the
//! provider has just cached, and only the instruction and the document are
//! billed at full price. The document replaces the planned span like any
//! checkpoint, and is optionally also written to a Markdown file once the
//! checkpoint has committed.
//!
//! A conversation that ends in tool calls still waiting for results (a
//! handoff in the middle of a turn) is replayed without that last
//! assistant message; one that still has unpaired calls is sent as a
//! flattened transcript instead.

use std::fmt;
use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

use abridge_compact::Availability;
use abridge_compact::Capabilities;
use abridge_compact::Checkpoint;
use abridge_compact::CompactionMethod;
use abridge_compact::Details;
use abridge_compact::MethodError;
use abridge_compact::MethodOutput;
use abridge_compact::Outcome;
use abridge_compact::Plan;
use abridge_llm::Block;
use abridge_llm::LlmClient;
use abridge_llm::Message;
use abridge_llm::Purpose;
use abridge_llm::Request;
use abridge_llm::RetryPolicy;
use abridge_llm::SharedMessage;
use abridge_llm::ToolChoice;
use async_trait::async_trait;

use crate::attempts::AttemptLog;
use crate::cache_aligned::ConversationPrefix;
use crate::candidates::Candidate;
use crate::candidates::SummarizerCandidates;
use crate::candidates::complete_with_candidates;
use crate::files::cumulative_file_ops;
use crate::files::with_files_tree;
use crate::llm::split_short;
use crate::prompts::HANDOFF_PROMPT;
use crate::prompts::SHORT_HEADING;
use crate::record::HandoffRecord;
use crate::transcript::clip;
use crate::transcript::render_transcript;

pub use crate::names::HANDOFF;

/// Plain configuration of [`handoff_method`].
#[derive(Debug, Clone)]
pub struct HandoffConfig {
    /// The system prompt and tools the live conversation sends (the
    /// session does not record them).
    pub prefix: ConversationPrefix,
    /// Cap on the document's length in tokens. Default 4096.
    pub max_tokens: u32,
    /// Also write the document (with its `## In short`) to this Markdown
    /// file, replacing it. Written only after the checkpoint commits (a
    /// rejected checkpoint leaves no file); the path is recorded in
    /// `details.save_to`, and a write failure is logged as a warning and
    /// does not undo the checkpoint.
    pub save_to: Option<PathBuf>,
    /// Retry policy of every candidate.
    pub retry: RetryPolicy,
    /// Candidates tried after the first, in order.
    pub fallbacks: Vec<Candidate>,
}

impl Default for HandoffConfig {
    fn default() -> Self {
        HandoffConfig {
            prefix: ConversationPrefix::default(),
            max_tokens: 4096,
            save_to: None,
            retry: RetryPolicy::default(),
            fallbacks: Vec::new(),
        }
    }
}

/// True when every tool call in `messages` has its result there and the
/// reverse.
fn paired(messages: &[SharedMessage]) -> bool {
    let mut calls: Vec<&str> = messages
        .iter()
        .flat_map(|m| m.tool_calls().map(|(id, _, _)| id))
        .collect();
    let mut results: Vec<&str> = messages
        .iter()
        .filter_map(|m| m.tool_result_block().map(|(id, _, _)| id))
        .collect();
    calls.sort_unstable();
    results.sort_unstable();
    calls == results
}

/// The instruction message: the prompt, host notes and any focus.
fn instruction(plan: &Plan) -> String {
    let mut text = String::from(HANDOFF_PROMPT.trim());
    if !plan.extra_context().is_empty() {
        text.push_str("\n\n<host-notes>\n");
        for note in plan.extra_context() {
            text.push_str(note.trim());
            text.push('\n');
        }
        text.push_str("</host-notes>");
    }
    if let Some(focus) = &plan.instructions() {
        text.push_str("\n\nThe user asked the handoff to focus on: ");
        text.push_str(focus.trim());
    }
    text
}

/// Builds the handoff request for `plan`: `prefix`, the whole surface as
/// planned (head, span, kept part), then the instruction; tools listed,
/// calls forbidden. Falls back to a transcript when the surface cannot be
/// replayed as it is (see the module docs).
pub(crate) fn build_handoff_request(
    model: &str,
    prefix: &ConversationPrefix,
    plan: &Plan,
    max_tokens: u32,
) -> Request {
    let mut conversation: Vec<SharedMessage> = plan.head().to_vec();
    conversation.extend(plan.messages().iter().cloned());
    conversation.extend(plan.kept().iter().cloned());
    if !paired(&conversation)
        && conversation
            .last()
            .is_some_and(|m| m.tool_calls().next().is_some())
    {
        conversation.pop();
    }
    let mut messages: Vec<SharedMessage> = prefix.system.iter().cloned().map(Arc::new).collect();
    let text = if paired(&conversation) {
        messages.extend(conversation);
        instruction(plan)
    } else {
        tracing::debug!(
            "conversation has unpaired tool calls; sending the handoff request as a transcript"
        );
        messages.extend(plan.head().iter().cloned());
        let mut rest = plan.messages().to_vec();
        rest.extend(plan.kept().iter().cloned());
        format!(
            "<conversation>\n{}\n</conversation>\n\n{}",
            render_transcript(&rest),
            instruction(plan)
        )
    };
    messages.push(Arc::new(Message::user(text)));
    Request {
        model: model.to_string(),
        messages,
        tools: prefix.tools.clone(),
        tool_choice: ToolChoice::None,
        max_output_tokens: Some(max_tokens),
        temperature: None,
        purpose: Purpose::Handoff,
    }
}

/// Writes `text` to `path` private to its owner (0600) through a
/// temporary file beside it, so a reader never sees half a document.
fn save(path: &Path, text: &str) -> std::io::Result<()> {
    abridge_session::write_private(path, text.as_bytes())
}

/// The handoff compaction method.
pub(crate) struct HandoffMethod {
    candidates: SummarizerCandidates,
    config: HandoffConfig,
}

impl fmt::Debug for HandoffMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandoffMethod")
            .field("candidates", &self.candidates.candidates.len())
            .field("max_tokens", &self.config.max_tokens)
            .field("save_to", &self.config.save_to)
            .finish()
    }
}

impl HandoffMethod {
    /// A handoff written by `candidates` under `config` (its `retry` and
    /// `fallbacks` are ignored here; they are `handoff_method`'s).
    pub(crate) fn new(candidates: SummarizerCandidates, config: HandoffConfig) -> Self {
        HandoffMethod { candidates, config }
    }

    async fn write(&self, plan: &Plan, log: &AttemptLog) -> Result<MethodOutput, MethodError> {
        let clients = self.candidates.clients(log);
        let request = build_handoff_request("", &self.config.prefix, plan, self.config.max_tokens);
        let (text, response) =
            complete_with_candidates(HANDOFF, &clients, log, &request, self.config.max_tokens)
                .await?;
        let mut details = Details::new();
        if let Some(path) = &self.config.save_to {
            details.insert(&HandoffRecord {
                save_to: path.display().to_string(),
            })?;
        }
        let (body, short) = split_short(&text);
        let files = cumulative_file_ops(plan);
        let content = with_files_tree(&body, &files);
        let short = short.unwrap_or_else(|| clip(&body.replace('\n', " "), 300));
        Ok(MethodOutput::Checkpoint(
            Checkpoint::new(body)
                .with_content(vec![Block::text(content)])
                .with_short_summary(short)
                .with_files(files)
                .with_usage(Some(response.usage))
                .with_model(response.model)
                .with_details(details),
        ))
    }
}

#[async_trait]
impl CompactionMethod for HandoffMethod {
    fn name(&self) -> &str {
        HANDOFF
    }

    fn capabilities(&self) -> Capabilities {
        // The document is written from the history as it is, not in
        // windows: the input that overflowed would overflow again.
        Capabilities::model_backed().resending_input()
    }

    fn available(&self) -> Availability {
        if self.candidates.candidates.is_empty() {
            Availability::Unavailable {
                reason: "no model is configured to write the handoff".to_string(),
            }
        } else {
            Availability::Ready
        }
    }

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        let log = AttemptLog::default();
        let result = self.write(plan, &log).await;
        log.settle(result)
    }

    /// Saves the document once its checkpoint is in the session, so a
    /// checkpoint the commit rejects leaves no file claiming otherwise.
    async fn committed(&self, output: &MethodOutput, _outcome: &Outcome) {
        let (Some(path), MethodOutput::Checkpoint(checkpoint)) = (&self.config.save_to, output)
        else {
            return;
        };
        let document = format!(
            "{}\n\n{SHORT_HEADING}\n{}",
            checkpoint.summary.trim_end(),
            checkpoint.short_summary.trim()
        );
        if let Err(error) = save(path, &document) {
            tracing::warn!(path = %path.display(), %error, "could not save the handoff document");
        }
    }
}

/// The `handoff` method: `model` through `client` (then
/// `config.fallbacks`), each under `config.retry`, replaying
/// `config.prefix`; the document is also saved to `config.save_to` when
/// set. Runs on any executor (retry waits use abridge-llm's timer).
pub fn handoff_method(
    client: Arc<dyn LlmClient>,
    model: impl Into<String>,
    config: HandoffConfig,
) -> Arc<dyn CompactionMethod> {
    let mut candidates = SummarizerCandidates::new(client, model).with_retry(config.retry.clone());
    candidates
        .candidates
        .extend(config.fallbacks.iter().cloned());
    Arc::new(HandoffMethod::new(candidates, config))
}
