//! What a method's own work can fail with.

use abridge_llm::LlmError;
use abridge_llm::Usage;

use super::ErrorKind;
use crate::details::DetailsError;

/// Why a method produced nothing to commit.
///
/// This is what [`CompactionMethod::run`](crate::CompactionMethod::run)
/// returns: only what a method's own work can meet. Failures of the
/// transaction around it (another compaction in flight, the span moved,
/// a write failed, a landing the policy refuses) are the host's
/// [`CompactError`](crate::host::CompactError), which wraps this one
/// whole, text and kind unchanged. The host records it in
/// `compaction/end` and may try the next method; only
/// [`Cancelled`](Self::Cancelled) stops that (see
/// [`stops_fallthrough`](Self::stops_fallthrough)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MethodError {
    /// A hook, the caller or the model call cancelled the compaction.
    #[error("compaction cancelled by {by}")]
    Cancelled {
        /// Who cancelled (`hook`, `caller`, a provider name).
        by: String,
    },
    /// The method produced no usable summary (empty, cut by the output
    /// limit, tool calls instead of text, a failed model call).
    #[error("method {method}: no usable summary: {reason}")]
    Summary {
        /// The method.
        method: String,
        /// What was wrong with it.
        reason: String,
    },
    /// The summarizer's input did not fit its model. Callers that fold
    /// input through windows halve the window and retry.
    #[error("method {method}: summarizer input does not fit the model: {message}")]
    Overflow {
        /// The method.
        method: String,
        /// What the provider said.
        message: String,
    },
    /// A model call failed for a reason other than overflow or cancel.
    #[error("method {method}: model call failed: {source}")]
    Llm {
        /// The method.
        method: String,
        /// The classified provider error; ask it `is_retryable()`.
        #[source]
        source: LlmError,
    },
    /// The checkpoint costs as much as or more than what it would hide, so
    /// committing it would make the context larger. A method that can
    /// tell before returning says so itself; the commit checks every
    /// checkpoint again.
    #[error(
        "method {method}: checkpoint costs {checkpoint_tokens} tokens but hides only {hidden_tokens}; rejected"
    )]
    NotSmaller {
        /// The method.
        method: String,
        /// Tokens of the framed checkpoint.
        checkpoint_tokens: u64,
        /// Tokens of the span it would hide.
        hidden_tokens: u64,
    },
    /// Nothing in the plan can be compacted by this method (or, from the
    /// host, nothing on the surface under the policy).
    #[error("nothing to compact: {reason}")]
    NothingToCompact {
        /// Why (surface too short, everything retained, only a checkpoint).
        reason: String,
    },
    /// The method cannot run in this context (no model configured, no
    /// vision, offline).
    #[error("method {method} is unavailable: {reason}")]
    Unavailable {
        /// The method.
        method: String,
        /// Why.
        reason: String,
    },
    /// A method failed after spending model tokens (calls that errored
    /// after billing, answers rejected as unusable, candidates tried in
    /// turn). `compaction/end` records `usage`; the kind, the text and the
    /// fall-through decision are the inner error's.
    #[error("{source}")]
    Spent {
        /// Everything the method's model calls cost, failed ones included.
        usage: Usage,
        /// Why the method failed.
        #[source]
        source: Box<MethodError>,
    },
    /// A method's details section could not be written (or read back).
    #[error(transparent)]
    Details(#[from] DetailsError),
}

impl MethodError {
    /// What kind of failure this is, written into `compaction/end`
    /// events and reports. Usage attached with [`with_usage`](Self::with_usage)
    /// does not change it.
    pub fn kind(&self) -> ErrorKind {
        match self {
            MethodError::Cancelled { .. } => ErrorKind::Cancelled,
            MethodError::Summary { .. } => ErrorKind::Summary,
            MethodError::Overflow { .. } => ErrorKind::Overflow,
            MethodError::Llm { .. } => ErrorKind::Llm,
            MethodError::NotSmaller { .. } => ErrorKind::NotSmaller,
            MethodError::NothingToCompact { .. } => ErrorKind::NothingToCompact,
            MethodError::Unavailable { .. } => ErrorKind::Unavailable,
            MethodError::Details(_) => ErrorKind::Details,
            MethodError::Spent { source, .. } => source.kind(),
        }
    }

    /// Maps a model error met by `method` to the variant callers act on:
    /// overflow stays overflow (so windows can halve), a cancel stays a
    /// cancel, everything else keeps its classification.
    pub fn from_llm(method: &str, error: LlmError) -> Self {
        if error.is_context_overflow() {
            MethodError::Overflow {
                method: method.to_string(),
                message: error.to_string(),
            }
        } else if matches!(error, LlmError::Cancelled) {
            MethodError::Cancelled {
                by: "the model call".to_string(),
            }
        } else {
            MethodError::Llm {
                method: method.to_string(),
                source: error,
            }
        }
    }

    /// Attaches what the failed attempt cost, so `compaction/end` records
    /// it. A zero usage leaves the error as it is.
    pub fn with_usage(self, usage: Usage) -> Self {
        match self {
            _ if usage.is_zero() => self,
            MethodError::Spent {
                usage: mut spent,
                source,
            } => {
                spent.add(&usage);
                MethodError::Spent {
                    usage: spent,
                    source,
                }
            }
            other => MethodError::Spent {
                usage,
                source: Box::new(other),
            },
        }
    }

    /// What the failed attempt cost, when the method said.
    pub fn usage(&self) -> Option<&Usage> {
        match self {
            MethodError::Spent { usage, .. } => Some(usage),
            _ => None,
        }
    }

    /// The error without any attached usage.
    pub fn inner(&self) -> &MethodError {
        match self {
            MethodError::Spent { source, .. } => source.inner(),
            other => other,
        }
    }

    /// True when trying the next method cannot help either: the
    /// compaction was cancelled.
    pub fn stops_fallthrough(&self) -> bool {
        matches!(self.inner(), MethodError::Cancelled { .. })
    }
}
