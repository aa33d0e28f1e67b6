//! The compaction lock as a row with a lease.
//!
//! In one process a `compaction/start` is live while its ticket holds a
//! lease (abridge-session's `Leases`), and stale once the owner is gone;
//! the JSONL store's writer lock is likewise freed by the kernel when its
//! process dies. Across machines nobody can see another worker die, so
//! here the lease has an expiry: the holder renews it in the background
//! (every third of its length) while the [`CompactionLock`] lives, and
//! deletes the row when it drops. A holder that crashes stops renewing,
//! and once the lease expires the row is free for the next compaction.
//! Expiry is judged by the database's clock, so workers' clocks do not
//! have to agree.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::time::Duration;

use deadpool_postgres::Client;

use crate::error::PgError;
use crate::sessions::PgSessions;

/// How many times [`PgSessions::lock_compaction`] tries to take a row it
/// found free when it looked, before it gives up and answers busy.
const TAKE_ATTEMPTS: u32 = 3;

/// Who holds a session's compaction lock, as the database sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockInfo {
    /// The compaction that took it.
    pub compaction_id: String,
    /// The holder's token.
    pub holder: String,
    /// False once the lease has expired: the compaction it guarded is
    /// stale and the lock is free.
    pub live: bool,
}

/// A held compaction lock. Renewed in the background while it lives;
/// dropping it (or [`CompactionLock::release`]) frees the row.
#[derive(Debug)]
pub struct CompactionLock {
    sessions: PgSessions,
    session_id: String,
    compaction_id: String,
    holder: String,
    lost: Arc<AtomicBool>,
    renewer: Option<tokio::task::JoinHandle<()>>,
    released: bool,
}

impl PgSessions {
    /// Takes the compaction lock of `session_id` for `compaction_id`, with
    /// a lease of `lease` (renewed while the returned lock lives). A lock
    /// whose lease expired is taken over.
    ///
    /// # Errors
    /// [`PgError::Busy`] while a live lease holds it; query failures (a
    /// session that does not exist fails its foreign key).
    pub fn lock_compaction(
        &self,
        session_id: &str,
        compaction_id: &str,
        lease: Duration,
    ) -> Result<CompactionLock, PgError> {
        let holder = new_holder();
        // A row that is gone, or has expired, by the time it is read was
        // freed between the two statements: take it again rather than
        // answer busy for a lock nobody holds.
        let mut attempts = 0;
        while !self.try_take(session_id, compaction_id, &holder, lease)? {
            attempts += 1;
            let current = self.compaction_lock(session_id)?.filter(|lock| lock.live);
            if let Some(current) = current {
                return Err(PgError::Busy {
                    session: session_id.to_string(),
                    compaction_id: current.compaction_id,
                    holder: current.holder,
                });
            }
            if attempts == TAKE_ATTEMPTS {
                return Err(PgError::Busy {
                    session: session_id.to_string(),
                    compaction_id: "(taken and freed by others while this holder tried)"
                        .to_string(),
                    holder: String::new(),
                });
            }
        }
        let lost = Arc::new(AtomicBool::new(false));
        let renewer = (!lease.is_zero()).then(|| {
            let (sessions, session, who, lost) = (
                self.clone(),
                session_id.to_string(),
                holder.clone(),
                Arc::clone(&lost),
            );
            self.inner
                .bridge
                .spawn(renew_until_lost(sessions, session, who, lease, lost))
        });
        Ok(CompactionLock {
            sessions: self.clone(),
            session_id: session_id.to_string(),
            compaction_id: compaction_id.to_string(),
            holder,
            lost,
            renewer,
            released: false,
        })
    }

    /// One attempt to insert (or take over an expired) lock row; true when
    /// this holder has it.
    fn try_take(
        &self,
        session_id: &str,
        compaction_id: &str,
        holder: &str,
        lease: Duration,
    ) -> Result<bool, PgError> {
        let millis = lease.as_secs_f64() * 1000.0;
        let (session, compaction, who) = (
            session_id.to_string(),
            compaction_id.to_string(),
            holder.to_string(),
        );
        self.run(move |client, target| async move {
            let q = |op| move |source| PgError::Query { target, op, source };
            let row = client
                .query_opt(
                    "INSERT INTO compaction_locks AS l (session_id, compaction_id, holder, expires_at)
                     VALUES ($1, $2, $3, clock_timestamp() + $4 * interval '1 millisecond')
                     ON CONFLICT (session_id) DO UPDATE
                       SET compaction_id = EXCLUDED.compaction_id,
                           holder = EXCLUDED.holder,
                           expires_at = EXCLUDED.expires_at
                       WHERE l.expires_at <= clock_timestamp()
                     RETURNING holder",
                    &[&session, &compaction, &who, &millis],
                )
                .await
                .map_err(q("take the compaction lock"))?;
            Ok(row.is_some())
        })
    }

    /// The row of `session_id`'s compaction lock, if there is one.
    ///
    /// # Errors
    /// Query failures.
    pub fn compaction_lock(&self, session_id: &str) -> Result<Option<LockInfo>, PgError> {
        let session = session_id.to_string();
        self.run(move |client, target| async move {
            let row = client
                .query_opt(
                    "SELECT compaction_id, holder, expires_at > clock_timestamp()
                     FROM compaction_locks WHERE session_id = $1",
                    &[&session],
                )
                .await
                .map_err(|source| PgError::Query {
                    target,
                    op: "read the compaction lock",
                    source,
                })?;
            Ok(row.map(|row| LockInfo {
                compaction_id: row.get(0),
                holder: row.get(1),
                live: row.get(2),
            }))
        })
    }
}

impl CompactionLock {
    /// The compaction this lock guards.
    pub fn compaction_id(&self) -> &str {
        &self.compaction_id
    }

    /// This holder's token (unique per lock taken).
    pub fn holder(&self) -> &str {
        &self.holder
    }

    /// Confirms the lock is still this holder's, the check to make just
    /// before committing a compaction.
    ///
    /// # Errors
    /// [`PgError::LockLost`] when the lease expired and the row was taken
    /// over or removed; query failures.
    pub fn check(&self) -> Result<(), PgError> {
        let lost = || PgError::LockLost {
            session: self.session_id.clone(),
            compaction_id: self.compaction_id.clone(),
        };
        if self.lost.load(Ordering::SeqCst) {
            return Err(lost());
        }
        let (session, holder) = (self.session_id.clone(), self.holder.clone());
        let ours = self.sessions.run(move |client, target| async move {
            owns(&client, &target, &session, &holder).await
        })?;
        if ours { Ok(()) } else { Err(lost()) }
    }

    /// Frees the lock now, reporting a failure (dropping frees it too,
    /// without a report).
    ///
    /// # Errors
    /// Query failures; the lease then simply expires.
    pub fn release(mut self) -> Result<(), PgError> {
        self.released = true;
        self.stop_renewing();
        self.delete_row()
    }

    /// Deletes this holder's row, waiting for the database.
    fn delete_row(&self) -> Result<(), PgError> {
        let (session, holder) = (self.session_id.clone(), self.holder.clone());
        self.sessions.run(move |client, target| async move {
            delete(&client, &target, &session, &holder).await
        })
    }

    fn stop_renewing(&mut self) {
        if let Some(renewer) = self.renewer.take() {
            renewer.abort();
        }
    }
}

impl Drop for CompactionLock {
    /// Frees the row before returning, so whatever runs next (the next
    /// method of the same pass, usually) finds the lock free: a delete
    /// only scheduled here raced that method's insert and lost often
    /// enough to answer a spurious busy (issue 28). Like every store call
    /// it blocks its thread for one round trip. On the store's own runtime
    /// thread, where waiting would wait on itself, the delete is left to
    /// run after; if it cannot run at all, the lease expires.
    fn drop(&mut self) {
        self.stop_renewing();
        if self.released {
            return;
        }
        match self.delete_row() {
            Ok(()) => {}
            Err(PgError::Runtime { .. }) => {
                let (sessions, session, holder) = (
                    self.sessions.clone(),
                    self.session_id.clone(),
                    self.holder.clone(),
                );
                self.sessions.inner.bridge.spawn(async move {
                    let pool = sessions.inner.pool.clone();
                    if let Ok(client) = pool.get().await {
                        let _ = delete(&client, &sessions.inner.target, &session, &holder).await;
                    }
                });
            }
            Err(error) => tracing::warn!(
                session = %self.session_id,
                %error,
                "cannot free a compaction lock; it is free once its lease expires"
            ),
        }
    }
}

async fn renew_until_lost(
    sessions: PgSessions,
    session: String,
    holder: String,
    lease: Duration,
    lost: Arc<AtomicBool>,
) {
    let millis = lease.as_secs_f64() * 1000.0;
    loop {
        tokio::time::sleep(lease / 3).await;
        let Ok(client) = sessions.inner.pool.get().await else {
            continue;
        };
        let renewed = client
            .execute(
                "UPDATE compaction_locks
                 SET expires_at = clock_timestamp() + $3 * interval '1 millisecond'
                 WHERE session_id = $1 AND holder = $2",
                &[&session, &holder, &millis],
            )
            .await;
        match renewed {
            Ok(0) => {
                lost.store(true, Ordering::SeqCst);
                return;
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(session, error = %e, "cannot renew a compaction lock"),
        }
    }
}

async fn owns(client: &Client, target: &str, session: &str, holder: &str) -> Result<bool, PgError> {
    client
        .query_opt(
            "SELECT 1 FROM compaction_locks
             WHERE session_id = $1 AND holder = $2 AND expires_at > clock_timestamp()",
            &[&session, &holder],
        )
        .await
        .map(|row| row.is_some())
        .map_err(|source| PgError::Query {
            target: target.to_string(),
            op: "check the compaction lock",
            source,
        })
}

async fn delete(client: &Client, target: &str, session: &str, holder: &str) -> Result<(), PgError> {
    client
        .execute(
            "DELETE FROM compaction_locks WHERE session_id = $1 AND holder = $2",
            &[&session, &holder],
        )
        .await
        .map(drop)
        .map_err(|source| PgError::Query {
            target: target.to_string(),
            op: "release the compaction lock",
            source,
        })
}

/// A token unique to this lock: process, time and a counter.
fn new_holder() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}-{nanos:x}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}
