//! `Maintenance`: the one state machine that decides when to compact and
//! with what, for every trigger.
//!
//! A pass walks the method order. Each attempt plans afresh on the current
//! surface (so a later method works on what an earlier one left), checks
//! the method's availability, runs the hooks and is guarded against drop
//! (see [`abridge_compact::host::attempt`]). A landed attempt that leaves the
//! context above the pass's goal is kept, and the next method runs on the
//! result. The pass succeeds when the context is at or below the goal:
//! `target_percent` of the threshold, or, after an overflow or a length
//! stop, the window minus the reserve. Failed automatic passes are counted;
//! `breaker_failures` of them in a row stop automatic maintenance until a
//! success or a manual run, so a session that cannot be reduced never
//! loops. Failed speculations are counted by the same breaker, per method
//! (see `breaker.rs`): a model whose background runs keep failing is not
//! started again on every turn.
//!
//! | trigger | runs when | skipped methods |
//! |---|---|---|
//! | threshold, mid-turn | context above the threshold | none |
//! | idle | context above half the threshold | none |
//! | overflow | always; also a threshold or mid-turn call with the breaker open once the context leaves the reply less than half its reserve | `handoff` (it would resend the input that overflowed) |
//! | incomplete output | always | none |
//! | manual | always; the breaker is reset | none |
//!
//! Before any method, a pass whose fixed part (the overhead beyond the log
//! and the leading system messages) is at or above the line it must get
//! under (the threshold; after an overflow or a length stop, the window
//! minus the reserve) runs nothing and returns
//! [`PassStatus::FixedAboveThreshold`], said once by
//! [`MaintenanceEvent::FixedAboveThreshold`]. Every attempt gets the
//! window as its ceiling, and the policy's floor (`Limits::min_reclaim`)
//! where a landing breaks a warm prompt cache: threshold, mid-turn and
//! manual passes. An overflow or a length stop has no floor (the request
//! cannot be sent as it is, so any landing that gets it under is worth
//! it), nor has idle (after minutes without a turn the provider's cache
//! has gone cold, so there is no break to pay for).
//!
//! Below the threshold, inside the speculative band, a threshold or
//! mid-turn call starts the model-backed method early (see
//! [`speculation`](crate::speculation)); the pass that later reaches that
//! method commits its output when the history it summarized is unchanged.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;

use abridge_compact::CompactionMethod;
use abridge_compact::Policy;
use abridge_compact::Trigger;
use abridge_compact::host::CompactError;
use abridge_compact::host::CompactionHooks;
use abridge_compact::host::NoHooks;
use abridge_compact::host::SharedSession;
use abridge_compact::host::Target;
use abridge_compact::host::attempt;
use abridge_compact::host::fixed_tokens;
use abridge_compact::host::lock_session;
use tracing::Instrument;

use crate::pass::MaintenanceEvent;
use crate::pass::Observer;
use crate::pass::Pass;
use crate::pass::PassStatus;
use crate::settings::Limits;
use abridge_compact::ErrorKind;
use abridge_compact::host::MethodFailure;

mod breaker;
mod skip;
mod speculate;
use crate::speculation::Slot;

/// The state machine for one session. Build it with
/// [`Maintenance::new`]; the [`Harness`](crate::Harness) owns one.
#[derive(Clone)]
pub struct Maintenance {
    methods: Vec<Arc<dyn CompactionMethod>>,
    not_configured: Vec<MethodFailure>,
    policy: Policy,
    enabled: bool,
    breaker_failures: u32,
    hooks: Arc<dyn CompactionHooks>,
    observer: Option<Observer>,
    state: Arc<State>,
}

/// The figures a pass works under. Kept in the shared state, not fixed at
/// build: a promotion to a larger window replaces them, and every later
/// pass (and speculation) uses the new ones.
#[derive(Debug, Clone, Copy)]
struct Sizing {
    limits: Limits,
    /// Tokens below the threshold where speculation starts; `None`: off.
    speculative_band: Option<u64>,
}

impl std::fmt::Debug for Maintenance {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Maintenance")
            .field(
                "methods",
                &self.methods.iter().map(|m| m.name()).collect::<Vec<_>>(),
            )
            .field("limits", &self.limits())
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

struct State {
    running: AtomicBool,
    /// The fixed part was found above the line and said so; cleared when
    /// it falls below, so a later rise is reported again.
    fixed_reported: AtomicBool,
    /// A speculation could not start and said so; once per Maintenance.
    speculation_unavailable_reported: AtomicBool,
    breaker: Mutex<breaker::Breaker>,
    speculation: Slot,
    sizing: Mutex<Sizing>,
    /// Model-backed methods only through speculation (`speculate.rs`).
    background_models: AtomicBool,
}

/// Clears the running flag when a pass ends, however it ends.
struct Running<'a>(&'a AtomicBool);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Maintenance {
    /// Maintenance over `methods` (in order) for a session measured by
    /// `policy`'s counter, under `limits`.
    pub fn new(methods: Vec<Arc<dyn CompactionMethod>>, policy: Policy, limits: Limits) -> Self {
        Maintenance {
            methods,
            not_configured: Vec::new(),
            policy,
            enabled: true,
            breaker_failures: crate::settings::DEFAULT_BREAKER_FAILURES,
            hooks: Arc::new(NoHooks),
            observer: None,
            state: Arc::new(State {
                running: AtomicBool::new(false),
                fixed_reported: AtomicBool::new(false),
                speculation_unavailable_reported: AtomicBool::new(false),
                breaker: Mutex::new(breaker::Breaker::default()),
                speculation: Slot::default(),
                background_models: AtomicBool::new(false),
                sizing: Mutex::new(Sizing {
                    limits,
                    speculative_band: None,
                }),
            }),
        }
    }

    /// Methods named in the order that could not be built, each with why;
    /// reported as failures of kind `not_configured` in every pass.
    pub fn with_not_configured(mut self, skipped: Vec<MethodFailure>) -> Self {
        self.not_configured = skipped;
        self
    }

    /// Turns automatic triggers on or off (manual runs always work).
    pub fn with_enabled(mut self, enabled: bool) -> Self {
        self.enabled = enabled;
        self
    }

    /// Failed automatic passes in a row that open the breaker (at least 1).
    pub fn with_breaker(mut self, failures: u32) -> Self {
        self.breaker_failures = failures.max(1);
        self
    }

    /// Host hooks, run around every attempt.
    pub fn with_hooks(mut self, hooks: Arc<dyn CompactionHooks>) -> Self {
        self.hooks = hooks;
        self
    }

    /// Starts the model-backed method early when the context is within
    /// `band` tokens below the threshold (needs a tokio runtime).
    pub fn with_speculation(self, band: u64) -> Self {
        self.sizing().speculative_band = (band > 0).then_some(band);
        self
    }

    /// Replaces the figures every later pass works under, and the
    /// speculative band (`0`: off): what a promotion to a model with
    /// another window calls. A speculation already held was planned under
    /// the old figures and is dropped.
    pub fn resize(&self, limits: Limits, speculative_band: u64) {
        *self.sizing() = Sizing {
            limits,
            speculative_band: (speculative_band > 0).then_some(speculative_band),
        };
        if let Some(method) = self.drop_speculation() {
            self.emit(&MaintenanceEvent::SpeculationDropped {
                method,
                reason: "the limits changed".to_string(),
            });
        }
    }

    fn sizing(&self) -> std::sync::MutexGuard<'_, Sizing> {
        self.state
            .sizing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a speculative checkpoint is held and finished: the next
    /// pass that reaches its method commits it without a model call.
    pub fn speculation_ready(&self) -> bool {
        self.state.speculation.ready()
    }

    /// Receives every step.
    pub fn with_observer(mut self, observer: Observer) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The figures this session works under.
    pub fn limits(&self) -> Limits {
        self.sizing().limits
    }

    /// The counting policy with the retention budget of the current
    /// limits: what a pass starts from.
    fn policy_now(&self) -> Policy {
        let mut policy = self.policy.clone();
        let limits = self.limits();
        policy.keep_recent_tokens = limits.keep;
        policy.min_reclaim = limits.min_reclaim;
        policy.ceiling = Some(limits.window);
        policy
    }

    /// The methods, in order.
    pub fn methods(&self) -> &[Arc<dyn CompactionMethod>] {
        &self.methods
    }

    /// Methods left out because they could not be built, with why.
    pub fn not_configured(&self) -> &[MethodFailure] {
        &self.not_configured
    }

    /// Failed automatic passes in a row.
    pub fn consecutive_failures(&self) -> u32 {
        self.breaker().passes
    }

    /// True when automatic triggers are stopped until a success or a
    /// manual run.
    pub fn breaker_open(&self) -> bool {
        self.consecutive_failures() >= self.breaker_failures
    }

    fn breaker(&self) -> std::sync::MutexGuard<'_, breaker::Breaker> {
        self.state
            .breaker
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn emit(&self, event: &MaintenanceEvent) {
        tracing::info!(?event, "maintenance");
        if let Some(observer) = &self.observer {
            observer(event);
        }
    }

    /// The figure a pass for `trigger` must reach.
    pub fn goal(&self, trigger: Trigger) -> u64 {
        let limits = self.limits();
        match trigger {
            Trigger::Overflow | Trigger::IncompleteOutput => limits.window - limits.reserve,
            _ => limits.target,
        }
    }

    /// The line a pass for `trigger` must bring the context under for it
    /// to be worth running: the window minus the reserve when the request
    /// cannot be sent as it is (overflow, a cut reply), else the
    /// threshold.
    fn limit(&self, trigger: Trigger) -> u64 {
        match trigger {
            Trigger::Overflow | Trigger::IncompleteOutput => {
                let limits = self.limits();
                limits.window - limits.reserve
            }
            _ => self.limits().threshold,
        }
    }

    /// When the fixed part of the context alone is at or above the line
    /// for `trigger`, says so once and returns true: no method can help.
    fn fixed_above_limit(&self, session: &SharedSession, trigger: Trigger) -> bool {
        let fixed = fixed_tokens(&lock_session(session), self.policy.counter.as_ref());
        let limit = self.limit(trigger);
        if fixed < limit {
            self.state.fixed_reported.store(false, Ordering::Release);
            return false;
        }
        if !self.state.fixed_reported.swap(true, Ordering::AcqRel) {
            self.emit(&MaintenanceEvent::FixedAboveThreshold { fixed, limit });
        }
        true
    }

    /// Whether `trigger` calls for a pass at `tokens`.
    pub fn needed(&self, trigger: Trigger, tokens: u64) -> bool {
        let threshold = self.limits().threshold;
        match trigger {
            Trigger::Threshold | Trigger::MidTurn => tokens > threshold,
            Trigger::Idle => tokens > threshold / 2,
            Trigger::Overflow | Trigger::IncompleteOutput | Trigger::Manual => true,
        }
    }

    /// Runs one pass for `trigger` with the configured method order.
    ///
    /// # Errors
    /// Only when the session cannot be written
    /// ([`CompactError::Persistence`]); every other failure is in the
    /// returned [`Pass`].
    pub async fn run(
        &self,
        session: &SharedSession,
        trigger: Trigger,
    ) -> Result<Pass, CompactError> {
        self.run_with(session, trigger, &[], None).await
    }

    /// Runs one pass with the named methods (empty: the configured order)
    /// and focus instructions.
    ///
    /// # Errors
    /// As [`run`](Self::run); an unknown method name is a failure of kind
    /// `not_configured` in the pass.
    pub async fn run_with(
        &self,
        session: &SharedSession,
        trigger: Trigger,
        names: &[String],
        instructions: Option<String>,
    ) -> Result<Pass, CompactError> {
        let span = tracing::info_span!("maintenance", trigger = trigger.as_str());
        self.pass(session, trigger, names, instructions)
            .instrument(span)
            .await
    }

    async fn pass(
        &self,
        session: &SharedSession,
        trigger: Trigger,
        names: &[String],
        instructions: Option<String>,
    ) -> Result<Pass, CompactError> {
        let tokens = self.policy.counter.context_tokens(&lock_session(session));
        let trigger = self.unsendable_as_overflow(trigger, tokens);
        let goal = self.goal(trigger);
        let manual = trigger == Trigger::Manual;
        if !manual && !self.enabled {
            return Ok(Pass::idle(trigger, PassStatus::Disabled, tokens, goal));
        }
        if manual && let Some(method) = self.drop_speculation() {
            self.emit(&MaintenanceEvent::SpeculationDropped {
                method,
                reason: "a manual pass came first".to_string(),
            });
        }
        if !self.needed(trigger, tokens) {
            if matches!(trigger, Trigger::Threshold | Trigger::MidTurn) {
                self.maybe_speculate(session, tokens);
            }
            return Ok(Pass::idle(trigger, PassStatus::NotNeeded, tokens, goal));
        }
        if self.fixed_above_limit(session, trigger) {
            return Ok(Pass::idle(
                trigger,
                PassStatus::FixedAboveThreshold,
                tokens,
                goal,
            ));
        }
        // Overflow and a cut reply are recovery, not upkeep: the request
        // cannot be sent as it is, so they run even with the breaker open
        // (each is one pass per failed request, so they cannot loop).
        let recovery = matches!(trigger, Trigger::Overflow | Trigger::IncompleteOutput);
        if !manual && !recovery && self.breaker_open() {
            return Ok(Pass::idle(trigger, PassStatus::BreakerOpen, tokens, goal));
        }
        if self.state.running.swap(true, Ordering::AcqRel) {
            return Ok(Pass::idle(trigger, PassStatus::Busy, tokens, goal));
        }
        let _running = Running(&self.state.running);
        self.emit(&MaintenanceEvent::PassStarted {
            trigger,
            tokens,
            goal,
        });
        let mut policy = self.policy_now();
        if instructions.is_some() {
            policy.instructions = instructions;
        }
        policy.goal = Some(goal);
        if !pays_for_a_cache_break(trigger) {
            policy.min_reclaim = 0;
        }
        let (methods, mut failures) = self.pick(names);
        for failure in &failures {
            self.emit(&MaintenanceEvent::AttemptFailed(failure.clone()));
        }
        let mut pass = Pass {
            trigger,
            status: PassStatus::Failed,
            tokens_before: tokens,
            tokens_after: tokens,
            goal,
            outcomes: Vec::new(),
            failures: Vec::new(),
        };
        for method in methods {
            let name = method.name().to_string();
            if let Some(skip) = skip::skipped_on(trigger, method.as_ref()) {
                failures.push(skip);
                continue;
            }
            self.emit(&MaintenanceEvent::AttemptStarted {
                method: name.clone(),
            });
            // After a landed attempt that was not enough, the next one
            // keeps less of the recent history: planned with the same
            // budget it would find only the new checkpoint to fold.
            let checkpoints = pass
                .outcomes
                .iter()
                .filter(|o| o.checkpoint_seq.is_some())
                .count();
            let mut attempt_policy = policy.clone();
            attempt_policy.keep_recent_tokens >>= checkpoints.min(16);
            let speculated = self
                .commit_speculation(session, &method, &attempt_policy)
                .await;
            let result = match speculated {
                Some(result) => result,
                None => {
                    attempt(
                        session,
                        method.as_ref(),
                        &attempt_policy,
                        Target::Trigger(trigger),
                        self.hooks.as_ref(),
                    )
                    .instrument(tracing::info_span!("attempt", method = %name))
                    .await
                }
            };
            match result {
                Ok(outcome) => {
                    self.breaker().method_landed(&name);
                    let now = self.policy.counter.context_tokens(&lock_session(session));
                    self.emit(&MaintenanceEvent::AttemptLanded {
                        method: name,
                        tokens_before: pass.tokens_after,
                        tokens_after: now,
                    });
                    pass.tokens_after = now;
                    pass.outcomes.push(outcome);
                    if now <= goal {
                        break;
                    }
                }
                Err(CompactError::Persistence(error)) => {
                    return Err(CompactError::Persistence(error));
                }
                Err(error) => {
                    let failure = MethodFailure::from_error(&name, &error);
                    self.emit(&MaintenanceEvent::AttemptFailed(failure.clone()));
                    failures.push(failure);
                    if matches!(error, CompactError::Busy { .. }) {
                        pass.failures = failures;
                        pass.status = PassStatus::Busy;
                        return Ok(self.end(pass));
                    }
                    if error.stops_fallthrough() {
                        break;
                    }
                }
            }
        }
        pass.failures = failures;
        pass.status = if pass.tokens_after <= goal && pass.landed() {
            PassStatus::Succeeded
        } else if pass.landed() {
            PassStatus::Insufficient
        } else {
            PassStatus::Failed
        };
        Ok(self.end(pass))
    }

    /// A threshold or mid-turn call with the breaker open, on a context
    /// that leaves the reply less than half its reserve, is recovery: the
    /// next request would be refused as too long or cut short, so it runs
    /// as an overflow pass (which the breaker does not stop) instead of
    /// letting the host send it. Between the threshold and that line the
    /// breaker still stops upkeep, so a session that cannot be reduced
    /// does not compact every turn.
    fn unsendable_as_overflow(&self, trigger: Trigger, tokens: u64) -> Trigger {
        let limits = self.limits();
        let line = limits.window.saturating_sub(limits.reserve / 2);
        let unsendable = tokens > line;
        if matches!(trigger, Trigger::Threshold | Trigger::MidTurn)
            && unsendable
            && self.enabled
            && self.breaker_open()
        {
            Trigger::Overflow
        } else {
            trigger
        }
    }

    /// Updates the breaker and reports the end of a pass.
    fn end(&self, pass: Pass) -> Pass {
        let opened = self.breaker().pass_ended(&pass, self.breaker_failures);
        self.emit(&MaintenanceEvent::PassEnded {
            trigger: pass.trigger,
            status: pass.status,
            tokens: pass.tokens_after,
        });
        if opened {
            self.emit(&MaintenanceEvent::BreakerOpened {
                failures: self.breaker_failures,
            });
        }
        pass
    }

    /// The methods to walk: the named ones in the given order, or the
    /// configured order; names that are not configured become failures.
    fn pick(&self, names: &[String]) -> (Vec<Arc<dyn CompactionMethod>>, Vec<MethodFailure>) {
        if names.is_empty() {
            return (self.methods.clone(), self.not_configured.clone());
        }
        let mut methods = Vec::new();
        let mut failures = Vec::new();
        for name in names {
            if let Some(method) = self.methods.iter().find(|m| m.name() == name) {
                methods.push(method.clone());
            } else if let Some(failure) = self.not_configured.iter().find(|f| &f.method == name) {
                failures.push(failure.clone());
            } else {
                failures.push(MethodFailure {
                    method: name.clone(),
                    kind: ErrorKind::NotConfigured,
                    message: format!(
                        "method {name} is not configured (configured: {})",
                        self.methods
                            .iter()
                            .map(|m| m.name().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            }
        }
        (methods, failures)
    }
}

/// Whether a landing for `trigger` must reclaim the floor: only where it
/// breaks a prompt cache that is warm and a request that could be sent
/// as it is (see the module docs).
fn pays_for_a_cache_break(trigger: Trigger) -> bool {
    match trigger {
        Trigger::Threshold | Trigger::MidTurn | Trigger::Manual => true,
        Trigger::Overflow | Trigger::IncompleteOutput | Trigger::Idle => false,
    }
}
