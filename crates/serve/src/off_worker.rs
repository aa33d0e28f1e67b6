//! Store calls that never stall an async worker.
//!
//! Request handlers move their store work to the blocking pool (see
//! `routes::sessions::blocking`), but a compaction pass runs as an async
//! task (shutdown must be able to abort it), and its few store writes
//! (`compaction/start`, the checkpoint, `compaction/end`, the hold's check
//! before commit) are made from inside the library's async code, where no
//! handler can wrap them. A file write with its fsync, or a PostgreSQL
//! round trip, made there would hold up every other request and event
//! stream scheduled on that worker thread.
//!
//! So every session store the service opens is wrapped in [`OffWorker`]:
//! on a worker of a multi-threaded runtime each call runs under tokio's
//! `block_in_place`, which hands the worker's other tasks to another
//! thread for the call's duration. Anywhere else (the blocking pool, a
//! single-threaded runtime, no runtime) the call runs as it is.

use abridge_session::CompactionHold;
use abridge_session::Event;
use abridge_session::Header;
use abridge_session::LoadedLog;
use abridge_session::Seq;
use abridge_session::SessionStore;
use abridge_session::StoreError;
use tokio::runtime::Handle;
use tokio::runtime::RuntimeFlavor;

/// Runs `work`, which blocks, without stalling the async worker it may be
/// called from (see the module docs).
fn off_worker<T>(work: impl FnOnce() -> T) -> T {
    match Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

/// A session store whose calls never stall an async worker.
#[derive(Debug)]
pub(crate) struct OffWorker(pub(crate) Box<dyn SessionStore>);

impl SessionStore for OffWorker {
    fn location(&self) -> String {
        self.0.location()
    }

    fn load(&mut self) -> Result<Option<LoadedLog>, StoreError> {
        off_worker(|| self.0.load())
    }

    fn create(&mut self, header: &Header) -> Result<(), StoreError> {
        off_worker(|| self.0.create(header))
    }

    fn append(&mut self, events: &[Event]) -> Result<(), StoreError> {
        off_worker(|| self.0.append(events))
    }

    fn sync(&mut self) -> Result<(), StoreError> {
        off_worker(|| self.0.sync())
    }

    fn head(&mut self) -> Result<Option<Seq>, StoreError> {
        off_worker(|| self.0.head())
    }

    fn load_from(&mut self, from: Seq) -> Result<Vec<Event>, StoreError> {
        off_worker(|| self.0.load_from(from))
    }

    fn hold_compaction(
        &mut self,
        compaction_id: &str,
    ) -> Result<Option<Box<dyn CompactionHold>>, StoreError> {
        let hold = off_worker(|| self.0.hold_compaction(compaction_id))?;
        Ok(hold.map(|hold| Box::new(OffWorkerHold(Some(hold))) as Box<dyn CompactionHold>))
    }

    fn compaction_held(&mut self, compaction_id: &str) -> Result<bool, StoreError> {
        off_worker(|| self.0.compaction_held(compaction_id))
    }
}

/// A compaction hold whose check (a round trip, made just before commit)
/// and release (a round trip when dropped: the lock row is deleted before
/// the next method of the pass tries to take it) never stall an async
/// worker. Always `Some` until dropped.
#[derive(Debug)]
struct OffWorkerHold(Option<Box<dyn CompactionHold>>);

impl CompactionHold for OffWorkerHold {
    fn check(&self) -> Result<(), StoreError> {
        match &self.0 {
            Some(hold) => off_worker(|| hold.check()),
            None => Ok(()),
        }
    }
}

impl Drop for OffWorkerHold {
    fn drop(&mut self) {
        if let Some(hold) = self.0.take() {
            off_worker(move || drop(hold));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain paths: no runtime, a single-threaded runtime (where
    /// `block_in_place` would panic) and the blocking pool all run the
    /// call as it is, and a multi-threaded worker runs it too.
    #[test]
    fn a_call_runs_on_every_kind_of_thread() {
        assert_eq!(off_worker(|| 1), 1);
        let single = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        assert_eq!(single.block_on(async { off_worker(|| 2) }), 2);
        let multi = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .expect("runtime");
        let on_worker = multi.block_on(async {
            tokio::spawn(async { off_worker(|| 3) })
                .await
                .expect("the task ran")
        });
        assert_eq!(on_worker, 3);
        let on_pool = multi.block_on(async {
            tokio::task::spawn_blocking(|| off_worker(|| 4))
                .await
                .expect("the blocking call ran")
        });
        assert_eq!(on_pool, 4);
    }
}
