//! Sleeps and timeouts that work on any executor.
//!
//! The retry wrapper waits between attempts and bounds each attempt. Tying
//! those waits to tokio's timer made every model-backed compaction panic
//! under another executor (`futures::executor::block_on`, smol, a GUI's
//! loop), which is where a framework author often starts. So the waits go
//! through this layer:
//!
//! - inside a tokio runtime (feature `tokio`, on for abridge-providers), tokio's
//!   own timer, so a paused test clock and `tokio::time::advance` see every
//!   wait exactly;
//! - anywhere else, one background thread (`abridge-timer`, started on the
//!   first wait) that keeps the pending deadlines in a heap and wakes each
//!   waiting task when its deadline passes. It costs one parked thread and
//!   nothing per idle wait.
//!
//! A tokio runtime used here must have its time driver enabled
//! (`enable_time` or `enable_all`), as for any tokio timer.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::Condvar;
use std::sync::Mutex;
use std::sync::OnceLock;
use std::sync::PoisonError;
use std::sync::Weak;
use std::task::Context;
use std::task::Poll;
use std::task::Waker;
use std::time::Duration;
use std::time::Instant;

use futures::future::Either;

/// The time now, on the clock the waits use: tokio's (which a test may
/// pause) inside a tokio runtime, the system's monotonic clock elsewhere.
pub(crate) fn now() -> Instant {
    #[cfg(feature = "tokio")]
    if tokio::runtime::Handle::try_current().is_ok() {
        return tokio::time::Instant::now().into_std();
    }
    Instant::now()
}

/// Waits until `deadline` (a time from [`now`]).
pub(crate) async fn sleep_until(deadline: Instant) {
    #[cfg(feature = "tokio")]
    if tokio::runtime::Handle::try_current().is_ok() {
        tokio::time::sleep_until(tokio::time::Instant::from_std(deadline)).await;
        return;
    }
    ThreadSleep::new(deadline).await;
}

/// Waits for `duration`.
pub(crate) async fn sleep(duration: Duration) {
    sleep_until(now() + duration).await;
}

/// The deadline passed before the future finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Elapsed;

/// Runs `future` until `deadline`; [`Elapsed`] (and `future` dropped) when
/// the deadline comes first.
pub(crate) async fn timeout_at<F: Future>(
    deadline: Instant,
    future: F,
) -> Result<F::Output, Elapsed> {
    let future = std::pin::pin!(future);
    let alarm = std::pin::pin!(sleep_until(deadline));
    match futures::future::select(future, alarm).await {
        Either::Left((output, _)) => Ok(output),
        Either::Right(((), _)) => Err(Elapsed),
    }
}

/// Runs `future` for at most `limit`.
pub(crate) async fn timeout<F: Future>(limit: Duration, future: F) -> Result<F::Output, Elapsed> {
    timeout_at(now() + limit, future).await
}

/// A wait on the background timer thread.
struct ThreadSleep {
    deadline: Instant,
    /// Set once registered with the thread: where it finds the waker to
    /// call. The thread holds only a weak reference, so a dropped wait
    /// costs it nothing but a skipped entry.
    waker: Option<Arc<Mutex<Option<Waker>>>>,
}

impl ThreadSleep {
    fn new(deadline: Instant) -> Self {
        ThreadSleep {
            deadline,
            waker: None,
        }
    }
}

impl Future for ThreadSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if Instant::now() >= self.deadline {
            return Poll::Ready(());
        }
        match &self.waker {
            Some(slot) => {
                *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(cx.waker().clone());
            }
            None => {
                let Some(timer) = TimerThread::global() else {
                    // No thread could be started: the wait ends at once
                    // (a retry comes sooner, a timeout never fires) rather
                    // than hanging forever.
                    return Poll::Ready(());
                };
                let slot = Arc::new(Mutex::new(Some(cx.waker().clone())));
                timer.register(self.deadline, Arc::downgrade(&slot));
                self.waker = Some(slot);
            }
        }
        Poll::Pending
    }
}

/// One pending deadline in the thread's heap.
struct Entry {
    deadline: Instant,
    waker: Weak<Mutex<Option<Waker>>>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.deadline == other.deadline
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    /// Reversed, so the heap's top is the earliest deadline.
    fn cmp(&self, other: &Self) -> Ordering {
        other.deadline.cmp(&self.deadline)
    }
}

/// The background thread's shared state.
struct TimerThread {
    pending: Mutex<BinaryHeap<Entry>>,
    changed: Condvar,
}

impl TimerThread {
    /// The one timer thread, started on first use; `None` when the system
    /// refused to start a thread (logged once).
    fn global() -> Option<&'static TimerThread> {
        static TIMER: OnceLock<Option<&'static TimerThread>> = OnceLock::new();
        *TIMER.get_or_init(|| {
            let timer: &'static TimerThread = Box::leak(Box::new(TimerThread {
                pending: Mutex::new(BinaryHeap::new()),
                changed: Condvar::new(),
            }));
            match std::thread::Builder::new()
                .name("abridge-timer".to_string())
                .spawn(move || timer.run())
            {
                Ok(_) => Some(timer),
                Err(error) => {
                    tracing::error!(%error, "cannot start the timer thread; waits end at once");
                    None
                }
            }
        })
    }

    fn register(&self, deadline: Instant, waker: Weak<Mutex<Option<Waker>>>) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let earliest = pending.peek().is_none_or(|top| deadline < top.deadline);
        pending.push(Entry { deadline, waker });
        if earliest {
            self.changed.notify_one();
        }
    }

    /// Wakes each wait as its deadline passes; sleeps until the earliest
    /// one, or until a new earlier one is registered.
    fn run(&self) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            let now = Instant::now();
            let mut due = Vec::new();
            while pending.peek().is_some_and(|top| top.deadline <= now) {
                if let Some(entry) = pending.pop() {
                    due.push(entry.waker);
                }
            }
            if !due.is_empty() {
                drop(pending);
                for slot in due.iter().filter_map(Weak::upgrade) {
                    let waker = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
                    waker.into_iter().for_each(Waker::wake);
                }
                pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            pending = match pending.peek().map(|top| top.deadline - now) {
                Some(wait) => {
                    self.changed
                        .wait_timeout(pending, wait)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
                None => self
                    .changed
                    .wait(pending)
                    .unwrap_or_else(PoisonError::into_inner),
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleep_ends_without_a_runtime() {
        futures::executor::block_on(sleep(Duration::from_millis(5)));
    }

    #[test]
    fn a_timeout_fires_without_a_runtime() {
        let result = futures::executor::block_on(timeout(
            Duration::from_millis(5),
            std::future::pending::<()>(),
        ));
        assert_eq!(result, Err(Elapsed));
    }

    #[test]
    fn a_finished_future_beats_its_timeout() {
        let result = futures::executor::block_on(timeout(Duration::from_secs(60), async { 7 }));
        assert_eq!(result, Ok(7));
    }
}
