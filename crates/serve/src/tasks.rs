//! Compactions run as tracked tasks, so shutdown can wait for them and,
//! past its grace period, abort them cleanly.
//!
//! A request that runs Maintenance (`after-turn`, `on-error`, `compact`)
//! spawns the pass here and awaits it. A client that hangs up does not
//! stop the pass: it finishes and lands in the log. At shutdown, new
//! passes are refused, running ones get the grace period, and the rest
//! are aborted: dropping a pass's future writes `compaction/end` with
//! status `cancelled` (the compaction transaction's drop guard), so the
//! log holds no start without its end.

use std::future::Future;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::Serialize;
use tokio::sync::Notify;
use tokio::task::AbortHandle;

use crate::error::ApiError;

/// The running passes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Compactions {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    running: AtomicUsize,
    closing: AtomicBool,
    handles: Mutex<Vec<AbortHandle>>,
    idle: Notify,
}

/// Decrements the count when a task ends, however it ends (also when it
/// is aborted: the future, and this guard in it, is dropped).
struct Finished(Arc<Inner>);

impl Drop for Finished {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::AcqRel);
        self.0.idle.notify_waiters();
    }
}

/// How shutdown went for the compactions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DrainReport {
    /// Passes running when shutdown began.
    pub running: usize,
    /// Of those, passes aborted after the grace period.
    pub aborted: usize,
}

impl Compactions {
    /// Runs `pass` as a tracked task and waits for its result.
    ///
    /// # Errors
    /// [`ApiError::Unavailable`] when shutting down (nothing is run) or
    /// when shutdown aborted the pass.
    pub(crate) async fn run<F, T>(&self, pass: F) -> Result<T, ApiError>
    where
        F: Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        if self.inner.closing.load(Ordering::Acquire) {
            return Err(ApiError::Unavailable(
                "the service is shutting down; retry on another worker or after restart"
                    .to_string(),
            ));
        }
        self.inner.running.fetch_add(1, Ordering::AcqRel);
        let guard = Finished(self.inner.clone());
        let handle = tokio::spawn(async move {
            let _guard = guard;
            pass.await
        });
        {
            let mut handles = self
                .inner
                .handles
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            handles.retain(|h| !h.is_finished());
            handles.push(handle.abort_handle());
        }
        handle.await.map_err(|error| {
            if error.is_cancelled() {
                ApiError::Unavailable(
                    "the compaction was aborted by shutdown; the log records it as cancelled"
                        .to_string(),
                )
            } else {
                ApiError::Internal(format!("the compaction task failed: {error}"))
            }
        })
    }

    /// Refuses new passes, waits up to `grace` for running ones, then
    /// aborts the rest and waits for their futures to be dropped (each
    /// writes its cancelled end then).
    pub(crate) async fn drain(&self, grace: Duration) -> DrainReport {
        self.inner.closing.store(true, Ordering::Release);
        let running = self.inner.running.load(Ordering::Acquire);
        if tokio::time::timeout(grace, self.idle()).await.is_ok() {
            return DrainReport {
                running,
                aborted: 0,
            };
        }
        let handles: Vec<AbortHandle> = std::mem::take(
            &mut *self
                .inner
                .handles
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        let aborted = handles.iter().filter(|h| !h.is_finished()).count();
        for handle in &handles {
            handle.abort();
        }
        tracing::warn!(aborted, "compactions aborted after the grace period");
        // An aborted task is dropped at its next poll; that is prompt, but
        // bound the wait so a stuck drop cannot hold the process.
        let _ = tokio::time::timeout(Duration::from_secs(10), self.idle()).await;
        DrainReport { running, aborted }
    }

    async fn idle(&self) {
        loop {
            let notified = self.inner.idle.notified();
            if self.inner.running.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn drain_waits_for_a_short_pass() {
        let tasks = Compactions::default();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn({
            let tasks = tasks.clone();
            async move { tasks.run(async move { rx.await.is_ok() }).await }
        });
        while tasks.inner.running.load(Ordering::Acquire) == 0 {
            tokio::task::yield_now().await;
        }
        let drain = tokio::spawn({
            let tasks = tasks.clone();
            async move { tasks.drain(Duration::from_secs(60)).await }
        });
        tx.send(()).expect("send");
        assert!(running.await.expect("join").expect("ran"));
        assert_eq!(
            drain.await.expect("join"),
            DrainReport {
                running: 1,
                aborted: 0
            }
        );
        assert!(matches!(
            tasks.run(async {}).await,
            Err(ApiError::Unavailable(_))
        ));
    }

    #[tokio::test]
    async fn drain_aborts_a_pass_past_the_grace_period() {
        let tasks = Compactions::default();
        let running = tokio::spawn({
            let tasks = tasks.clone();
            async move { tasks.run(std::future::pending::<()>()).await }
        });
        while tasks.inner.running.load(Ordering::Acquire) == 0 {
            tokio::task::yield_now().await;
        }
        let report = tasks.drain(Duration::ZERO).await;
        assert_eq!(
            report,
            DrainReport {
                running: 1,
                aborted: 1
            }
        );
        assert!(matches!(
            running.await.expect("join"),
            Err(ApiError::Unavailable(_))
        ));
    }
}
