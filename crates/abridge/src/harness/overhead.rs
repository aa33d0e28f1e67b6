//! The overhead a harness's meter starts from, for a log that holds no
//! usage report to show it (a replay without reports, a host that knows
//! its system prompt's size before the first reply).

use super::HarnessBuilder;

impl HarnessBuilder {
    /// The tokens every request carries beyond the log (the system prompt
    /// and tool definitions): the meter adds them to its figure until a
    /// usage report in the log shows the overhead itself (see
    /// [`TokenMeter::with_fixed_overhead`](abridge_meter::TokenMeter::with_fixed_overhead)).
    pub fn fixed_overhead(mut self, tokens: u64) -> Self {
        self.fixed_overhead = Some(tokens);
        self
    }
}

impl super::Harness {
    /// The part of the context no compaction can reclaim: the overhead
    /// the meter carries beyond the log, plus the leading system
    /// messages (see [`fixed_tokens`](abridge_compact::host::fixed_tokens)).
    /// Maintenance stops trying when it alone is at or above the
    /// threshold ([`PassStatus::FixedAboveThreshold`](crate::PassStatus::FixedAboveThreshold)).
    pub fn fixed_tokens(&self) -> u64 {
        abridge_compact::host::fixed_tokens(
            &abridge_compact::host::lock_session(&self.session),
            self.counter.as_ref(),
        )
    }
}
