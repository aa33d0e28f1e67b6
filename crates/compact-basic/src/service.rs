//! `BasicService`: the methods of this crate (or any others) behind the
//! [`CompactService`] trait, with a plain fall-through.

use std::sync::Arc;

use abridge_compact::CompactError;
use abridge_compact::CompactRequest;
use abridge_compact::CompactService;
use abridge_compact::CompactionHooks;
use abridge_compact::CompactionMethod;
use abridge_compact::MethodContext;
use abridge_compact::NoHooks;
use abridge_compact::Outcome;
use abridge_compact::Policy;
use abridge_compact::SharedSession;
use abridge_compact::Span;
use abridge_compact::Trigger;
use abridge_compact::begin;
use abridge_compact::commit;
use abridge_compact::compact_shared;
use abridge_compact::lock_session;
use abridge_compact::plan_region;
use async_trait::async_trait;

use crate::budget::Budget;
use crate::error::BudgetError;

/// A compaction service over an ordered list of methods.
#[derive(Debug, Clone)]
pub struct BasicService {
    methods: Vec<Arc<dyn CompactionMethod>>,
    policy: Policy,
    threshold: u64,
    hooks: Arc<dyn CompactionHooks>,
    context: MethodContext,
}

impl BasicService {
    /// A service trying `methods` in order, compacting above `budget`'s
    /// threshold and keeping its `keep_recent_tokens`.
    ///
    /// # Errors
    /// When the budget has no valid threshold.
    pub fn new(
        methods: Vec<Arc<dyn CompactionMethod>>,
        policy: Policy,
        budget: Budget,
    ) -> Result<Self, BudgetError> {
        let threshold = budget.threshold()?;
        let mut policy = policy;
        policy.keep_recent_tokens = budget.keep_recent_tokens;
        Ok(BasicService {
            methods,
            policy,
            threshold,
            hooks: Arc::new(NoHooks),
            context: MethodContext {
                window: Some(budget.window),
                threshold: Some(threshold),
                ..MethodContext::default()
            },
        })
    }

    /// Sets the hooks.
    pub fn with_hooks(mut self, hooks: Arc<dyn CompactionHooks>) -> Self {
        self.hooks = hooks;
        self
    }

    /// The threshold in tokens.
    pub fn threshold(&self) -> u64 {
        self.threshold
    }

    fn context(&self, session: &SharedSession, trigger: Trigger) -> MethodContext {
        let mut context = self.context.clone();
        context.tokens = self.policy.counter.context_tokens(&lock_session(session));
        context.trigger = Some(trigger);
        context
    }

    fn pick(&self, names: &[String]) -> Result<Vec<Arc<dyn CompactionMethod>>, CompactError> {
        if names.is_empty() {
            return Ok(self.methods.clone());
        }
        names
            .iter()
            .map(|name| {
                self.methods
                    .iter()
                    .find(|m| m.name() == name)
                    .cloned()
                    .ok_or_else(|| CompactError::Unavailable {
                        method: name.clone(),
                        reason: format!(
                            "not configured (configured: {})",
                            self.methods
                                .iter()
                                .map(|m| m.name().to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    })
            })
            .collect()
    }
}

#[async_trait]
impl CompactService for BasicService {
    async fn compact_if_needed(
        &self,
        session: &SharedSession,
        trigger: Trigger,
    ) -> Result<Option<Outcome>, CompactError> {
        let context = self.context(session, trigger);
        let needed = match trigger {
            Trigger::Threshold | Trigger::MidTurn | Trigger::Idle => {
                context.tokens > self.threshold
            }
            Trigger::Overflow | Trigger::IncompleteOutput | Trigger::Manual => true,
        };
        if !needed {
            return Ok(None);
        }
        compact_shared(
            session,
            &self.methods,
            &self.policy,
            trigger,
            self.hooks.as_ref(),
            &context,
        )
        .await
        .map(Some)
    }

    async fn compact_now(
        &self,
        session: &SharedSession,
        request: CompactRequest,
    ) -> Result<Outcome, CompactError> {
        let methods = self.pick(&request.methods)?;
        let mut policy = self.policy.clone();
        if let Some(keep) = request.keep_recent_tokens {
            policy.keep_recent_tokens = keep;
        }
        if request.instructions.is_some() {
            policy.instructions = request.instructions.clone();
        }
        let context = self.context(session, request.trigger);
        compact_shared(
            session,
            &methods,
            &policy,
            request.trigger,
            self.hooks.as_ref(),
            &context,
        )
        .await
    }

    async fn compact_region(
        &self,
        session: &SharedSession,
        span: Span,
    ) -> Result<Outcome, CompactError> {
        let mut failures = Vec::new();
        for method in &self.methods {
            let name = method.name().to_string();
            let ticket = {
                let mut guard = lock_session(session);
                let plan = plan_region(&guard, &self.policy, span)?;
                begin(&mut guard, plan, &name)?
            };
            // A dropped future leaves the start stale (inert); the plan is
            // owned, so no lock is held while the method runs.
            let output = method.run(ticket.plan()).await;
            let result = {
                let mut guard = lock_session(session);
                match output {
                    Ok(output) => commit(&mut guard, ticket, output),
                    Err(error) => {
                        abridge_compact::abort(&mut guard, ticket, &error).and(Err(error))
                    }
                }
            };
            match result {
                Ok(mut outcome) => {
                    outcome.failures = failures;
                    return Ok(outcome);
                }
                Err(error) if error.stops_fallthrough() => return Err(error),
                Err(error) => failures.push((name, error.to_string())),
            }
        }
        Err(CompactError::AllFailed { failures })
    }
}
