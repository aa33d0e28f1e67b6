//! When to compact and how much to keep.

use abridge_compact::DEFAULT_KEEP_RECENT_TOKENS;
use abridge_compact::scale_keep;

use crate::error::BudgetError;

/// The smallest default reserve, in tokens: room for one large answer and
/// the summary call itself.
pub const MIN_DEFAULT_RESERVE: u64 = 16_384;
/// The default reserve as a share of the window, in percent.
pub const DEFAULT_RESERVE_PERCENT: u64 = 15;

/// A model window and how much of it to leave free.
///
/// The threshold is, in order of precedence: an explicit `threshold`; the
/// window minus an explicit `reserve`; the window minus the default
/// reserve, `max(15% of window, 16384)`. When that default would leave no
/// room for the retained tokens (`window - reserve < keep_recent_tokens`,
/// a small window), the reserve falls back to 15% of the window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// The model's context window.
    pub window: u64,
    /// Tokens to keep free; `None`: the default.
    pub reserve: Option<u64>,
    /// Compact above this many tokens; `None`: from the reserve.
    pub threshold: Option<u64>,
    /// Newest tokens kept verbatim. Default 20000.
    pub keep_recent_tokens: u64,
}

impl Budget {
    /// Defaults for `window`.
    pub fn new(window: u64) -> Self {
        Budget {
            window,
            reserve: None,
            threshold: None,
            keep_recent_tokens: DEFAULT_KEEP_RECENT_TOKENS,
        }
    }

    /// The compaction threshold.
    ///
    /// # Errors
    /// A zero window, an explicit reserve at least the window, an explicit
    /// threshold of zero or above the window.
    pub fn threshold(&self) -> Result<u64, BudgetError> {
        let window = self.window;
        if window == 0 {
            return Err(BudgetError::NoWindow);
        }
        if let Some(threshold) = self.threshold {
            if threshold == 0 || threshold > window {
                return Err(BudgetError::ThresholdOutOfRange { threshold, window });
            }
            return Ok(threshold);
        }
        if let Some(reserve) = self.reserve {
            if reserve >= window {
                return Err(BudgetError::ReserveTooLarge { reserve, window });
            }
            return Ok(window - reserve);
        }
        let percent = window * DEFAULT_RESERVE_PERCENT / 100;
        let reserve = percent.max(MIN_DEFAULT_RESERVE);
        if reserve >= window || window - reserve < self.keep_recent_tokens {
            return Ok(window - percent);
        }
        Ok(window - reserve)
    }

    /// `keep_recent_tokens` scaled down by the reported/estimated ratio.
    pub fn keep(&self, reported_ratio: f64) -> u64 {
        scale_keep(self.keep_recent_tokens, reported_ratio)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_reserve_is_15_percent_but_at_least_16384() {
        assert_eq!(Budget::new(200_000).threshold(), Ok(170_000));
        assert_eq!(Budget::new(128_000).threshold(), Ok(128_000 - 19_200));
        assert_eq!(Budget::new(64_000).threshold(), Ok(64_000 - 16_384));
    }

    #[test]
    fn defaulted_reserve_without_room_falls_back_to_15_percent() {
        // 32k window: 16384 reserve would leave 15616 < 20000 kept.
        assert_eq!(Budget::new(32_000).threshold(), Ok(32_000 - 4_800));
        assert_eq!(Budget::new(8_000).threshold(), Ok(8_000 - 1_200));
    }

    #[test]
    fn explicit_values_are_honoured_or_refused() {
        let mut budget = Budget::new(100_000);
        budget.reserve = Some(50_000);
        assert_eq!(budget.threshold(), Ok(50_000));
        budget.threshold = Some(90_000);
        assert_eq!(budget.threshold(), Ok(90_000));
        budget.threshold = Some(100_001);
        assert_eq!(
            budget.threshold().unwrap_err().to_string(),
            "threshold of 100001 tokens is outside the 100000-token window; use 1..=100000"
        );
        let mut budget = Budget::new(100_000);
        budget.reserve = Some(100_000);
        assert!(matches!(
            budget.threshold(),
            Err(BudgetError::ReserveTooLarge { .. })
        ));
        assert_eq!(Budget::new(0).threshold(), Err(BudgetError::NoWindow));
    }

    #[test]
    fn keep_scales_down_with_ratio() {
        assert_eq!(Budget::new(1).keep(1.25), 16_000);
        assert_eq!(Budget::new(1).keep(0.8), 20_000);
    }
}
