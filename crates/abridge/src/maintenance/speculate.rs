//! The speculation steps of a pass: starting one inside the band, taking
//! one when the walk reaches its method, dropping one before a manual pass
//! (the mechanism itself is in [`crate::speculation`]).

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::Ordering;

use abridge_compact::CompactionMethod;
use abridge_compact::Outcome;
use abridge_compact::Policy;
use abridge_compact::Trigger;
use abridge_compact::host::CompactError;
use abridge_compact::host::SharedSession;
use abridge_compact::host::Target;
use abridge_compact::host::attempt;
use abridge_compact::host::lock_session;
use abridge_compact::method::MethodError;
use tracing::Instrument;

use super::Maintenance;
use crate::pass::MaintenanceEvent;
use crate::speculation::Finished;
use crate::speculation::Speculation;

impl Maintenance {
    /// Runs the model-backed (speculated) methods only in the background:
    /// a pass commits a finished speculation of theirs and never calls
    /// their model on the caller's path. Where none is ready (still
    /// running, not started, or no longer fitting the history) the method
    /// is passed over as unavailable and the pass goes on to the next one,
    /// so the model-free methods land instead. For a host that must never
    /// hold its caller for a summary (the proxy, whose caller is an agent
    /// waiting for its reply); it starts speculations itself
    /// ([`speculate`](Self::speculate)) and sets `speculative_percent`.
    pub fn with_background_models(self, on: bool) -> Self {
        self.state.background_models.store(on, Ordering::Release);
        self
    }

    /// Starts a speculation now when the context is inside the
    /// speculative band or above the threshold, no pass is running, none
    /// is held, and a model-backed method is ready; a pass starts one only
    /// below the threshold, where it has nothing else to do. Returns
    /// whether a speculation is held afterwards.
    pub fn speculate(&self, session: &SharedSession) -> bool {
        // Measuring costs a walk of the surface: not for a session with
        // nothing to speculate.
        if !self.methods.iter().any(|m| m.capabilities().speculated()) {
            return false;
        }
        let tokens = self.policy.counter.context_tokens(&lock_session(session));
        self.maybe_speculate(session, tokens);
        self.state.speculation.occupied()
    }

    /// Whether a speculation is held and still running: a pass that
    /// reached its method now would wait for it (or, with
    /// [`with_background_models`](Self::with_background_models), pass it
    /// over).
    pub fn speculation_running(&self) -> bool {
        self.state.speculation.occupied() && !self.state.speculation.ready()
    }

    /// What a pass gets instead of a live call of a model-backed method
    /// when models run only in the background.
    fn background_only(
        &self,
        method: &Arc<dyn CompactionMethod>,
        reason: &str,
    ) -> Option<Result<Outcome, CompactError>> {
        if !self.state.background_models.load(Ordering::Acquire)
            || !method.capabilities().speculated()
        {
            return None;
        }
        Some(Err(CompactError::Method(MethodError::Unavailable {
            method: method.name().to_string(),
            reason: format!("its model runs only in the background, and {reason}"),
        })))
    }

    /// Drops the held speculation; its method's name when there was one.
    pub(super) fn drop_speculation(&self) -> Option<String> {
        self.state
            .speculation
            .take_for_any()
            .map(|s| s.method.clone())
    }

    /// Starts a speculation when `tokens` is inside the band, nothing is
    /// running or held, and a model-backed method is ready.
    pub(super) fn maybe_speculate(&self, session: &SharedSession, tokens: u64) {
        let sizing = *self.sizing();
        let Some(band) = sizing.speculative_band else {
            return;
        };
        if !self.enabled
            || tokens <= sizing.limits.threshold.saturating_sub(band)
            || self.breaker_open()
            || self.state.running.load(Ordering::Acquire)
            || self.state.speculation.occupied()
        {
            return;
        }
        // A method whose background runs keep failing is left alone
        // until its breaker's cool-down lets one trial through.
        let Some(method) = self.methods.iter().find(|m| {
            m.capabilities().speculated()
                && matches!(m.available(), abridge_compact::Availability::Ready)
                && !self.breaker().method_open(m.name(), self.breaker_failures)
        }) else {
            return;
        };
        let plan = {
            let session = lock_session(session);
            abridge_compact::host::plan_for(&session, &self.policy_now(), Trigger::Threshold)
        };
        let Some(plan) = plan else {
            return;
        };
        match Speculation::start(Arc::clone(method), plan, Arc::clone(&self.hooks)) {
            Ok(speculation) => {
                self.emit(&MaintenanceEvent::SpeculationStarted {
                    method: speculation.method.clone(),
                    tokens,
                });
                self.state.speculation.put(speculation);
            }
            // Said once: the host learns its executor turns speculation
            // off without a line on every turn in the band.
            Err(reason) => {
                if !self
                    .state
                    .speculation_unavailable_reported
                    .swap(true, Ordering::AcqRel)
                {
                    tracing::warn!(method = %method.name(), reason, "speculative compaction is off");
                    self.emit(&MaintenanceEvent::SpeculationUnavailable {
                        method: method.name().to_string(),
                        reason: reason.to_string(),
                    });
                }
            }
        }
    }

    /// Counts a failed speculation of `method` against its breaker and
    /// says so, as a pass says a failed attempt.
    fn speculation_failed(&self, method: &str, error: &MethodError) {
        let failures = self.breaker().speculation_failed(method);
        let breaker_open = failures >= self.breaker_failures;
        tracing::warn!(method, failures, breaker_open, %error, "a background summary failed");
        self.emit(&MaintenanceEvent::SpeculationFailed {
            method: method.to_string(),
            message: error.to_string(),
            failures,
            breaker_open,
        });
    }

    /// Commits the held speculation when it was written by `method` and
    /// still fits the session: `None` when there is none to use (the
    /// caller runs the method live), else the attempt's result (with
    /// models in the background, an unavailable method instead of `None`
    /// for a model-backed one).
    pub(super) async fn commit_speculation(
        &self,
        session: &SharedSession,
        method: &Arc<dyn CompactionMethod>,
        policy: &Policy,
    ) -> Option<Result<Outcome, CompactError>> {
        let Some(mut speculation) = self.state.speculation.take_for(method.name()) else {
            return self.background_only(method, "no summary of its is ready yet");
        };
        if self.state.background_models.load(Ordering::Acquire) && !speculation.is_finished() {
            // Not waited for: it lands on a later pass.
            self.state.speculation.put(speculation);
            return self.background_only(method, "its summary is still being written");
        }
        let name = speculation.method.clone();
        let span = speculation.span;
        let dropped = |reason: String| {
            self.emit(&MaintenanceEvent::SpeculationDropped {
                method: name.clone(),
                reason,
            });
        };
        let changed = "the history it summarized changed";
        if !speculation.still_fits(&lock_session(session)) {
            dropped(changed.to_string());
            return self.background_only(method, changed);
        }
        let output = match speculation.output().await {
            Ok(output) => output,
            Err(error) => {
                // A cancel (a hook's, or the task's) says nothing about
                // the model; every other error is a failed run.
                if !matches!(error, MethodError::Cancelled { .. }) {
                    self.speculation_failed(&name, &error);
                }
                dropped(format!("it failed: {error}"));
                return self.background_only(method, "its summary failed");
            }
        };
        // The session may have moved while the task finished.
        if !speculation.still_fits(&lock_session(session)) {
            dropped(changed.to_string());
            return self.background_only(method, changed);
        }
        let finished = Finished {
            method: Arc::clone(method),
            output: Mutex::new(Some(output)),
        };
        let result = attempt(
            session,
            &finished,
            policy,
            Target::Region(span),
            self.hooks.as_ref(),
        )
        .instrument(tracing::info_span!("attempt", method = %name, speculative = true))
        .await;
        if result.is_ok() {
            self.breaker().method_landed(&name);
            self.emit(&MaintenanceEvent::SpeculationCommitted { method: name });
        }
        Some(result)
    }
}
