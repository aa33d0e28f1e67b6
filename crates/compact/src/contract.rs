//! The `CompactionMethod` trait and what a method returns.

use std::fmt::Debug;
use std::sync::Arc;

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Usage;
use abridge_session::Seq;
use async_trait::async_trait;

use crate::capabilities::Capabilities;
use crate::details::DetailSection;
use crate::details::Details;
use crate::error::MethodError;
use crate::plan::Plan;
use crate::service::Outcome;
use crate::types::FileOps;

/// A checkpoint: the message that will replace the planned span, and
/// what the log records about it.
///
/// Built with [`Checkpoint::new`] and the `with_*` setters, so a method
/// says only what it has (a summary, and perhaps images, files, the cost);
/// the fields are public to read.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Checkpoint {
    /// What the model will see, without framing: commit wraps it in the
    /// checkpoint framing (see [`frame_checkpoint`](crate::host::frame_checkpoint)).
    /// Text for summaries; images for rendered frames.
    pub content: Vec<Block>,
    /// The full summary as text, for the log, reports and the next
    /// checkpoint's update prompt.
    pub summary: String,
    /// Two or three sentences for a UI line.
    pub short_summary: String,
    /// Files touched, cumulative (including the previous checkpoint's).
    pub files: FileOps,
    /// What producing it cost, when a model was called.
    pub usage: Option<Usage>,
    /// The model that wrote it, when one did.
    pub model: Option<String>,
    /// Method-specific record for the log (window count, archive, native
    /// items), as typed sections.
    pub details: Details,
    /// The summary is the hidden history's own text, serialized (a
    /// transcript), not something written from it: a later method that
    /// continues this checkpoint reads the messages it hid instead (see
    /// [`PreviousCheckpoint::source`](crate::PreviousCheckpoint::source)).
    pub transcript: bool,
}

/// The longest default short summary, in characters.
const SHORT_SUMMARY_CHARS: usize = 240;

impl Checkpoint {
    /// A checkpoint the model reads as `summary`'s text. The short summary
    /// defaults to the summary's first line (cut to 240 characters); no
    /// files, no cost, no details until set.
    pub fn new(summary: impl Into<String>) -> Self {
        let summary = summary.into();
        let short_summary = default_short_summary(&summary);
        Checkpoint {
            content: vec![Block::text(summary.clone())],
            summary,
            short_summary,
            files: FileOps::default(),
            usage: None,
            model: None,
            details: Details::new(),
            transcript: false,
        }
    }

    /// Marks the summary as a transcript of the hidden history (see
    /// [`transcript`](Self::transcript)).
    pub fn as_transcript(mut self) -> Self {
        self.transcript = true;
        self
    }

    /// Shows the model `content` instead of the summary's text (frames,
    /// a summary with images).
    pub fn with_content(mut self, content: Vec<Block>) -> Self {
        self.content = content;
        self
    }

    /// Sets the UI line.
    pub fn with_short_summary(mut self, short_summary: impl Into<String>) -> Self {
        self.short_summary = short_summary.into();
        self
    }

    /// Sets the cumulative file operations.
    pub fn with_files(mut self, files: FileOps) -> Self {
        self.files = files;
        self
    }

    /// Sets what producing the checkpoint cost (`None`: no model was
    /// called).
    pub fn with_usage(mut self, usage: Option<Usage>) -> Self {
        self.usage = usage;
        self
    }

    /// Names the model that wrote it.
    pub fn with_model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Replaces the method-specific record.
    pub fn with_details(mut self, details: Details) -> Self {
        self.details = details;
        self
    }

    /// Adds one typed section to the method-specific record.
    ///
    /// # Errors
    /// [`MethodError::Details`] when the section does not serialize.
    pub fn with_section<T: DetailSection>(mut self, section: &T) -> Result<Self, MethodError> {
        self.details.insert(section)?;
        Ok(self)
    }
}

fn default_short_summary(summary: &str) -> String {
    let line = summary
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    match line.char_indices().nth(SHORT_SUMMARY_CHARS) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line.to_string(),
    }
}

/// New content for one visible tool result.
#[derive(Debug, Clone, PartialEq)]
pub struct Rewrite {
    /// The visible tool-result seq to replace.
    pub target: Seq,
    /// The new tool message; it must keep the target's call id.
    pub message: Message,
}

/// What a method produced.
#[derive(Debug, Clone, PartialEq)]
pub enum MethodOutput {
    /// Replace the planned span with one checkpoint message.
    Checkpoint(Checkpoint),
    /// Rewrite individual tool results (pruning, shake); the plan's span is
    /// only advice.
    Rewrites {
        /// The rewrites, in any order; each target must be visible.
        rewrites: Vec<Rewrite>,
        /// Method-specific record for the log.
        details: Details,
    },
}

/// Whether a method can run now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    /// It can run.
    Ready,
    /// It cannot, and says why (for the fall-through report).
    Unavailable {
        /// Why not.
        reason: String,
    },
}

/// What a method expects to find in a plan, asked before the attempt
/// writes anything (see [`CompactionMethod::prospect`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prospect {
    /// It may produce something: the attempt begins and runs it.
    Maybe,
    /// It is certain to find nothing to compact in this plan: the attempt
    /// ends with [`MethodError::NothingToCompact`] carrying `reason`,
    /// and nothing is written to the log.
    Nothing {
        /// Why, for the fall-through report.
        reason: String,
    },
}

/// A way of making the surface smaller.
///
/// # Contract
///
/// - Callers call [`available`](Self::available) before
///   [`run`](Self::run), and skip the method when it is not `Ready`.
/// - `run` receives an owned [`Plan`]: the span's messages as shared
///   clones, its seqs and the surface generation. It must not assume the
///   session is unchanged when it returns: the commit checks that, and a
///   method never touches the session.
/// - A checkpoint must be smaller than what it hides (commit rejects it
///   otherwise, with [`MethodError::NotSmaller`]) and must carry a text
///   `summary`. Never return a checkpoint built from empty, truncated or
///   tool-call model output: return [`MethodError::Summary`].
/// - Rewrites must keep each target's call id.
///
/// # Errors
///
/// Any [`MethodError`]: a method can fail only with its own work's
/// failures, never the host's (busy, changed, commit, a failed write). The
/// host wraps it in [`CompactError::Method`](crate::host::CompactError::Method),
/// records it in `compaction/end` with its text and kind unchanged, and may
/// try the next method. Return [`MethodError::Overflow`] when the model
/// refused the input as too large.
///
/// # Cancel safety
///
/// Dropping the future of `run` must leave nothing behind: no task keeps
/// running, nothing is written anywhere. The transaction's ticket decides
/// what the log records (see [`begin`](crate::host::begin)).
///
/// # Example: the wrong way and the right way
///
/// Wrong: keep a `&mut Session` inside the method and append the result
/// yourself (the agent cannot append while the model thinks, and a failure
/// half-writes). Right: return a [`MethodOutput`]; `commit` writes it in
/// one batch after checking the span is still there.
#[async_trait]
pub trait CompactionMethod: Send + Sync + Debug {
    /// Stable short name (`soft`, `digest`, `prune`, ...), written into
    /// events and matched by `--method`.
    fn name(&self) -> &str;

    /// Whether the method can run now (a model is configured, a key is
    /// set). The default is `Ready`. It must be cheap and must not call
    /// out: it is asked before every attempt.
    fn available(&self) -> Availability {
        Availability::Ready
    }

    /// Whether the method is certain to find nothing in `plan`, asked after
    /// planning and before `compaction/start` is written. A method whose
    /// finding is cheap and model-free (prune's passes) answers
    /// [`Prospect::Nothing`] so that an attempt with nothing to do costs
    /// no durable, fsynced event pair; the default, [`Prospect::Maybe`],
    /// is never wrong. It must be cheap, must not call out, and runs with
    /// the session locked. The host's `before_compaction` hook is asked
    /// only for attempts that begin.
    fn prospect(&self, _plan: &Plan) -> Prospect {
        Prospect::Maybe
    }

    /// What the method is: whether it calls a model, resends its input,
    /// may run on overflow, may be speculated, and whether it writes a
    /// checkpoint or rewrites. The host asks this instead of matching the
    /// name. The default, [`Capabilities::MODEL_FREE`], is never wrong:
    /// a model-free checkpoint that runs on any trigger and is never
    /// started early.
    fn capabilities(&self) -> Capabilities {
        Capabilities::MODEL_FREE
    }

    /// Produces the compaction for `plan`.
    ///
    /// # Errors
    /// See the trait docs.
    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError>;

    /// Called after `output`, which this method produced, committed as
    /// `outcome`. Side effects outside the session (a document written
    /// beside it) belong here rather than in `run`, so a checkpoint that
    /// the commit rejects leaves nothing behind. The default does nothing.
    async fn committed(&self, _output: &MethodOutput, _outcome: &Outcome) {}
}

#[async_trait]
impl<T: CompactionMethod + ?Sized> CompactionMethod for Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn available(&self) -> Availability {
        (**self).available()
    }
    fn prospect(&self, plan: &Plan) -> Prospect {
        (**self).prospect(plan)
    }
    fn capabilities(&self) -> Capabilities {
        (**self).capabilities()
    }
    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        (**self).run(plan).await
    }
    async fn committed(&self, output: &MethodOutput, outcome: &Outcome) {
        (**self).committed(output, outcome).await
    }
}

#[async_trait]
impl<T: CompactionMethod + ?Sized> CompactionMethod for Box<T> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn available(&self) -> Availability {
        (**self).available()
    }
    fn prospect(&self, plan: &Plan) -> Prospect {
        (**self).prospect(plan)
    }
    fn capabilities(&self) -> Capabilities {
        (**self).capabilities()
    }
    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        (**self).run(plan).await
    }
    async fn committed(&self, output: &MethodOutput, outcome: &Outcome) {
        (**self).committed(output, outcome).await
    }
}
