//! `CompactionHooks`: where a host agent joins a compaction.

use std::fmt::Debug;
use std::sync::Arc;

use abridge_session::Navigation;
use abridge_session::Seq;
use async_trait::async_trait;

use crate::contract::MethodOutput;
use crate::plan::Plan;
use crate::service::Outcome;

/// What `before_compaction` decides.
#[derive(Debug, Clone, PartialEq)]
pub enum Before {
    /// Run the method.
    Proceed,
    /// Do not compact; the compaction ends with
    /// [`MethodError::Cancelled`](crate::MethodError::Cancelled).
    Cancel {
        /// Why, for the log.
        reason: String,
    },
    /// Skip the method and commit this output instead (a host that
    /// writes its own summaries).
    Supply(MethodOutput),
}

/// What `while_compacting` adds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extra {
    /// Notes shown to the summarizer (the current plan file, open todos).
    pub context: Vec<String>,
    /// Text carried into the checkpoint verbatim, inside `<preserved>`.
    pub preserve: Vec<String>,
}

/// What `before_navigation` decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeforeNavigation {
    /// Navigate and summarize the abandoned branch.
    Proceed,
    /// Navigate without a branch summary.
    SkipSummary,
    /// Do not navigate.
    Cancel,
}

/// Callbacks around compaction and branch navigation.
///
/// Every hook defaults to "carry on, add nothing", like a `Sink` whose
/// methods all default to continuing: implement only the ones you need.
/// [`NoHooks`] implements none.
///
/// # Contract
///
/// - Hooks run on the compacting task; a slow hook delays the compaction,
///   never the agent (no session borrow is held while they run, except
///   in `compact_session`, which holds the `&mut Session` it was given).
/// - `before_compaction` may cancel or supply the result; an output it
///   supplies goes through the same commit checks as a method's.
/// - `after_compaction` sees successful outcomes only; failures are in the
///   log's `compaction/end`.
#[async_trait]
pub trait CompactionHooks: Send + Sync + Debug {
    /// Before a method runs on `plan`.
    async fn before_compaction(&self, _plan: &Plan, _method: &str) -> Before {
        Before::Proceed
    }

    /// While the method is about to run: extra context and preserved text.
    async fn while_compacting(&self, _plan: &Plan) -> Extra {
        Extra::default()
    }

    /// After a compaction committed.
    async fn after_compaction(&self, _outcome: &Outcome) {}

    /// Before navigating from `from` to `target`.
    async fn before_navigation(
        &self,
        _from: Option<Seq>,
        _target: Option<Seq>,
    ) -> BeforeNavigation {
        BeforeNavigation::Proceed
    }

    /// After navigating (and after any branch summary was appended).
    async fn after_navigation(&self, _navigation: &Navigation, _summary: Option<Seq>) {}
}

/// Hooks that do nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHooks;

impl CompactionHooks for NoHooks {}

#[async_trait]
impl<T: CompactionHooks + ?Sized> CompactionHooks for Arc<T> {
    async fn before_compaction(&self, plan: &Plan, method: &str) -> Before {
        (**self).before_compaction(plan, method).await
    }
    async fn while_compacting(&self, plan: &Plan) -> Extra {
        (**self).while_compacting(plan).await
    }
    async fn after_compaction(&self, outcome: &Outcome) {
        (**self).after_compaction(outcome).await
    }
    async fn before_navigation(&self, from: Option<Seq>, target: Option<Seq>) -> BeforeNavigation {
        (**self).before_navigation(from, target).await
    }
    async fn after_navigation(&self, navigation: &Navigation, summary: Option<Seq>) {
        (**self).after_navigation(navigation, summary).await
    }
}

#[async_trait]
impl<T: CompactionHooks + ?Sized> CompactionHooks for Box<T> {
    async fn before_compaction(&self, plan: &Plan, method: &str) -> Before {
        (**self).before_compaction(plan, method).await
    }
    async fn while_compacting(&self, plan: &Plan) -> Extra {
        (**self).while_compacting(plan).await
    }
    async fn after_compaction(&self, outcome: &Outcome) {
        (**self).after_compaction(outcome).await
    }
    async fn before_navigation(&self, from: Option<Seq>, target: Option<Seq>) -> BeforeNavigation {
        (**self).before_navigation(from, target).await
    }
    async fn after_navigation(&self, navigation: &Navigation, summary: Option<Seq>) {
        (**self).after_navigation(navigation, summary).await
    }
}
