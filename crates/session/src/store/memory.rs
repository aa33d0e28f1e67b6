//! A store that keeps the log in memory.

use std::sync::Arc;
use std::sync::Mutex;

use super::LoadReport;
use super::LoadedLog;
use super::SessionStore;
use crate::error::StoreError;
use crate::event::Event;
use crate::event::Header;

/// Keeps the log in memory: for tests, and for hosts that persist sessions
/// their own way.
///
/// Clones share the same log, so a test can keep a handle, hand the other
/// to a session, and inspect or reload what was written. A failure can be
/// injected with [`MemoryStore::fail_next_append`]. Two sessions on clones
/// are two writers: like a shared store, it answers [`SessionStore::head`]
/// and refuses a batch that does not start at the next seq with
/// [`StoreError::Conflict`].
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    header: Option<Header>,
    events: Vec<Event>,
    fail_next_append: bool,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes the next `append` fail with an I/O error, to test rollback.
    pub fn fail_next_append(&self) {
        self.lock().fail_next_append = true;
    }

    /// How many events have been written.
    pub fn len(&self) -> usize {
        self.lock().events.len()
    }

    /// True when no event has been written.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock cannot leave the log half-written
        // (every mutation is a single push loop), so a poisoned lock is
        // still consistent.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl SessionStore for MemoryStore {
    fn location(&self) -> String {
        "memory".to_string()
    }

    fn load(&mut self) -> Result<Option<LoadedLog>, StoreError> {
        let inner = self.lock();
        Ok(inner.header.clone().map(|header| LoadedLog {
            header,
            events: inner.events.clone(),
            report: LoadReport::default(),
        }))
    }

    fn create(&mut self, header: &Header) -> Result<(), StoreError> {
        let mut inner = self.lock();
        if inner.header.is_some() {
            return Err(StoreError::AlreadyExists {
                location: "memory".into(),
            });
        }
        inner.header = Some(header.clone());
        Ok(())
    }

    fn append(&mut self, events: &[Event]) -> Result<(), StoreError> {
        let mut inner = self.lock();
        if inner.header.is_none() {
            return Err(StoreError::NotCreated {
                location: "memory".into(),
            });
        }
        let next = inner.events.len() as u64;
        if let Some(first) = events.first()
            && first.seq != next
        {
            return Err(StoreError::Conflict {
                location: "memory".into(),
                expected: first.seq,
                found: next,
            });
        }
        if std::mem::take(&mut inner.fail_next_append) {
            return Err(StoreError::Io {
                path: "memory".into(),
                op: "append",
                source: std::io::Error::other("injected failure"),
            });
        }
        inner.events.extend_from_slice(events);
        Ok(())
    }

    fn sync(&mut self) -> Result<(), StoreError> {
        Ok(())
    }

    fn head(&mut self) -> Result<Option<u64>, StoreError> {
        let inner = self.lock();
        if inner.header.is_none() {
            return Err(StoreError::NotCreated {
                location: "memory".into(),
            });
        }
        Ok(Some(inner.events.len() as u64))
    }
}
