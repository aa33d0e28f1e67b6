//! The stable names of failures, shared by both sides of the seam.

use serde::Deserialize;
use serde::Serialize;

/// What kind of failure a [`CompactError`](super::CompactError), a
/// [`MethodError`](super::MethodError) or a [`MethodFailure`](super::MethodFailure) is: the
/// stable name written into `compaction/end` events and reports, and what
/// callers match on instead of error text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// [`CompactError::Busy`](super::CompactError::Busy).
    Busy,
    /// [`MethodError::Cancelled`](super::MethodError::Cancelled).
    Cancelled,
    /// [`CompactError::Changed`](super::CompactError::Changed).
    Changed,
    /// [`MethodError::Summary`](super::MethodError::Summary).
    Summary,
    /// [`MethodError::Overflow`](super::MethodError::Overflow).
    Overflow,
    /// [`MethodError::Llm`](super::MethodError::Llm).
    Llm,
    /// [`MethodError::NotSmaller`](super::MethodError::NotSmaller).
    NotSmaller,
    /// [`CompactError::TooLittle`](super::CompactError::TooLittle).
    TooLittle,
    /// [`CompactError::OverWindow`](super::CompactError::OverWindow).
    OverWindow,
    /// [`MethodError::NothingToCompact`](super::MethodError::NothingToCompact).
    NothingToCompact,
    /// [`MethodError::Unavailable`](super::MethodError::Unavailable), or
    /// a method that said it could not run
    /// ([`Availability::Unavailable`](crate::Availability)).
    Unavailable,
    /// [`CompactError::Commit`](super::CompactError::Commit).
    Commit,
    /// [`CompactError::Persistence`](super::CompactError::Persistence).
    Persistence,
    /// [`MethodError::Details`](super::MethodError::Details).
    Details,
    /// [`CompactError::AllFailed`](super::CompactError::AllFailed).
    AllFailed,
    /// A method named in the order that could not be built (no model, no
    /// endpoint configured). Only in a [`MethodFailure`](super::MethodFailure): it never ran.
    NotConfigured,
    /// A method passed over on purpose (its result would not have
    /// helped, e.g. a slow method while the breaker is open). Only in a
    /// [`MethodFailure`](super::MethodFailure): it never ran.
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
