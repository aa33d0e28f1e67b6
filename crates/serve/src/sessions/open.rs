//! The sessions open in memory: a bounded cache.
//!
//! Every open session holds its log in memory and, on files, two
//! descriptors (the log and its lock). Kept for the life of the process,
//! they ran the process out of descriptors (at `ulimit -n 256`, every
//! create failed from the 122nd session on). So the cache holds at most
//! `open_sessions` of them: opening one more first closes the least
//! recently used idle one, and a sweep closes those unused for
//! `session_idle`. A session is idle when nothing but the cache holds it
//! (no request in flight, no pass running) and nobody follows its event
//! stream; one that is not idle is never closed. Closing syncs the
//! session and drops it, which closes its store; the next request opens
//! it again from the store.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::PoisonError;
use std::time::Duration;
use std::time::Instant;

use super::Key;
use super::Live;
use super::gates::Gates;
use crate::error::ApiError;

/// One open session and when it was last used.
#[derive(Debug)]
struct Entry {
    live: Arc<Live>,
    used: Instant,
}

impl Entry {
    /// Only the cache holds it, and nobody follows its events.
    fn idle(&self) -> bool {
        Arc::strong_count(&self.live) == 1 && self.live.events.receiver_count() == 0
    }
}

/// The open sessions, at most `capacity` of them.
#[derive(Debug)]
pub(crate) struct OpenSessions {
    map: Mutex<HashMap<Key, Entry>>,
    capacity: usize,
}

impl OpenSessions {
    pub(crate) fn new(capacity: usize) -> Self {
        OpenSessions {
            map: Mutex::new(HashMap::new()),
            capacity,
        }
    }

    fn map(&self) -> MutexGuard<'_, HashMap<Key, Entry>> {
        self.map.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The open session `key`, marked used now.
    pub(crate) fn get(&self, key: &Key) -> Option<Arc<Live>> {
        let mut map = self.map();
        let entry = map.get_mut(key)?;
        entry.used = Instant::now();
        Some(Arc::clone(&entry.live))
    }

    /// True when `key` is open.
    pub(crate) fn contains(&self, key: &Key) -> bool {
        self.map().contains_key(key)
    }

    /// Adds an opened session. Call [`make_room`](Self::make_room) first.
    pub(crate) fn insert(&self, key: Key, live: Arc<Live>) {
        self.map().insert(
            key,
            Entry {
                live,
                used: Instant::now(),
            },
        );
    }

    /// How many sessions are open.
    pub(crate) fn len(&self) -> usize {
        self.map().len()
    }

    /// Every open session (to sync at shutdown).
    pub(crate) fn all(&self) -> Vec<Arc<Live>> {
        self.map().values().map(|e| Arc::clone(&e.live)).collect()
    }

    /// Closes idle sessions, least recently used first, until one more
    /// fits under the capacity.
    ///
    /// # Errors
    /// [`ApiError::Unavailable`] when the cache is full of sessions in
    /// use.
    pub(crate) fn make_room(&self, gates: &Gates) -> Result<(), ApiError> {
        if self.len() < self.capacity {
            return Ok(());
        }
        let mut candidates: Vec<(Instant, Key)> = self
            .map()
            .iter()
            .filter(|(_, entry)| entry.idle())
            .map(|(key, entry)| (entry.used, key.clone()))
            .collect();
        candidates.sort_by_key(|(used, _)| *used);
        for (_, key) in candidates {
            if self.len() < self.capacity {
                return Ok(());
            }
            self.close(&key, gates, None);
        }
        if self.len() < self.capacity {
            return Ok(());
        }
        Err(ApiError::Unavailable(format!(
            "{} sessions are open and in use, the service's limit; retry shortly",
            self.capacity
        )))
    }

    /// Closes every idle session unused for `idle`; returns how many.
    pub(crate) fn close_idle(&self, idle: Duration, gates: &Gates) -> usize {
        let now = Instant::now();
        let stale: Vec<Key> = self
            .map()
            .iter()
            .filter(|(_, entry)| entry.idle() && now.duration_since(entry.used) >= idle)
            .map(|(key, _)| key.clone())
            .collect();
        stale
            .iter()
            .filter(|key| self.close(key, gates, Some((idle, now))))
            .count()
    }

    /// Closes `key` if it is still idle (and, with `unused`, still unused
    /// for that long at that instant), holding its gate so that no request
    /// opens it again before its store is closed.
    fn close(&self, key: &Key, gates: &Gates, unused: Option<(Duration, Instant)>) -> bool {
        let Some(_gate) = gates.try_hold(key) else {
            return false;
        };
        let live = {
            let mut map = self.map();
            let still = map.get(key).is_some_and(|entry| {
                entry.idle()
                    && unused.is_none_or(|(idle, now)| now.duration_since(entry.used) >= idle)
            });
            if !still {
                return false;
            }
            map.remove(key).map(|entry| entry.live)
        };
        let Some(live) = live else {
            return false;
        };
        if let Err(error) = live.harness.sync() {
            tracing::warn!(session = %live.id, %error, "sync before closing failed");
        }
        tracing::debug!(tenant = %key.0, session = %live.id, "session closed");
        // The last handle: dropping it closes the session's store.
        drop(live);
        true
    }
}
