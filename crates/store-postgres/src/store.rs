//! `SessionStore` for one session in PostgreSQL.

use abridge_session::CompactionHold;
use abridge_session::Event;
use abridge_session::Header;
use abridge_session::LoadedLog;
use abridge_session::SessionStore;
use abridge_session::StoreError;

use crate::error::PgError;
use crate::lock::CompactionLock;
use crate::log;
use crate::log::Place;
use crate::sessions::PgSessions;

/// One session's log in PostgreSQL: made by [`PgSessions::store`].
///
/// - `append` is one transaction guarded by the session's next seq: when
///   another writer appended first, the call fails with
///   [`StoreError::Conflict`] and writes nothing. Several workers may hold
///   a store of the same session; the log never interleaves.
/// - A committed append is durable (PostgreSQL's commit), so `sync` has
///   nothing left to do.
/// - Events are kept as their JSONL lines, so unknown events come back
///   byte for byte; images over
///   [`BLOB_THRESHOLD`](abridge_session::BLOB_THRESHOLD) go to the `blobs`
///   table and are resolved on load.
///
/// - Several workers share a session: [`head`](SessionStore::head) and
///   [`load_from`](SessionStore::load_from) let each catch up with the
///   others, and [`hold_compaction`](SessionStore::hold_compaction) is the
///   session's row in `compaction_locks` (leased for
///   [`PgOptions::compaction_lease`](crate::PgOptions::compaction_lease)).
///
/// Each call blocks its thread while the store's runtime thread does the
/// I/O; from async code call it inside `spawn_blocking`.
#[derive(Debug, Clone)]
pub struct PgStore {
    sessions: PgSessions,
    place: Place,
}

impl PgSessions {
    /// The store of session `session_id` in this schema (created with
    /// `SessionStore::create`, or opened when it exists).
    pub fn store(&self, session_id: &str) -> PgStore {
        PgStore::new(self.clone(), session_id)
    }
}

impl PgStore {
    fn new(sessions: PgSessions, session_id: &str) -> Self {
        let place = Place {
            session: session_id.to_string(),
            location: format!("{}/{session_id}", sessions.target()),
            target: sessions.target().to_string(),
        };
        PgStore { sessions, place }
    }

    /// The session this store holds.
    pub fn session_id(&self) -> &str {
        &self.place.session
    }

    /// The deployment this store belongs to (for locks and followers).
    pub fn sessions(&self) -> &PgSessions {
        &self.sessions
    }

    fn call<T, F, Fut>(&self, op: &'static str, work: F) -> Result<T, StoreError>
    where
        F: FnOnce(deadpool_postgres::Client, Place) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<T, StoreError>> + Send + 'static,
        T: Send + 'static,
    {
        let place = self.place.clone();
        // The inner result is the store's answer; the outer one a failure
        // to reach the database at all.
        self.sessions
            .run(move |client, _| async move { Ok(work(client, place).await) })
            .map_err(|e| e.into_store(&self.place.location, op))?
    }
}

impl SessionStore for PgStore {
    fn location(&self) -> String {
        self.place.location.clone()
    }

    fn load(&mut self) -> Result<Option<LoadedLog>, StoreError> {
        self.call("load", log::load)
    }

    fn create(&mut self, header: &Header) -> Result<(), StoreError> {
        let header = header.clone();
        self.call("create", move |client, place| {
            log::create(client, place, header)
        })
    }

    fn append(&mut self, events: &[Event]) -> Result<(), StoreError> {
        let rows = log::encode(events, &self.place.location)?;
        self.call("append", move |client, place| {
            log::append(client, place, rows)
        })
    }

    fn sync(&mut self) -> Result<(), StoreError> {
        Ok(())
    }

    fn head(&mut self) -> Result<Option<u64>, StoreError> {
        self.call("read the head", log::head).map(Some)
    }

    fn load_from(&mut self, from: u64) -> Result<Vec<Event>, StoreError> {
        let from = i64::try_from(from).unwrap_or(i64::MAX);
        self.call("load the tail", move |client, place| {
            log::load_from(client, place, from)
        })
    }

    fn hold_compaction(
        &mut self,
        compaction_id: &str,
    ) -> Result<Option<Box<dyn CompactionHold>>, StoreError> {
        let lease = self.sessions.inner.compaction_lease;
        match self
            .sessions
            .lock_compaction(&self.place.session, compaction_id, lease)
        {
            Ok(lock) => Ok(Some(Box::new(PgHold {
                lock,
                location: self.place.location.clone(),
            }))),
            Err(PgError::Busy { compaction_id, .. }) => Err(StoreError::Held {
                location: self.place.location.clone(),
                compaction_id,
            }),
            Err(other) => Err(other.into_store(&self.place.location, "take the compaction lock")),
        }
    }

    fn compaction_held(&mut self, compaction_id: &str) -> Result<bool, StoreError> {
        let lock = self
            .sessions
            .compaction_lock(&self.place.session)
            .map_err(|e| e.into_store(&self.place.location, "read the compaction lock"))?;
        Ok(lock.is_some_and(|l| l.live && l.compaction_id == compaction_id))
    }
}

/// The compaction lock row as the session crate's cross-process hold.
#[derive(Debug)]
struct PgHold {
    lock: CompactionLock,
    location: String,
}

impl CompactionHold for PgHold {
    fn check(&self) -> Result<(), StoreError> {
        self.lock.check().map_err(|error| match error {
            PgError::LockLost { compaction_id, .. } => StoreError::HoldLost {
                location: self.location.clone(),
                compaction_id,
            },
            other => other.into_store(&self.location, "check the compaction lock"),
        })
    }
}
