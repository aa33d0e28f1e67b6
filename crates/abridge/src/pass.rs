//! What a Maintenance pass reports: how it ended, what landed, what
//! failed (typed), and the events a UI follows while it runs.

use std::sync::Arc;

use abridge_compact::Outcome;
use abridge_compact::Trigger;
use abridge_compact::host::MethodFailure;
use serde::Serialize;

/// How a pass ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PassStatus {
    /// The trigger did not call for compaction (under the threshold).
    NotNeeded,
    /// Automatic maintenance is turned off in the settings.
    Disabled,
    /// The breaker is open after repeated failures; a manual run resets it.
    BreakerOpen,
    /// Another pass is running on this session.
    Busy,
    /// The context ended at or below the goal.
    Succeeded,
    /// Methods landed but the context is still above the goal (a result
    /// still over the window is always this: the goal is below it).
    Insufficient,
    /// Nothing landed.
    Failed,
    /// The fixed part of the context alone (the system prompt and tool
    /// definitions a usage report counts, and the leading system
    /// messages) is at or above the threshold: no compaction can bring
    /// the context under it, so none was tried. Reported once by
    /// [`MaintenanceEvent::FixedAboveThreshold`]; a larger window, or a
    /// smaller system prompt or tool set, is the remedy.
    FixedAboveThreshold,
}

/// What one pass did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pass {
    /// Why it ran.
    pub trigger: Trigger,
    /// How it ended.
    pub status: PassStatus,
    /// The figure to act on before the pass.
    pub tokens_before: u64,
    /// The same figure after.
    pub tokens_after: u64,
    /// The figure the pass had to reach.
    pub goal: u64,
    /// Every attempt that landed, in order.
    pub outcomes: Vec<Outcome>,
    /// Every method that failed or was skipped, in order.
    pub failures: Vec<MethodFailure>,
}

impl Pass {
    /// True when the surface changed.
    pub fn landed(&self) -> bool {
        !self.outcomes.is_empty()
    }

    /// A pass that did not run: the figure is unchanged.
    pub(crate) fn idle(trigger: Trigger, status: PassStatus, tokens: u64, goal: u64) -> Self {
        Pass {
            trigger,
            status,
            tokens_before: tokens,
            tokens_after: tokens,
            goal,
            outcomes: Vec::new(),
            failures: Vec::new(),
        }
    }
}

/// Every step of maintenance, for a UI to follow. Each is also a tracing
/// event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum MaintenanceEvent {
    /// A pass begins.
    PassStarted {
        /// Why.
        trigger: Trigger,
        /// The figure now.
        tokens: u64,
        /// The figure to reach.
        goal: u64,
    },
    /// A method is about to run.
    AttemptStarted {
        /// Its name.
        method: String,
    },
    /// A method landed.
    AttemptLanded {
        /// Its name.
        method: String,
        /// The figure before it.
        tokens_before: u64,
        /// The figure after it.
        tokens_after: u64,
    },
    /// A method failed or was skipped.
    AttemptFailed(MethodFailure),
    /// The pass ended.
    PassEnded {
        /// Why it ran.
        trigger: Trigger,
        /// How it ended.
        status: PassStatus,
        /// The figure after.
        tokens: u64,
    },
    /// A model-backed method started early on a snapshot.
    SpeculationStarted {
        /// The method.
        method: String,
        /// The figure when it started.
        tokens: u64,
    },
    /// A finished speculation was committed instead of a live call.
    SpeculationCommitted {
        /// The method that wrote it.
        method: String,
    },
    /// A speculation was thrown away.
    SpeculationDropped {
        /// The method that was writing it.
        method: String,
        /// Why: the history it summarized changed, it failed, or a manual
        /// pass came first.
        reason: String,
    },
    /// A speculation's method returned an error (the model call failed).
    /// Counted against that method's breaker: at `breaker_failures` in a
    /// row no speculation of it starts until its cool-down (passes that
    /// ran) lets one trial through.
    SpeculationFailed {
        /// The method that failed.
        method: String,
        /// Its error.
        message: String,
        /// Its failed speculations in a row.
        failures: u32,
        /// Whether its breaker is open now.
        breaker_open: bool,
    },
    /// A speculation was due but could not start: no tokio runtime on the
    /// thread that ran the pass, or abridge built without its `tokio`
    /// feature. The method then runs live when the threshold is crossed,
    /// as it would without speculation. Sent once per Maintenance.
    SpeculationUnavailable {
        /// The method that would have run early.
        method: String,
        /// Why it could not.
        reason: String,
    },
    /// The fixed part of the context alone is at or above the line a
    /// pass must get under: Maintenance stops trying until it falls
    /// below. Sent once, not on every pass it stops.
    FixedAboveThreshold {
        /// Tokens no compaction can reclaim: the overhead a usage report
        /// counts beyond the log, plus the leading system messages.
        fixed: u64,
        /// The line: the threshold, or after an overflow or a length stop
        /// the window minus the reserve.
        limit: u64,
    },
    /// Automatic maintenance stopped after repeated failures.
    BreakerOpened {
        /// Failed passes in a row.
        failures: u32,
    },
}

/// Receives every [`MaintenanceEvent`]. Must return quickly: it is called
/// inline.
pub type Observer = Arc<dyn Fn(&MaintenanceEvent) + Send + Sync>;
