//! The window, compaction threshold and retention budget a command works
//! under, decided in one place so `compact` and `simulate` agree.

use abridge_compact_basic::Budget;

/// What a compaction works against.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Context window in tokens.
    pub(crate) window: u64,
    /// Compaction fires at this many tokens.
    pub(crate) threshold: u64,
    /// Tokens of newest history kept verbatim.
    pub(crate) keep: u64,
}

/// Limits for `window`, with `keep` from the command line or, by default,
/// the retention budget capped at half the threshold (so a small window
/// still leaves room to compact). `keep` is in our own token units: the
/// policy scales it by the reported/estimated ratio when it plans, once.
///
/// # Errors
/// A window too small for any threshold; an explicit keep at or above the
/// threshold.
pub(crate) fn limits(window: u64, keep: Option<u64>) -> anyhow::Result<Limits> {
    let budget = Budget::new(window);
    let threshold = budget.threshold()?;
    let keep = keep.unwrap_or_else(|| budget.keep(1.0).min(threshold / 2));
    if keep >= threshold {
        anyhow::bail!(
            "--keep {keep} must be below the compaction threshold of {threshold} tokens (window {window})"
        );
    }
    Ok(Limits {
        window,
        threshold,
        keep,
    })
}
