//! The window, compaction threshold and retention budget a command works
//! under, decided in one place so `compact` and `simulate` agree.

use abridge_compact_basic::Budget;

/// The flags every command that compacts takes: which methods, for which
/// model, under which window and retention budget.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct BudgetArgs {
    /// Methods to try in turn until one lands, comma separated
    /// (digest, soft, handoff, remote, prune, shake, trim, snapcompact).
    #[arg(long, value_delimiter = ',', default_value = "digest")]
    pub(crate) method: Vec<String>,
    /// The model the next turn will use (prices tokens, sets the window).
    #[arg(long)]
    pub(crate) model: Option<String>,
    /// Context window in tokens, overriding the model's.
    #[arg(long)]
    pub(crate) window: Option<u64>,
    /// Tokens of newest history to keep verbatim (default: 20000, at most
    /// half the compaction threshold).
    #[arg(long)]
    pub(crate) keep: Option<u64>,
}

impl BudgetArgs {
    /// The limits for a model whose window is `model_window`, unless
    /// `--window` overrides it.
    ///
    /// # Errors
    /// See [`limits`].
    pub(crate) fn limits(&self, model_window: u64) -> anyhow::Result<Limits> {
        limits(self.window.unwrap_or(model_window), self.keep)
    }
}

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
