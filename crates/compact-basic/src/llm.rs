//! `LlmSummarizer`: a [`Summarizer`] on top of any [`LlmClient`].
//!
//! The request is built in one place, [`build_summary_request`], so that a
//! cache-aligned mode (sending the real history as messages, with the
//! instructions last, to reuse the provider's prompt cache) can be added
//! beside the flattened-transcript mode without touching validation.

use std::sync::Arc;

use crate::summarizer::Summarizer;
use crate::summarizer::Summary;
use crate::summarizer::SummaryRequest;
use abridge_compact::MethodError;
use abridge_llm::LlmClient;
use abridge_llm::Purpose;
use abridge_llm::Request;
use abridge_llm::Response;
use abridge_llm::StopReason;
use async_trait::async_trait;

use crate::cache_aligned::AlignedPrefix;
use crate::cache_aligned::build_cache_aligned_request;
use crate::names;
use crate::prompts::SHORT_HEADING;
use crate::transcript_request::transcript_request;

/// How the history is put in front of the summarizing model.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub(crate) enum RequestMode {
    /// The history flattened into one user message inside
    /// `<conversation>` tags, after the system prompt. Works with every
    /// provider; no cache reuse.
    #[default]
    Transcript,
    /// The conversation replayed as the live agent sent it (its system
    /// prompt, tools and messages), the instruction appended last and tool
    /// calls forbidden, so the provider's prompt cache is reused. See
    /// [`build_cache_aligned_request`].
    CacheAligned(Arc<AlignedPrefix>),
}

/// Builds the request for `request` in `mode`: the one place summary
/// requests are made. See [`transcript_request`] and
/// [`build_cache_aligned_request`].
pub(crate) fn build_summary_request(
    model: &str,
    mode: RequestMode,
    request: &SummaryRequest,
) -> Request {
    match mode {
        RequestMode::Transcript => transcript_request(model, request),
        RequestMode::CacheAligned(aligned) => build_cache_aligned_request(model, &aligned, request),
    }
}

/// Checks a model's answer the way summaries are checked: a tool call,
/// output cut by the limit or empty text is [`MethodError::Summary`].
/// Returns the visible text.
pub(crate) fn usable_text(
    method: &str,
    response: &Response,
    max_tokens: u32,
) -> Result<String, MethodError> {
    let fail = |reason: String| MethodError::Summary {
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

/// Splits a summary into its body and the `## In short` section.
pub(crate) fn split_short(text: &str) -> (String, Option<String>) {
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

/// The method a summary is written for, as its purpose says: what its
/// errors name, so a failed branch summary or handoff is not reported as a
/// failed soft compaction.
fn asking_method(purpose: Purpose) -> &'static str {
    match purpose {
        Purpose::BranchSummary => names::BRANCH_SUMMARY,
        Purpose::Handoff => names::HANDOFF,
        Purpose::Compaction | Purpose::Turn => names::SOFT,
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
    pub(crate) fn with_mode(mut self, mode: RequestMode) -> Self {
        self.mode = mode;
        self
    }
}

#[async_trait]
impl Summarizer for LlmSummarizer {
    fn name(&self) -> &str {
        self.client.provider()
    }

    async fn summarize(&self, request: &SummaryRequest) -> Result<Summary, MethodError> {
        let method = asking_method(request.purpose);
        let built = build_summary_request(&self.model, self.mode.clone(), request);
        let response = self
            .client
            .complete(&built)
            .await
            .map_err(|error| MethodError::from_llm(method, error))?;
        let text = usable_text(method, &response, request.max_output_tokens)?;
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

    #[tokio::test]
    async fn errors_name_the_method_the_summary_was_for() {
        // An empty answer is refused; the refusal names who asked.
        let client = abridge_test_support::scripted::ScriptedClient::new(Vec::new()).fallback("");
        let summarizer = LlmSummarizer::new(client.shared(), "m");
        for (purpose, method) in [
            (Purpose::Compaction, "soft"),
            (Purpose::BranchSummary, "branch-summary"),
            (Purpose::Handoff, "handoff"),
        ] {
            let mut request = SummaryRequest::new(vec![Arc::new(abridge_llm::Message::user("hi"))]);
            request.purpose = purpose;
            match summarizer.summarize(&request).await {
                Err(MethodError::Summary { method: named, .. }) => assert_eq!(named, method),
                other => panic!("{purpose:?}: {other:?}"),
            }
        }
    }

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
