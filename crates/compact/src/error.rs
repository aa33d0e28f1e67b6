//! The one error type of the compaction seam.

use abridge_llm::LlmError;
use abridge_llm::Usage;
use abridge_session::Seq;
use abridge_session::SessionError;
use serde::Deserialize;
use serde::Serialize;

use crate::details::DetailsError;

/// Why a compaction did not land.
///
/// Every variant except [`CompactError::Persistence`] leaves the surface
/// exactly as it was: a failed compaction writes at most a
/// `compaction/end` event carrying this error's text. Callers that try
/// several methods in turn fall through on every variant except `Busy`
/// and `Persistence`, which say the session itself cannot take a
/// compaction right now.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompactError {
    /// Another compaction of this session is in flight (its
    /// `compaction/start` is unmatched and its ticket is alive). Wait for
    /// it, or drop its ticket.
    #[error(
        "compaction {compaction_id} (started at seq {start_seq}) is still running; wait for it to end"
    )]
    Busy {
        /// The running compaction.
        compaction_id: String,
        /// Its `compaction/start` event.
        start_seq: Seq,
    },
    /// A hook, the caller or the model call cancelled the compaction.
    #[error("compaction cancelled by {by}")]
    Cancelled {
        /// Who cancelled (`hook`, `caller`, a provider name).
        by: String,
    },
    /// The span the plan covered is no longer on the surface as planned
    /// (a message was hidden, rewritten or the branch changed while the
    /// method ran). Plan again.
    #[error("the session changed while compacting: {reason}")]
    Changed {
        /// What differs, naming positions and seqs.
        reason: String,
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
    /// committing it would make the context larger.
    #[error(
        "method {method}: checkpoint costs {checkpoint_tokens} tokens but hides only {hidden_tokens}; rejected"
    )]
    NotSmaller {
        /// The method.
        method: String,
        /// Tokens of the framed checkpoint (or the rewrites), with the
        /// pins its landing would send again.
        checkpoint_tokens: u64,
        /// Tokens of the span it would hide.
        hidden_tokens: u64,
    },
    /// The output would reclaim less than the policy's floor, and less
    /// than the context it leaves: too little to pay for the prompt-cache
    /// break that changing the history causes (the next request writes
    /// the context from the change on into the cache again).
    #[error(
        "method {method}: reclaims only {reclaimed} tokens, under the floor of {floor} that pays for the prompt-cache break; rejected"
    )]
    TooLittle {
        /// The method.
        method: String,
        /// Tokens the output would reclaim.
        reclaimed: u64,
        /// The least a landing must reclaim.
        floor: u64,
    },
    /// The output would leave the context above the policy's ceiling (the
    /// window): the next request still could not be sent, so the landing
    /// would break the prompt cache for nothing.
    #[error(
        "method {method}: would leave {after} tokens, over the {ceiling}-token window; rejected"
    )]
    OverWindow {
        /// The method.
        method: String,
        /// The context the landing would leave.
        after: u64,
        /// The most a landing may leave.
        ceiling: u64,
    },
    /// Nothing on the surface can be compacted under the policy.
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
    /// The method's output cannot be committed (a rewrite of a seq that is
    /// not a visible tool result, an empty checkpoint, a region that splits
    /// a tool call from its result).
    #[error("cannot commit: {reason}")]
    Commit {
        /// What is wrong, naming the seq or span.
        reason: String,
    },
    /// The session log refused or failed the write; the in-memory session
    /// was rolled back by the log.
    #[error("session write failed: {0}")]
    Persistence(#[from] SessionError),
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
        source: Box<CompactError>,
    },
    /// A method's details section could not be written (or read back).
    #[error(transparent)]
    Details(#[from] DetailsError),
    /// Every method tried failed; each failure is listed in order.
    #[error("every method failed: {}", failures.iter().map(|f| format!("{}: {}", f.method, f.message)).collect::<Vec<_>>().join("; "))]
    AllFailed {
        /// What each method did, in the order tried.
        failures: Vec<MethodFailure>,
    },
}

/// What kind of failure a [`CompactError`] or a [`MethodFailure`] is: the
/// stable name written into `compaction/end` events and reports, and what
/// callers match on instead of error text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`CompactError::Busy`].
    Busy,
    /// [`CompactError::Cancelled`].
    Cancelled,
    /// [`CompactError::Changed`].
    Changed,
    /// [`CompactError::Summary`].
    Summary,
    /// [`CompactError::Overflow`].
    Overflow,
    /// [`CompactError::Llm`].
    Llm,
    /// [`CompactError::NotSmaller`].
    NotSmaller,
    /// [`CompactError::TooLittle`].
    TooLittle,
    /// [`CompactError::OverWindow`].
    OverWindow,
    /// [`CompactError::NothingToCompact`].
    NothingToCompact,
    /// [`CompactError::Unavailable`], or a method that said it could not
    /// run ([`Availability::Unavailable`](crate::Availability)).
    Unavailable,
    /// [`CompactError::Commit`].
    Commit,
    /// [`CompactError::Persistence`].
    Persistence,
    /// [`CompactError::Details`].
    Details,
    /// [`CompactError::AllFailed`].
    AllFailed,
    /// A method named in the order that could not be built (no model, no
    /// endpoint configured). Only in a [`MethodFailure`]: it never ran.
    NotConfigured,
    /// A method passed over on purpose (its result would not have
    /// helped, e.g. a slow method while the breaker is open). Only in a
    /// [`MethodFailure`]: it never ran.
    Skipped,
}

impl ErrorKind {
    /// The snake_case name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Busy => "busy",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Changed => "changed",
            ErrorKind::Summary => "summary",
            ErrorKind::Overflow => "overflow",
            ErrorKind::Llm => "llm",
            ErrorKind::NotSmaller => "not_smaller",
            ErrorKind::TooLittle => "too_little",
            ErrorKind::OverWindow => "over_window",
            ErrorKind::NothingToCompact => "nothing_to_compact",
            ErrorKind::Unavailable => "unavailable",
            ErrorKind::Commit => "commit",
            ErrorKind::Persistence => "persistence",
            ErrorKind::Details => "details",
            ErrorKind::AllFailed => "all_failed",
            ErrorKind::NotConfigured => "not_configured",
            ErrorKind::Skipped => "skipped",
        }
    }

    /// True when the method never ran: it was not configured, could not
    /// run, or was passed over. Reports list these apart from real
    /// failures.
    pub fn is_skip(self) -> bool {
        matches!(
            self,
            ErrorKind::NotConfigured | ErrorKind::Unavailable | ErrorKind::Skipped
        )
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One method that did not land in a pass: which, what kind of failure,
/// and the message for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MethodFailure {
    /// The method's name.
    pub method: String,
    /// What kind of failure; match on this, not on `message`.
    pub kind: ErrorKind,
    /// What happened, for people.
    pub message: String,
}

impl MethodFailure {
    /// A failure of `kind` with `message`.
    pub fn new(method: impl Into<String>, kind: ErrorKind, message: impl Into<String>) -> Self {
        MethodFailure {
            method: method.into(),
            kind,
            message: message.into(),
        }
    }

    /// The failure `error` describes, met by `method`.
    pub fn from_error(method: impl Into<String>, error: &CompactError) -> Self {
        MethodFailure::new(method, error.kind(), error.to_string())
    }
}

impl CompactError {
    /// What kind of failure this is, written into `compaction/end`
    /// events and reports. Usage attached with [`with_usage`](Self::with_usage)
    /// does not change it.
    pub fn kind(&self) -> ErrorKind {
        match self {
            CompactError::Busy { .. } => ErrorKind::Busy,
            CompactError::Cancelled { .. } => ErrorKind::Cancelled,
            CompactError::Changed { .. } => ErrorKind::Changed,
            CompactError::Summary { .. } => ErrorKind::Summary,
            CompactError::Overflow { .. } => ErrorKind::Overflow,
            CompactError::Llm { .. } => ErrorKind::Llm,
            CompactError::NotSmaller { .. } => ErrorKind::NotSmaller,
            CompactError::TooLittle { .. } => ErrorKind::TooLittle,
            CompactError::OverWindow { .. } => ErrorKind::OverWindow,
            CompactError::NothingToCompact { .. } => ErrorKind::NothingToCompact,
            CompactError::Unavailable { .. } => ErrorKind::Unavailable,
            CompactError::Commit { .. } => ErrorKind::Commit,
            CompactError::Persistence(_) => ErrorKind::Persistence,
            CompactError::Details(_) => ErrorKind::Details,
            CompactError::AllFailed { .. } => ErrorKind::AllFailed,
            CompactError::Spent { source, .. } => source.kind(),
        }
    }

    /// Maps a model error met by `method` to the variant callers act on:
    /// overflow stays overflow (so windows can halve), a cancel stays a
    /// cancel, everything else keeps its classification.
    pub fn from_llm(method: &str, error: LlmError) -> Self {
        if error.is_context_overflow() {
            CompactError::Overflow {
                method: method.to_string(),
                message: error.to_string(),
            }
        } else if matches!(error, LlmError::Cancelled) {
            CompactError::Cancelled {
                by: "the model call".to_string(),
            }
        } else {
            CompactError::Llm {
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
            CompactError::Spent {
                usage: mut spent,
                source,
            } => {
                spent.add(&usage);
                CompactError::Spent {
                    usage: spent,
                    source,
                }
            }
            other => CompactError::Spent {
                usage,
                source: Box::new(other),
            },
        }
    }

    /// What the failed attempt cost, when the method said.
    pub fn usage(&self) -> Option<&Usage> {
        match self {
            CompactError::Spent { usage, .. } => Some(usage),
            _ => None,
        }
    }

    /// The error without any attached usage.
    pub fn inner(&self) -> &CompactError {
        match self {
            CompactError::Spent { source, .. } => source.inner(),
            other => other,
        }
    }

    /// True when trying the next method cannot help either.
    pub fn stops_fallthrough(&self) -> bool {
        if let CompactError::Spent { source, .. } = self {
            return source.stops_fallthrough();
        }
        matches!(
            self,
            CompactError::Busy { .. }
                | CompactError::Persistence(_)
                | CompactError::Cancelled { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_values() {
        let error = CompactError::NotSmaller {
            method: "digest".into(),
            checkpoint_tokens: 900,
            hidden_tokens: 800,
        };
        assert_eq!(
            error.to_string(),
            "method digest: checkpoint costs 900 tokens but hides only 800; rejected"
        );
        assert_eq!(error.kind(), ErrorKind::NotSmaller);
        let all = CompactError::AllFailed {
            failures: vec![
                MethodFailure::new("soft", ErrorKind::Summary, "x"),
                MethodFailure::new("digest", ErrorKind::NotSmaller, "y"),
            ],
        };
        assert_eq!(all.to_string(), "every method failed: soft: x; digest: y");
    }

    #[test]
    fn overflow_from_llm_stays_overflow() {
        let error = CompactError::from_llm(
            "soft",
            LlmError::ContextOverflow {
                provider: "p".into(),
                message: "too long".into(),
            },
        );
        assert_eq!(error.kind(), ErrorKind::Overflow);
        assert_eq!(
            CompactError::from_llm("soft", LlmError::Cancelled).kind(),
            ErrorKind::Cancelled
        );
        assert_eq!(
            serde_json::to_value(ErrorKind::NothingToCompact).unwrap(),
            "nothing_to_compact"
        );
    }
}
