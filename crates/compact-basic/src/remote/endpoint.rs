//! A summarizer over a plain summary service, for callers that want
//! summaries without a compaction method. The service's wire is
//! abridge-providers' `SummaryEndpoint`.

use std::sync::Arc;

use abridge_llm::LlmError;
use abridge_providers::ApiKey;
use abridge_providers::SummaryEndpoint;

use crate::llm::LlmSummarizer;

/// A [`Summarizer`](crate::summarizer::Summarizer) over the summary service
/// at `url`, for callers that want summaries without a compaction method
/// (branch summaries, a custom method). The service receives
/// `{"system_prompt", "prompt", "max_tokens"}` and answers `{"summary"}`
/// (optionally `"usage": {"input_tokens", "output_tokens"}` and
/// `"model"`). No retries: the `remote` method adds those; a caller of
/// this function gets one call per summary.
///
/// # Errors
/// `InvalidConfig` for a URL that is not http(s) or a bad header.
pub fn endpoint_summarizer(
    url: impl Into<String>,
    key: Option<ApiKey>,
) -> Result<LlmSummarizer, LlmError> {
    Ok(LlmSummarizer::new(
        Arc::new(SummaryEndpoint::new(&url.into(), key, &[])?),
        "",
    ))
}
