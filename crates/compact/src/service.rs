//! `CompactService`: compaction as a service a host calls.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::MutexGuard;

use abridge_session::Seq;
use abridge_session::Session;
use async_trait::async_trait;
use serde::Serialize;

use crate::error::CompactError;
use crate::error::MethodFailure;
use crate::types::Span;
use crate::types::Trigger;

/// A session several tasks share: the agent appends turns while a
/// compaction's method runs. Services lock it only to plan, begin and
/// commit, never across an `await`.
pub type SharedSession = Arc<Mutex<Session>>;

/// Locks a shared session. A poisoned lock is taken anyway: every session
/// write is all-or-nothing, so a panic elsewhere cannot leave it half-done.
pub fn lock_session(session: &SharedSession) -> MutexGuard<'_, Session> {
    session
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A request to compact now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompactRequest {
    /// Why.
    pub trigger: Trigger,
    /// Method names to try in order; empty: the service's configured order.
    pub methods: Vec<String>,
    /// What the checkpoint should focus on.
    pub instructions: Option<String>,
    /// Override of the retention budget.
    pub keep_recent_tokens: Option<u64>,
}

impl CompactRequest {
    /// A manual request with the service's defaults.
    pub fn manual() -> Self {
        CompactRequest {
            trigger: Trigger::Manual,
            methods: Vec::new(),
            instructions: None,
            keep_recent_tokens: None,
        }
    }
}

/// A compaction that landed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// Its id, as in its events.
    pub compaction_id: String,
    /// The method that landed.
    pub method: String,
    /// Why it ran.
    pub trigger: Trigger,
    /// The figure to act on before.
    pub tokens_before: u64,
    /// The same figure after.
    pub tokens_after: u64,
    /// Surface messages hidden (checkpoint) or rewritten.
    pub hidden: usize,
    /// The `compaction/start` event.
    pub start_seq: Seq,
    /// The `compaction/summary` event.
    pub summary_seq: Seq,
    /// The checkpoint message, for checkpoints.
    pub checkpoint_seq: Option<Seq>,
    /// The rewrite messages, for rewrites.
    pub rewrite_seqs: Vec<Seq>,
    /// The `compaction/end` event.
    pub end_seq: Seq,
    /// Two or three sentences for a UI line.
    pub short_summary: String,
    /// Methods tried (or passed over) before this one, in order.
    pub failures: Vec<MethodFailure>,
}

/// Compaction as a service: the host says when, the service decides how.
///
/// # Contract
///
/// - `compact_if_needed` compares the counter's figure to the threshold
///   (for `Threshold`, `MidTurn` and `Idle`) and returns `Ok(None)` when
///   under it; `Overflow` and `IncompleteOutput` always compact, with the
///   most reduction available; `Manual` always compacts.
/// - A returned `Outcome` means the surface changed; the trigger's figure
///   and the success check's figure come from the same counter.
/// - The session lock is held only while planning, beginning and
///   committing; never across a model call.
///
/// # Errors
///
/// [`CompactError::Busy`] when another compaction is in flight;
/// [`CompactError::AllFailed`] when every method failed; the rest as
/// documented on [`CompactError`].
///
/// # Cancel safety
///
/// Dropping a returned future while a method runs leaves a `compaction/end`
/// with status error and kind `cancelled`, and the surface unchanged.
#[async_trait]
pub trait CompactService: Send + Sync + Debug {
    /// Compacts if the trigger calls for it.
    async fn compact_if_needed(
        &self,
        session: &SharedSession,
        trigger: Trigger,
    ) -> Result<Option<Outcome>, CompactError>;

    /// Compacts now, as asked.
    async fn compact_now(
        &self,
        session: &SharedSession,
        request: CompactRequest,
    ) -> Result<Outcome, CompactError>;

    /// Compacts exactly `span` (which must not split a tool call from its
    /// result).
    async fn compact_region(
        &self,
        session: &SharedSession,
        span: Span,
    ) -> Result<Outcome, CompactError>;
}

#[async_trait]
impl<T: CompactService + ?Sized> CompactService for Arc<T> {
    async fn compact_if_needed(
        &self,
        session: &SharedSession,
        trigger: Trigger,
    ) -> Result<Option<Outcome>, CompactError> {
        (**self).compact_if_needed(session, trigger).await
    }
    async fn compact_now(
        &self,
        session: &SharedSession,
        request: CompactRequest,
    ) -> Result<Outcome, CompactError> {
        (**self).compact_now(session, request).await
    }
    async fn compact_region(
        &self,
        session: &SharedSession,
        span: Span,
    ) -> Result<Outcome, CompactError> {
        (**self).compact_region(session, span).await
    }
}

#[async_trait]
impl<T: CompactService + ?Sized> CompactService for Box<T> {
    async fn compact_if_needed(
        &self,
        session: &SharedSession,
        trigger: Trigger,
    ) -> Result<Option<Outcome>, CompactError> {
        (**self).compact_if_needed(session, trigger).await
    }
    async fn compact_now(
        &self,
        session: &SharedSession,
        request: CompactRequest,
    ) -> Result<Outcome, CompactError> {
        (**self).compact_now(session, request).await
    }
    async fn compact_region(
        &self,
        session: &SharedSession,
        span: Span,
    ) -> Result<Outcome, CompactError> {
        (**self).compact_region(session, span).await
    }
}
