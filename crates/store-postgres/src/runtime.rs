//! The bridge from the synchronous `SessionStore` trait to the async
//! driver: one tokio runtime on a thread of its own.
//!
//! `SessionStore` is synchronous, tokio-postgres is async. Calling
//! `block_on` on the caller's thread would panic inside a tokio runtime
//! (the service is one) and would tie connections to whichever runtime
//! happened to make them. Instead every store of one `PgSessions`
//! shares a current-thread runtime that a dedicated
//! thread drives; a call ships its future there and waits on a plain
//! channel. The caller's thread only blocks, it never drives a runtime,
//! so the bridge works from sync code and from `spawn_blocking` alike.
//! Calling from the bridge's own thread would wait on itself: that is
//! refused with [`PgError::Runtime`].

use std::cell::Cell;
use std::future::Future;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;
use std::sync::mpsc;

use tokio::sync::oneshot;

use crate::error::PgError;

thread_local! {
    static ON_BRIDGE: Cell<bool> = const { Cell::new(false) };
}

/// A handle on the runtime thread. Clones share it; the thread stops when
/// the last clone drops.
#[derive(Debug, Clone)]
pub(crate) struct Bridge {
    handle: tokio::runtime::Handle,
    _stop: Arc<Stop>,
}

#[derive(Debug)]
struct Stop(Mutex<Option<oneshot::Sender<()>>>);

impl Drop for Stop {
    fn drop(&mut self) {
        let sender = self.0.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some(sender) = sender {
            // The thread may already be gone; then there is nothing to stop.
            let _ = sender.send(());
        }
    }
}

impl Bridge {
    /// Starts the runtime thread.
    pub(crate) fn start() -> Result<Self, PgError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| PgError::Runtime {
                reason: format!("cannot build a runtime: {e}"),
            })?;
        let handle = runtime.handle().clone();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("abridge-postgres".into())
            .spawn(move || {
                ON_BRIDGE.with(|flag| flag.set(true));
                // Returns when the last Bridge drops (or its sender does).
                let _ = runtime.block_on(stop_rx);
                // Dropped here, on a thread that is not inside a runtime.
                drop(runtime);
            })
            .map_err(|e| PgError::Runtime {
                reason: format!("cannot start the runtime thread: {e}"),
            })?;
        Ok(Bridge {
            handle,
            _stop: Arc::new(Stop(Mutex::new(Some(stop_tx)))),
        })
    }

    /// Runs `future` on the runtime thread and waits for its output.
    pub(crate) fn run<T, F>(&self, future: F) -> Result<T, PgError>
    where
        F: Future<Output = Result<T, PgError>> + Send + 'static,
        T: Send + 'static,
    {
        if ON_BRIDGE.with(Cell::get) {
            return Err(PgError::Runtime {
                reason: "a store call was made from the store's own runtime thread".into(),
            });
        }
        let (tx, rx) = mpsc::sync_channel(1);
        self.handle.spawn(async move {
            // The caller may have given up; then nobody reads this.
            let _ = tx.send(future.await);
        });
        rx.recv().map_err(|_| PgError::Runtime {
            reason: "the runtime thread stopped before the call finished".into(),
        })?
    }

    /// Starts `future` on the runtime thread without waiting for it.
    pub(crate) fn spawn<F>(&self, future: F) -> tokio::task::JoinHandle<()>
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.handle.spawn(future)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_runs_on_the_bridge_and_returns_its_output() {
        let bridge = Bridge::start().unwrap();
        let on_bridge = bridge.run(async { Ok(ON_BRIDGE.with(Cell::get)) }).unwrap();
        assert!(on_bridge, "the future runs on the runtime thread");
        assert!(!ON_BRIDGE.with(Cell::get), "the caller's thread is not it");
    }

    #[test]
    fn a_call_from_inside_a_tokio_runtime_does_not_panic() {
        let bridge = Bridge::start().unwrap();
        let outer = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let got = outer.block_on(async {
            let bridge = bridge.clone();
            // What a service does: the blocking call on a blocking thread
            // is fine; here even the runtime thread itself only waits.
            bridge.run(async { Ok(7) })
        });
        assert_eq!(got.unwrap(), 7);
    }

    #[test]
    fn a_nested_call_from_the_bridge_thread_is_refused() {
        let bridge = Bridge::start().unwrap();
        let inner = bridge.clone();
        let nested = bridge
            .run(async move { Ok(inner.run(async { Ok(1) })) })
            .unwrap();
        assert!(matches!(nested, Err(PgError::Runtime { .. })), "{nested:?}");
    }
}
