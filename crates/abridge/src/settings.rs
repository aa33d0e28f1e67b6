//! `Settings`: every knob of automatic compaction, with its documented
//! default, loaded from TOML or JSON and checked before anything runs.
//!
//! A settings file is usually `abridge.toml` beside the session. Unknown
//! keys are errors (a typo must not silently fall back to a default), and
//! so are contradictions such as a retention budget at or above the
//! threshold. Every error names the key and, for files, the line.

use std::path::Path;
use std::path::PathBuf;

use abridge_prune::PruneConfig;
use abridge_prune::ShakeConfig;
use abridge_prune::TrimConfig;
use serde::Deserialize;
use serde::Serialize;

/// The default method order: cheap and lossless first, model calls in the
/// middle, the model-free digest last so a pass can always land. Kept by
/// measurement (BENCHMARKS.md, "Default method order", and
/// docs/composition.md): snapcompact before digest keeps the most where it
/// has room, and declines where it has too little.
pub const DEFAULT_METHOD_ORDER: &[&str] = &[
    "prune",
    "remote",
    "snapcompact",
    "handoff",
    "shake",
    "soft",
    "digest",
];

/// The smallest default reserve, in tokens: room for the next reply and a
/// summary call even on a small window.
pub const MIN_DEFAULT_RESERVE: u64 = 16_384;

/// The default reserve as a percentage of the window.
pub const DEFAULT_RESERVE_PERCENT: u64 = 15;

/// Newest tokens kept verbatim by default (capped at half the threshold).
pub const DEFAULT_KEEP_RECENT_TOKENS: u64 = abridge_compact::DEFAULT_KEEP_RECENT_TOKENS;

/// A pass succeeds only when the context ends at or below this percentage
/// of the threshold, so the next turn does not trigger again at once.
pub const DEFAULT_TARGET_PERCENT: u64 = 80;

/// The smallest context window abridge compacts for, in tokens: the
/// smallest window of models still in use. Below it a checkpoint, the
/// kept turns and a reply cannot share the window, so a smaller one is
/// a mistake (a window given in thousands, a typo) and is refused.
pub const MIN_WINDOW: u64 = 2_048;

/// A landing must reclaim at least this percentage of the threshold: a
/// change to the history breaks the provider's prompt cache, and a pass
/// that frees a few hundred tokens pays that for nothing.
pub const DEFAULT_MIN_RECLAIM_PERCENT: u64 = 5;

/// Consecutive failed passes after which automatic maintenance stops
/// until a success or a manual run.
pub const DEFAULT_BREAKER_FAILURES: u32 = 3;

/// Every knob of automatic compaction. `Settings::default()` is the
/// documented behaviour; a file only names what it changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Automatic maintenance on or off. Manual runs work either way.
    pub enabled: bool,
    /// Methods to try, in order, until a pass makes enough progress.
    /// Methods that are unavailable for the model or not configured are
    /// skipped with a line saying why.
    pub method_order: Vec<String>,
    /// When to compact; default: the window minus the reserve.
    pub threshold: Option<Threshold>,
    /// Tokens kept free for the reply; default max(15% of the window,
    /// 16384), or 15% alone when that would leave too little.
    pub reserve: Option<u64>,
    /// Newest tokens kept verbatim; default 20000, at most half the
    /// threshold.
    pub keep_recent_tokens: Option<u64>,
    /// A pass succeeds only at or below this percentage of the threshold.
    pub target_percent: u64,
    /// A method lands only when it reclaims at least this percentage of
    /// the threshold (0 to 50; 0 lands any saving): less does not pay
    /// for the prompt-cache break. Default 5.
    pub min_reclaim_percent: u64,
    /// Compact between tool calls inside a turn, not only after turns.
    pub mid_turn: bool,
    /// Compact after this many idle minutes when above the idle threshold
    /// (half the threshold); `None`: never.
    pub idle_minutes: Option<u64>,
    /// A user message appended after a threshold pass so the agent goes on
    /// by itself; `None`: nothing is appended.
    pub auto_continue: Option<String>,
    /// Start the model-backed method early, on a snapshot, when the
    /// context is within this percentage of the threshold below it, so
    /// the threshold pass commits a finished checkpoint instead of waiting
    /// for a model (see `speculation.rs`). `None` (the default): never; a
    /// session that ends inside the band would have paid for a summary it
    /// never used. Needs a tokio runtime.
    pub speculative_percent: Option<u64>,
    /// Consecutive failed passes that stop automatic maintenance.
    pub breaker_failures: u32,
    /// Summarize an abandoned branch when navigating away from it.
    pub branch_summaries: bool,
    /// A model with a larger window to switch to on overflow or a length
    /// stop before compacting (context promotion); `None`: never.
    pub promotion_model: Option<String>,
    /// Ask the provider's token-counting endpoint, when the host gave the
    /// harness one ([`HarnessBuilder::count_endpoint`](crate::HarnessBuilder::count_endpoint)),
    /// instead of estimating each new message (see `counting.rs`).
    pub count_with_endpoint: bool,
    /// Settings of `prune`.
    pub prune: PruneConfig,
    /// `mask` keeps this many newest tool results verbatim (default 10,
    /// at least 1); it shares prune's protected tools.
    pub mask_keep: usize,
    /// Settings of `shake`; `None` picks a preset from the trigger.
    pub shake: Option<ShakeConfig>,
    /// Settings of `trim`.
    pub trim: TrimConfig,
    /// Offer the `recall` tool ([`crate::Harness::tools`]) so the model can
    /// read back and search what compaction hid. Default on: it costs the
    /// model nothing until it calls it, and it makes every checkpoint an
    /// index instead of a loss.
    pub recall: bool,
    /// Tokens one recall answer holds at most before it is paged.
    pub recall_page_tokens: usize,
    /// Take secrets (API keys, tokens, private keys, passwords in
    /// addresses) out of everything compaction sends or writes: summarizer
    /// and remote requests, checkpoints, handoff documents, frames,
    /// reports. Default on; the log keeps the originals either way. See
    /// docs/redaction.md.
    pub redact: bool,
    /// More secrets to redact, as regular expressions (each match becomes
    /// `[redacted: custom]`); checked when the settings load.
    pub redact_patterns: Vec<String>,
    /// Let `recall` answer with the logged originals instead of redacted
    /// text. Default off: recall reads back into the model's context,
    /// and a secret the checkpoint dropped should not come back that way
    /// unless the user allows it.
    pub recall_originals: bool,
    /// Offer the model the `compact_context` tool, so it can ask for a
    /// compaction at the end of its turn. Default off: a tool's schema is
    /// sent with every request, and most hosts leave the timing to
    /// Maintenance.
    pub model_compaction: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            enabled: true,
            method_order: DEFAULT_METHOD_ORDER.iter().map(|m| m.to_string()).collect(),
            threshold: None,
            reserve: None,
            keep_recent_tokens: None,
            target_percent: DEFAULT_TARGET_PERCENT,
            min_reclaim_percent: DEFAULT_MIN_RECLAIM_PERCENT,
            mid_turn: true,
            idle_minutes: None,
            auto_continue: None,
            speculative_percent: None,
            breaker_failures: DEFAULT_BREAKER_FAILURES,
            branch_summaries: true,
            promotion_model: None,
            count_with_endpoint: true,
            prune: PruneConfig::default(),
            mask_keep: abridge_prune::DEFAULT_MASK_KEEP,
            shake: None,
            trim: TrimConfig::default(),
            recall: true,
            recall_page_tokens: crate::recall::DEFAULT_PAGE_TOKENS,
            redact: true,
            redact_patterns: Vec::new(),
            recall_originals: false,
            model_compaction: false,
        }
    }
}

/// A settings file or value that cannot work.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    /// The file could not be read.
    #[error("{path}: cannot read the settings file: {reason}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
    /// The text does not parse, or names an unknown key or a bad value.
    #[error("{origin}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Parse {
        /// The file, or `settings` for text without one.
        origin: String,
        /// The 1-based line, when known.
        line: Option<usize>,
        /// What was wrong, naming the key.
        message: String,
    },
    /// Two settings contradict each other, or one cannot work with the
    /// window.
    #[error("{origin}{}: {key}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
    Invalid {
        /// The file, or `settings`.
        origin: String,
        /// The line of the key, when it came from a file.
        line: Option<usize>,
        /// The key at fault.
        key: &'static str,
        /// Why it cannot work.
        message: String,
    },
}

/// The figures one session works under, resolved from settings and the
/// model's window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// The model's context window.
    pub window: u64,
    /// Compact above this.
    pub threshold: u64,
    /// Kept free for the reply.
    pub reserve: u64,
    /// Newest tokens kept verbatim.
    pub keep: u64,
    /// A pass must end at or below this.
    pub target: u64,
    /// The least one method's landing must reclaim.
    pub min_reclaim: u64,
}

impl Settings {
    /// The settings file beside a session: `abridge.toml` in its directory.
    pub fn beside_path(session_path: &Path) -> PathBuf {
        session_path
            .parent()
            .unwrap_or(Path::new("."))
            .join("abridge.toml")
    }

    /// Checks what can be checked without a window.
    fn validate_fields(&self) -> Result<(), Unlocated> {
        if !(1..=100).contains(&self.target_percent) {
            return Err(Unlocated {
                key: "target_percent",
                message: format!("{} must be 1 to 100", self.target_percent),
            });
        }
        if self.min_reclaim_percent > 50 {
            return Err(Unlocated {
                key: "min_reclaim_percent",
                message: format!(
                    "{} must be 0 to 50 (percent of the threshold a landing must reclaim)",
                    self.min_reclaim_percent
                ),
            });
        }
        if let Some(percent) = self.speculative_percent
            && !(1..=50).contains(&percent)
        {
            return Err(Unlocated {
                key: "speculative_percent",
                message: format!(
                    "{percent} must be 1 to 50 (percent of the threshold below it); leave it out to turn speculation off"
                ),
            });
        }
        if self.mask_keep == 0 {
            return Err(Unlocated {
                key: "mask_keep",
                message: "must be at least 1: the newest tool result is what the model works from"
                    .to_string(),
            });
        }
        if self.breaker_failures == 0 {
            return Err(Unlocated {
                key: "breaker_failures",
                message: "must be at least 1".to_string(),
            });
        }
        if self.idle_minutes == Some(0) {
            return Err(Unlocated {
                key: "idle_minutes",
                message: "must be at least 1; leave it out to turn idle compaction off".to_string(),
            });
        }
        self.redactor_unlocated()?;
        if let (Some(Threshold::Tokens(threshold)), Some(keep)) =
            (self.threshold, self.keep_recent_tokens)
            && keep >= threshold
        {
            return Err(Unlocated {
                key: "keep_recent_tokens",
                message: format!("{keep} must be below the threshold of {threshold} tokens"),
            });
        }
        Ok(())
    }

    /// The figures for a model with `window` tokens.
    ///
    /// # Errors
    /// [`SettingsError::Invalid`] naming the key: a window under
    /// [`MIN_WINDOW`], a reserve
    /// at or above the window, a threshold outside the window, a retention
    /// budget at or above the threshold.
    pub fn limits(&self, window: u64) -> Result<Limits, SettingsError> {
        self.limits_unlocated(window)
            .map_err(|e| e.into_error("settings", None))
    }

    fn limits_unlocated(&self, window: u64) -> Result<Limits, Unlocated> {
        if window < MIN_WINDOW {
            return Err(Unlocated {
                key: "window",
                message: format!(
                    "{window} tokens is below the smallest window abridge compacts for, {MIN_WINDOW} tokens; set the model's window in tokens"
                ),
            });
        }
        let percent_reserve = window * DEFAULT_RESERVE_PERCENT / 100;
        let reserve = match self.reserve {
            Some(reserve) if reserve >= window => {
                return Err(Unlocated {
                    key: "reserve",
                    message: format!(
                        "{reserve} leaves nothing of the {window}-token window; use a smaller reserve"
                    ),
                });
            }
            Some(reserve) => reserve,
            None => {
                let reserve = percent_reserve.max(MIN_DEFAULT_RESERVE);
                if reserve >= window
                    || window - reserve < DEFAULT_KEEP_RECENT_TOKENS.min(window / 4)
                {
                    percent_reserve
                } else {
                    reserve
                }
            }
        };
        let threshold = match self.threshold {
            Some(Threshold::Tokens(tokens)) => tokens,
            Some(Threshold::Percent(Percent(p))) => (window as f64 * p / 100.0).floor() as u64,
            None => window - reserve,
        };
        if threshold == 0 || threshold > window {
            return Err(Unlocated {
                key: "threshold",
                message: format!(
                    "{threshold} is outside the {window}-token window; use 1..={window}"
                ),
            });
        }
        let keep = self
            .keep_recent_tokens
            .unwrap_or_else(|| DEFAULT_KEEP_RECENT_TOKENS.min(threshold / 2));
        if keep >= threshold {
            return Err(Unlocated {
                key: "keep_recent_tokens",
                message: format!(
                    "{keep} must be below the compaction threshold of {threshold} tokens (window {window})"
                ),
            });
        }
        Ok(Limits {
            window,
            threshold,
            reserve,
            keep,
            target: threshold * self.target_percent / 100,
            min_reclaim: threshold * self.min_reclaim_percent / 100,
        })
    }

    /// Checks the settings against a window, locating a bad key in `text`
    /// (the file they came from).
    ///
    /// # Errors
    /// As [`limits`](Self::limits), with the file's line.
    pub fn limits_in(
        &self,
        window: u64,
        text: &str,
        origin: &str,
    ) -> Result<Limits, SettingsError> {
        self.limits_unlocated(window)
            .map_err(|e| e.locate(text, origin))
    }
}

/// A validation failure before its line is known.
#[derive(Debug)]
struct Unlocated {
    key: &'static str,
    message: String,
}

impl Unlocated {
    fn locate(self, text: &str, origin: &str) -> SettingsError {
        let line = line_of_key(text, self.key);
        self.into_error(origin, line)
    }

    fn into_error(self, origin: &str, line: Option<usize>) -> SettingsError {
        SettingsError::Invalid {
            origin: origin.to_string(),
            line,
            key: self.key,
            message: self.message,
        }
    }
}

/// The 1-based line where `key` is set, in TOML (`key =`) or JSON
/// (`"key":`).
fn line_of_key(text: &str, key: &str) -> Option<usize> {
    text.lines()
        .position(|line| {
            let line = line.trim_start();
            let rest = line
                .strip_prefix(key)
                .or_else(|| line.strip_prefix(&format!("\"{key}\"")));
            rest.is_some_and(|r| {
                let r = r.trim_start();
                r.starts_with('=') || r.starts_with(':')
            })
        })
        .map(|i| i + 1)
}

mod load;
mod redaction;
mod threshold;

pub use threshold::Percent;
pub use threshold::Threshold;
#[cfg(test)]
mod tests;
