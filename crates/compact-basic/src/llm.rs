//! `LlmSummarizer`: a [`Summarizer`] on top of any [`LlmClient`].
//!
//! The request is built in one place, [`build_summary_request`], so that a
//! cache-aligned mode (sending the real history as messages, with the
//! instructions last, to reuse the provider's prompt cache) can be added
//! beside the flattened-transcript mode without touching validation.

use std::sync::Arc;

use abridge_compact::CompactError;
use abridge_compact::Summarizer;
use abridge_compact::Summary;
use abridge_compact::SummaryRequest;
use abridge_llm::LlmClient;
use abridge_llm::Message;
use abridge_llm::Purpose;
use abridge_llm::Request;
use async_trait::async_trait;

use crate::prompts::BRANCH_SUMMARY;
use crate::prompts::SHORT_HEADING;
use crate::prompts::SUMMARIZE_INITIAL;
use crate::prompts::SUMMARIZE_SYSTEM;
use crate::prompts::SUMMARIZE_TURN_PREFIX;
use crate::prompts::SUMMARIZE_UPDATE;
use crate::transcript::render_transcript;

/// How the history is put in front of the summarizing model.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub enum RequestMode {
    /// The history flattened into one user message inside
    /// `<conversation>` tags, after the system prompt. Works with every
    /// provider; no cache reuse.
    #[default]
    Transcript,
    /// The conversation replayed as the live agent sent it (its system
    /// prompt, tools and messages), the instruction appended last and tool
    /// calls forbidden, so the provider's prompt cache is reused. See
    /// [`build_cache_aligned_request`](crate::build_cache_aligned_request).
    CacheAligned(Arc<crate::cache_aligned::AlignedPrefix>),
}

/// Appends what every summary request ends with: the previous checkpoint to
/// merge (when there is one to show), the host's notes, the task prompt and
/// the user's focus. Both request modes end this way.
pub(crate) fn push_summary_tail(
    text: &mut String,
    previous: Option<&str>,
    request: &SummaryRequest,
    task: &str,
) {
    if let Some(previous) = previous {
        text.push_str("<previous-checkpoint>\n");
        text.push_str(previous.trim());
        text.push_str("\n</previous-checkpoint>\n\n");
    }
    if !request.extra_context.is_empty() {
        text.push_str("<host-notes>\n");
        for note in &request.extra_context {
            text.push_str(note.trim());
            text.push('\n');
        }
        text.push_str("</host-notes>\n\n");
    }
    text.push_str(task.trim());
    if let Some(instructions) = &request.instructions {
        text.push_str("\n\nThe user asked this checkpoint to focus on: ");
        text.push_str(instructions.trim());
    }
}

/// Builds the request for `request`: the system prompt that treats history
/// as untrusted data, then one user message with the conversation, the
/// previous checkpoint, host notes, the task prompt and any focus. No tools
/// are offered. The single place requests are made.
pub fn build_summary_request(model: &str, mode: RequestMode, request: &SummaryRequest) -> Request {
    if let RequestMode::CacheAligned(aligned) = mode {
        return crate::cache_aligned::build_cache_aligned_request(model, &aligned, request);
    }
    let (history, task) = if request.purpose == Purpose::BranchSummary {
        (&request.messages, BRANCH_SUMMARY)
    } else if request.messages.is_empty() && !request.turn_prefix.is_empty() {
        (&request.turn_prefix, SUMMARIZE_TURN_PREFIX)
    } else if request.previous.is_some() {
        (&request.messages, SUMMARIZE_UPDATE)
    } else {
        (&request.messages, SUMMARIZE_INITIAL)
    };
    let mut text = String::new();
    text.push_str("<conversation>\n");
    text.push_str(&render_transcript(history));
    text.push_str("\n</conversation>\n\n");
    push_summary_tail(&mut text, request.previous.as_deref(), request, task);
    let mut out = Request::new(
        model,
        vec![
            Message::system(SUMMARIZE_SYSTEM.trim()),
            Message::user(text),
        ],
        request.purpose,
    );
    out.max_output_tokens = Some(request.max_output_tokens);
    out
}

/// Splits a summary into its body and the `## In short` section.
pub fn split_short(text: &str) -> (String, Option<String>) {
    match text.find(SHORT_HEADING) {
        Some(at) => {
            let short = text[at + SHORT_HEADING.len()..].trim();
            let body = text[..at].trim_end();
            (
                body.to_string(),
                (!short.is_empty()).then(|| short.to_string()),
            )
        }
        None => (text.trim().to_string(), None),
    }
}

/// A summarizer that asks a model.
#[derive(Debug, Clone)]
pub struct LlmSummarizer {
    client: Arc<dyn LlmClient>,
    model: String,
    mode: RequestMode,
}

impl LlmSummarizer {
    /// Summarizes with `model` through `client`.
    pub fn new(client: Arc<dyn LlmClient>, model: impl Into<String>) -> Self {
        LlmSummarizer {
            client,
            model: model.into(),
            mode: RequestMode::default(),
        }
    }

    /// Sets the request mode.
    pub fn with_mode(mut self, mode: RequestMode) -> Self {
        self.mode = mode;
        self
    }
}

#[async_trait]
impl Summarizer for LlmSummarizer {
    fn name(&self) -> &str {
        self.client.provider()
    }

    async fn summarize(&self, request: &SummaryRequest) -> Result<Summary, CompactError> {
        let method = "soft";
        let built = build_summary_request(&self.model, self.mode.clone(), request);
        let response = self
            .client
            .complete(&built)
            .await
            .map_err(|error| CompactError::from_llm(method, error))?;
        let text = crate::candidates::usable_text(method, &response, request.max_output_tokens)?;
        let (body, short) = split_short(&text);
        Ok(Summary {
            text: body,
            short,
            usage: Some(response.usage),
            model: Some(response.model),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_section_is_split_off() {
        let (body, short) = split_short("## Goal\nx\n\n## In short\nDoing x. Half done.");
        assert_eq!(body, "## Goal\nx");
        assert_eq!(short.as_deref(), Some("Doing x. Half done."));
        assert_eq!(
            split_short("## Goal\ny\n"),
            ("## Goal\ny".to_string(), None)
        );
    }
}
