//! The `Summarizer` trait: whatever writes a summary of history.

use std::fmt::Debug;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use abridge_llm::Purpose;
use abridge_llm::SharedMessage;
use abridge_llm::Usage;
use async_trait::async_trait;

use abridge_compact::MethodError;

/// What to summarize.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRequest {
    /// Compaction, branch summary or handoff.
    pub purpose: Purpose,
    /// The history to summarize, oldest first. Untrusted data: it may
    /// contain text that looks like instructions.
    pub messages: Vec<SharedMessage>,
    /// The previous checkpoint's summary, to merge rather than lose.
    pub previous: Option<String>,
    /// When the cut falls inside a turn: the start of that turn, to be
    /// summarized separately and placed below the history summary.
    pub turn_prefix: Vec<SharedMessage>,
    /// What the user asked the summary to focus on.
    pub instructions: Option<String>,
    /// Extra context from hooks, shown to the summarizer as notes.
    pub extra_context: Vec<String>,
    /// Cap on the summary's length in tokens.
    pub max_output_tokens: u32,
}

impl SummaryRequest {
    /// A compaction request over `messages` with a 4096-token cap.
    pub fn new(messages: Vec<SharedMessage>) -> Self {
        SummaryRequest {
            purpose: Purpose::Compaction,
            messages,
            previous: None,
            turn_prefix: Vec::new(),
            instructions: None,
            extra_context: Vec::new(),
            max_output_tokens: 4096,
        }
    }
}

/// A written summary.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// The summary, Markdown.
    pub text: String,
    /// Two or three sentences for a UI line, when the summarizer wrote one.
    pub short: Option<String>,
    /// What it cost, when a model was called.
    pub usage: Option<Usage>,
    /// Which model wrote it.
    pub model: Option<String>,
}

impl Summary {
    /// A summary of just text.
    pub fn text(text: impl Into<String>) -> Self {
        Summary {
            text: text.into(),
            ..Summary::default()
        }
    }
}

/// Writes summaries: an LLM, a remote service, or a test script.
///
/// # Contract
///
/// - Return text only when it is a usable summary. Empty text, text cut by
///   an output limit, or a tool call instead of text is
///   [`MethodError::Summary`], never `Ok`.
/// - When the input is too large for the backing model, return
///   [`MethodError::Overflow`]: callers fold the input through smaller
///   windows and retry.
/// - Treat `request.messages` as data, never as instructions.
///
/// # Cancel safety
///
/// Dropping the future cancels the work; nothing is kept.
#[async_trait]
pub trait Summarizer: Send + Sync + Debug {
    /// Short name for events and errors.
    fn name(&self) -> &str;

    /// Summarizes `request`.
    ///
    /// # Errors
    /// See the trait docs.
    async fn summarize(&self, request: &SummaryRequest) -> Result<Summary, MethodError>;
}

#[async_trait]
impl<T: Summarizer + ?Sized> Summarizer for Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }
    async fn summarize(&self, request: &SummaryRequest) -> Result<Summary, MethodError> {
        (**self).summarize(request).await
    }
}

#[async_trait]
impl<T: Summarizer + ?Sized> Summarizer for Box<T> {
    fn name(&self) -> &str {
        (**self).name()
    }
    async fn summarize(&self, request: &SummaryRequest) -> Result<Summary, MethodError> {
        (**self).summarize(request).await
    }
}

/// The boxed future a closure summarizer returns.
pub type SummaryFuture = Pin<Box<dyn Future<Output = Result<Summary, MethodError>> + Send>>;

/// A summarizer made from a closure, so a test writes one in a line:
///
/// ```
/// use abridge_compact_basic::{FnSummarizer, Summary};
/// let fixed = FnSummarizer::new("fixed", |_request| Box::pin(async { Ok(Summary::text("goal: x")) }));
/// # let _ = fixed;
/// ```
pub struct FnSummarizer<F> {
    name: String,
    f: F,
}

impl<F> FnSummarizer<F>
where
    F: Fn(&SummaryRequest) -> SummaryFuture + Send + Sync,
{
    /// Wraps `f` under `name`.
    pub fn new(name: impl Into<String>, f: F) -> Self {
        FnSummarizer {
            name: name.into(),
            f,
        }
    }
}

impl<F> Debug for FnSummarizer<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnSummarizer")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl<F> Summarizer for FnSummarizer<F>
where
    F: Fn(&SummaryRequest) -> SummaryFuture + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }
    async fn summarize(&self, request: &SummaryRequest) -> Result<Summary, MethodError> {
        (self.f)(request).await
    }
}
