//! Configuration errors of the basic backend. Compaction failures are
//! [`abridge_compact::CompactError`].

/// A budget that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetError {
    /// The window is zero.
    #[error("context window is 0 tokens; set the model's window")]
    NoWindow,
    /// An explicit reserve leaves nothing of the window.
    #[error(
        "reserve of {reserve} tokens leaves nothing of the {window}-token window; use a smaller reserve"
    )]
    ReserveTooLarge {
        /// The reserve asked for.
        reserve: u64,
        /// The window.
        window: u64,
    },
    /// An explicit threshold outside `1..=window`.
    #[error(
        "threshold of {threshold} tokens is outside the {window}-token window; use 1..={window}"
    )]
    ThresholdOutOfRange {
        /// The threshold asked for.
        threshold: u64,
        /// The window.
        window: u64,
    },
}
