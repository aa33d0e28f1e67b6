//! Speculative compaction: the slow checkpoint written before it is
//! needed.
//!
//! When the context enters a band below the threshold, the first method
//! of the order that declares itself speculated
//! ([`Capabilities::speculated`](abridge_compact::Capabilities::speculated):
//! the model-backed ones, `remote`, `handoff` and `soft`, which take
//! seconds; the model-free ones finish in milliseconds at the threshold
//! itself) starts on a snapshot of the plan the threshold would make, in a
//! tokio task. The log is not touched. When a later pass reaches that
//! method, the speculation's output is committed for exactly the span it
//! summarized (a plan of that region, then the commit: no model call on
//! the agent's path), provided the span still holds the same history: the
//! same messages at the same surface positions, where a message pruned or
//! shaken since counts as the same one. A span whose history changed (a
//! navigation, another checkpoint) drops the speculation and the method
//! runs live. A manual pass drops any speculation first, so the two never
//! race.
//!
//! A host whose caller must never wait on a model (the proxy: its caller
//! is an agent waiting for a reply) turns on
//! [`Maintenance::with_background_models`](crate::Maintenance::with_background_models):
//! passes then commit finished speculations only, pass a model-backed
//! method over where none is ready instead of running it live or waiting
//! for it, and the host starts speculations itself after each reply
//! ([`Maintenance::speculate`](crate::Maintenance::speculate)).
//!
//! Speculation is the one part of abridge that needs a runtime of its own
//! kind: a tokio runtime to spawn on (feature `tokio`). Elsewhere it is
//! off, and Maintenance says so once ([`crate::MaintenanceEvent::SpeculationUnavailable`]).

mod task;

use std::sync::Arc;
use std::sync::Mutex;

use abridge_compact::Capabilities;
use abridge_compact::CompactionMethod;
use abridge_compact::MethodError;
use abridge_compact::MethodOutput;
use abridge_compact::Outcome;
use abridge_compact::Plan;
use abridge_compact::Span;
use abridge_compact::host::CompactionHooks;
use abridge_prune::original_of;
use abridge_session::Seq;
use abridge_session::Session;
use async_trait::async_trait;

use crate::speculation::task::Task;

/// A speculative checkpoint in flight or finished.
pub(crate) struct Speculation {
    /// The method writing it.
    pub(crate) method: String,
    /// The surface positions it summarizes.
    pub(crate) span: Span,
    /// The session it belongs to.
    session_id: String,
    /// The seqs at `span` when it started.
    seqs: Vec<Seq>,
    task: Task,
}

impl Drop for Speculation {
    fn drop(&mut self) {
        // A speculation nobody will commit stops spending.
        self.task.abort();
    }
}

impl Speculation {
    /// Starts `method` on `plan` in a task on the current tokio runtime.
    /// The host's `while_compacting` is asked first, as on the live path,
    /// so its notes reach the summarizer.
    ///
    /// # Errors
    /// Why no task could start (no tokio runtime here, or abridge built
    /// without its `tokio` feature): the caller says so once, and nothing
    /// else changes.
    pub(crate) fn start(
        method: Arc<dyn CompactionMethod>,
        mut plan: Plan,
        hooks: Arc<dyn CompactionHooks>,
    ) -> Result<Self, &'static str> {
        let span = plan.span();
        let seqs = plan.seqs().to_vec();
        let session_id = plan.session_id().to_string();
        let name = method.name().to_string();
        let task = Task::spawn(async move {
            let extra = hooks.while_compacting(&plan).await;
            extra
                .context
                .into_iter()
                .for_each(|c| plan.add_extra_context(c));
            method.run(&plan).await
        })?;
        Ok(Speculation {
            method: name,
            span,
            session_id,
            seqs,
            task,
        })
    }

    /// Whether the task has finished (its output is ready to commit).
    pub(crate) fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Whether `session` still holds the summarized history at the same
    /// positions: each position's message is the one summarized, or a
    /// pruned or shaken rewrite of it.
    pub(crate) fn still_fits(&self, session: &Session) -> bool {
        if session.header().session_id != self.session_id {
            return false;
        }
        let surface = session.surface().seqs();
        let Some(now) = surface.get(self.span.start..=self.span.end) else {
            return false;
        };
        now.iter()
            .zip(&self.seqs)
            .all(|(&current, &summarized)| original_of(session, current) == summarized)
    }

    /// Waits for the output.
    ///
    /// # Errors
    /// The method's error, or [`MethodError::Cancelled`] when the task
    /// was aborted or panicked.
    pub(crate) async fn output(&mut self) -> Result<MethodOutput, MethodError> {
        self.task.join().await
    }
}

/// The slot a Maintenance keeps its one speculation in.
#[derive(Default)]
pub(crate) struct Slot(Mutex<Option<Speculation>>);

impl Slot {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Speculation>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// True when a speculation is held.
    pub(crate) fn occupied(&self) -> bool {
        self.lock().is_some()
    }

    /// Holds `speculation`, dropping any earlier one.
    pub(crate) fn put(&self, speculation: Speculation) {
        *self.lock() = Some(speculation);
    }

    /// Takes the speculation when it was written by `method`.
    pub(crate) fn take_for(&self, method: &str) -> Option<Speculation> {
        let mut slot = self.lock();
        if slot.as_ref().is_some_and(|s| s.method == method) {
            slot.take()
        } else {
            None
        }
    }

    /// Takes the speculation, whoever wrote it.
    pub(crate) fn take_for_any(&self) -> Option<Speculation> {
        self.lock().take()
    }

    /// Whether the held speculation is finished (false when empty).
    pub(crate) fn ready(&self) -> bool {
        self.lock().as_ref().is_some_and(Speculation::is_finished)
    }
}

/// A finished speculation, committed as the method that wrote it: the
/// commit is an ordinary attempt with the host's own hooks (so `before`
/// may still cancel or supply, `while` adds the notes it preserves, as
/// fresh as on the live path, and `after` sees the outcome), and the
/// method's `committed` runs as it would after a live call. Only `run`
/// differs: it hands back the output already written.
pub(crate) struct Finished {
    pub(crate) method: Arc<dyn CompactionMethod>,
    pub(crate) output: Mutex<Option<MethodOutput>>,
}

impl std::fmt::Debug for Finished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Finished")
            .field("method", &self.method.name())
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl CompactionMethod for Finished {
    fn name(&self) -> &str {
        self.method.name()
    }

    fn capabilities(&self) -> Capabilities {
        self.method.capabilities()
    }

    async fn run(&self, _plan: &Plan) -> Result<MethodOutput, MethodError> {
        self.output
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
            .ok_or_else(|| MethodError::Cancelled {
                by: "the speculative output was already used".to_string(),
            })
    }

    async fn committed(&self, output: &MethodOutput, outcome: &Outcome) {
        self.method.committed(output, outcome).await;
    }
}
