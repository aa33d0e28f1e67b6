//! The breaker: the one owner of "this keeps failing, stop trying".
//!
//! It counts two things under the one `breaker_failures` setting:
//!
//! - **Failed automatic passes in a row.** At the setting, automatic
//!   upkeep stops until a pass succeeds or a manual run (overflow and a
//!   cut reply still run: they are recovery).
//! - **Failed background runs (speculations) of each model-backed method
//!   in a row.** At the setting, no speculation of that method starts.
//!   These are counted per method and not as failed passes: a pass that
//!   finds the summary failed lands its model-free methods and succeeds,
//!   which would reset a pass count at once, and a broken summarizer must
//!   not stop `digest` either. A method's count is cleared when it lands
//!   (live or committed from a speculation) or on a manual run.
//!
//! A method's breaker has a cool-down counted in the breaker's own unit,
//! passes that ran (no clock): after `breaker_failures` passes beyond the
//! one that found the last failure, one trial speculation may start; each
//! further failure doubles the wait (up to 16 times the setting), so a
//! summarizer that stays broken costs a call every few compactions, not
//! one per reply. The pass breaker needs no cool-down: recovery passes
//! run while it is open, and their success closes it; a method that runs
//! only in the background has no such way back but a trial.
//!
//! Only background failures are counted per method: a live failure
//! inside a pass already falls through to the next method and counts
//! through the pass's status.

use std::collections::HashMap;

use abridge_compact::Trigger;

use crate::pass::Pass;
use crate::pass::PassStatus;

/// The failure counts of one Maintenance (shared by its clones).
#[derive(Debug, Default)]
pub(super) struct Breaker {
    /// Failed automatic passes in a row.
    pub(super) passes: u32,
    /// Model-backed methods whose background runs failed, by name.
    methods: HashMap<String, Background>,
}

/// One method's failed background runs.
#[derive(Debug, Default)]
struct Background {
    /// Failed speculations in a row.
    failures: u32,
    /// Passes that ran since the last failure, counting the one that
    /// found it (a failed speculation is found by the pass that reaches
    /// its method).
    waited: u32,
}

/// Passes a method whose breaker is open waits before a trial: the
/// setting, doubled for each failure past it, at most 16 times it.
fn cool_down(failures: u32, threshold: u32) -> u32 {
    threshold.saturating_mul(1 << failures.saturating_sub(threshold).min(4))
}

impl Breaker {
    /// Records a failed speculation of `method`: its failures in a row.
    pub(super) fn speculation_failed(&mut self, method: &str) -> u32 {
        let entry = self.methods.entry(method.to_string()).or_default();
        entry.failures += 1;
        entry.waited = 0;
        entry.failures
    }

    /// `method` landed: its failures are forgotten.
    pub(super) fn method_landed(&mut self, method: &str) {
        self.methods.remove(method);
    }

    /// Whether `method`'s breaker is open at `threshold` failures: no
    /// speculation of it starts until its cool-down has passed.
    pub(super) fn method_open(&self, method: &str, threshold: u32) -> bool {
        self.methods
            .get(method)
            // `waited` counts the pass that found the failure too.
            .is_some_and(|b| {
                b.failures >= threshold && b.waited <= cool_down(b.failures, threshold)
            })
    }

    /// Counts a pass that ran: every method waiting for a trial is one
    /// pass nearer; a manual run starts every count again, a success the
    /// pass count. True when this pass opened the pass breaker.
    pub(super) fn pass_ended(&mut self, pass: &Pass, threshold: u32) -> bool {
        for background in self.methods.values_mut() {
            background.waited = background.waited.saturating_add(1);
        }
        if pass.trigger == Trigger::Manual {
            self.passes = 0;
            self.methods.clear();
            false
        } else if pass.status == PassStatus::Succeeded {
            self.passes = 0;
            false
        } else if matches!(pass.status, PassStatus::Failed | PassStatus::Insufficient) {
            self.passes += 1;
            self.passes == threshold
        } else {
            false
        }
    }
}
