//! What to keep and how to count: the [`Policy`] every plan is made under.

use std::sync::Arc;

use abridge_meter::EstimateCounter;
use abridge_meter::TokenCounter;
use abridge_session::Session;

/// How many of the newest tokens a compaction keeps verbatim by default.
pub const DEFAULT_KEEP_RECENT_TOKENS: u64 = 20_000;

/// What to keep and how to count.
#[derive(Debug, Clone)]
pub struct Policy {
    /// Newest tokens kept verbatim (whole units). Default
    /// [`DEFAULT_KEEP_RECENT_TOKENS`]. Zero keeps only the newest unit.
    pub keep_recent_tokens: u64,
    /// Reported/estimated ratio to scale `keep_recent_tokens` by; `None`
    /// asks the counter.
    pub reported_ratio: Option<f64>,
    /// The one counter for trigger, walk, shrink check and success check.
    pub counter: Arc<dyn TokenCounter>,
    /// What the user asked the checkpoint to focus on.
    pub instructions: Option<String>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy::new(Arc::new(EstimateCounter::new()))
    }
}

impl Policy {
    /// Defaults, counting with `counter`.
    pub fn new(counter: Arc<dyn TokenCounter>) -> Self {
        Policy {
            keep_recent_tokens: DEFAULT_KEEP_RECENT_TOKENS,
            reported_ratio: None,
            counter,
            instructions: None,
        }
    }

    /// Sets `keep_recent_tokens`.
    pub fn with_keep_recent_tokens(mut self, tokens: u64) -> Self {
        self.keep_recent_tokens = tokens;
        self
    }

    /// Sets the focus instructions.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// `keep_recent_tokens` scaled down by the reported/estimated ratio when
    /// the provider counts more than we estimate (so the kept part really
    /// costs what was asked); never scaled up.
    pub fn effective_keep(&self, session: &Session) -> u64 {
        let ratio = self
            .reported_ratio
            .unwrap_or_else(|| self.counter.reported_ratio(session));
        scale_keep(self.keep_recent_tokens, ratio)
    }
}

/// `keep / ratio` when `ratio > 1` (and finite), else `keep`.
pub(crate) fn scale_keep(keep: u64, ratio: f64) -> u64 {
    if ratio.is_finite() && ratio > 1.0 {
        (keep as f64 / ratio).floor() as u64
    } else {
        keep
    }
}
