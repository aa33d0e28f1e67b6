//! The `CompactionMethod` trait and what a method returns.

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Usage;
use abridge_session::Seq;
use async_trait::async_trait;
use serde::Deserialize;
use serde::Serialize;

use crate::error::CompactError;
use crate::plan::Plan;
use crate::service::Outcome;

/// Why a compaction was asked for. Methods and hooks may behave
/// differently per trigger (an overflow wants the most reduction, idle
/// time allows a slow model).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// The context crossed the threshold between turns.
    Threshold,
    /// The context crossed the threshold inside a turn (between tool
    /// calls): the cut will likely split the turn.
    MidTurn,
    /// The provider refused a request as too large.
    Overflow,
    /// The model's answer was cut by the output limit because the context
    /// left too little room.
    IncompleteOutput,
    /// The user is away; there is time for a slow, careful method.
    Idle,
    /// Someone asked (a command, an API call).
    Manual,
}

impl Trigger {
    /// The snake_case name used in events.
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Threshold => "threshold",
            Trigger::MidTurn => "mid_turn",
            Trigger::Overflow => "overflow",
            Trigger::IncompleteOutput => "incomplete_output",
            Trigger::Idle => "idle",
            Trigger::Manual => "manual",
        }
    }
}

/// What a file operation did to a path, for the `<files>` list a
/// checkpoint carries forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileAccess {
    /// Only read.
    Read,
    /// Only written (created, edited, patched).
    Write,
    /// Both.
    ReadWrite,
}

impl FileAccess {
    /// Combines two accesses to the same path.
    pub fn merge(self, other: FileAccess) -> FileAccess {
        if self == other {
            self
        } else {
            FileAccess::ReadWrite
        }
    }

    /// The mark shown in a `<files>` list.
    pub fn mark(self) -> &'static str {
        match self {
            FileAccess::Read => "read",
            FileAccess::Write => "write",
            FileAccess::ReadWrite => "read-write",
        }
    }
}

/// The files a stretch of history touched, cumulative across checkpoints
/// (each checkpoint merges the previous one's), path to access, sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FileOps {
    /// Path to what was done to it.
    pub paths: BTreeMap<String, FileAccess>,
}

impl FileOps {
    /// Records one access.
    pub fn record(&mut self, path: impl Into<String>, access: FileAccess) {
        let path = path.into();
        let merged = match self.paths.get(&path) {
            Some(old) => old.merge(access),
            None => access,
        };
        self.paths.insert(path, merged);
    }

    /// Merges another set into this one.
    pub fn merge(&mut self, other: &FileOps) {
        for (path, access) in &other.paths {
            self.record(path.clone(), *access);
        }
    }

    /// True when no file was touched.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }
}

/// A checkpoint: the message that will replace the planned span, and
/// what the log records about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Checkpoint {
    /// What the model will see, without framing: commit wraps it in the
    /// checkpoint framing (see [`frame_checkpoint`](crate::frame_checkpoint)).
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
    /// Method-specific data for the log (window count, archive ids, ...).
    pub details: serde_json::Value,
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
        /// Method-specific data for the log.
        details: serde_json::Value,
    },
}

/// What a method may check before it is run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MethodContext {
    /// The model the next turn will use, if known.
    pub model: Option<String>,
    /// Its context window in tokens, if known.
    pub window: Option<u64>,
    /// The figure to act on right now.
    pub tokens: u64,
    /// The threshold the trigger compares against, if any.
    pub threshold: Option<u64>,
    /// Why compaction was asked for.
    pub trigger: Option<Trigger>,
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
///   otherwise, with [`CompactError::NotSmaller`]) and must carry a text
///   `summary`. Never return a checkpoint built from empty, truncated or
///   tool-call model output: return [`CompactError::Summary`].
/// - Rewrites must keep each target's call id.
///
/// # Errors
///
/// Any [`CompactError`]; the caller records it in `compaction/end` and may
/// try the next method. Return [`CompactError::Overflow`] when the model
/// refused the input as too large.
///
/// # Cancel safety
///
/// Dropping the future of `run` must leave nothing behind: no task keeps
/// running, nothing is written anywhere. The transaction's ticket decides
/// what the log records (see [`begin`](crate::begin)).
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

    /// Whether the method can run in `context`. The default is `Ready`.
    fn available(&self, _context: &MethodContext) -> Availability {
        Availability::Ready
    }

    /// Produces the compaction for `plan`.
    ///
    /// # Errors
    /// See the trait docs.
    async fn run(&self, plan: &Plan) -> Result<MethodOutput, CompactError>;

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
    fn available(&self, context: &MethodContext) -> Availability {
        (**self).available(context)
    }
    async fn run(&self, plan: &Plan) -> Result<MethodOutput, CompactError> {
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
    fn available(&self, context: &MethodContext) -> Availability {
        (**self).available(context)
    }
    async fn run(&self, plan: &Plan) -> Result<MethodOutput, CompactError> {
        (**self).run(plan).await
    }
    async fn committed(&self, output: &MethodOutput, outcome: &Outcome) {
        (**self).committed(output, outcome).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_access_merges_to_read_write() {
        let mut ops = FileOps::default();
        ops.record("a.rs", FileAccess::Read);
        ops.record("a.rs", FileAccess::Write);
        ops.record("b.rs", FileAccess::Write);
        assert_eq!(ops.paths["a.rs"], FileAccess::ReadWrite);
        assert_eq!(ops.paths["b.rs"], FileAccess::Write);
        assert_eq!(
            serde_json::to_string(&ops).unwrap(),
            r#"{"a.rs":"read_write","b.rs":"write"}"#
        );
    }
}
