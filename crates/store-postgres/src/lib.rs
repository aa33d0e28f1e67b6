//! A [`SessionStore`](abridge_session::SessionStore) on PostgreSQL, so
//! that several workers on several machines can share sessions.
//!
//! # Overview
//!
//! - [`PgSessions::connect`] (or [`connect`]) opens a pool to one schema
//!   of one database, applying the crate's migrations first (in one
//!   transaction under an advisory lock; a database newer than this build
//!   is [`PgError::SchemaTooNew`]).
//! - [`PgSessions::store`] (or [`open`]) gives the [`PgStore`] of one
//!   session: hand it to `Session::create` / `Session::open` like a
//!   `JsonlStore`.
//! - Appends are optimistic: each is one transaction that succeeds only if
//!   the log's next seq is the batch's first. Two writers cannot
//!   interleave; the loser gets `StoreError::Conflict` and nothing of its
//!   batch is written.
//! - [`PgSessions::lock_compaction`]: the compaction lock as a row with a
//!   lease that expires when its holder stops renewing it.
//!
//! # Why a runtime thread
//!
//! `SessionStore` is synchronous and the driver is async. Each
//! [`PgSessions`] runs a tokio runtime on a thread of its own and every
//! call waits there for its answer, so the store works the same from plain
//! threads and from `spawn_blocking` in an async service; see
//! docs/store-postgres.md.
//!
//! # Example
//!
//! ```no_run
//! use abridge_session::{Header, Session};
//!
//! let sessions = abridge_store_postgres::connect("postgres://abridge@localhost/abridge")?;
//! let store = sessions.store("s-42");
//! let mut session = Session::create(Box::new(store), Header::new("s-42"))?;
//! session.append_message(abridge_llm::Message::user("hello"))?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod lock;
mod log;
mod migrate;
mod runtime;
mod sessions;
mod store;
mod tls;

pub use error::PgError;
pub use lock::CompactionLock;
pub use lock::LockInfo;
pub use migrate::SCHEMA_VERSION;
pub use sessions::PgOptions;
pub use sessions::PgSessions;
pub use store::PgStore;

/// Connects to `url` with the default [`PgOptions`] (schema `abridge`).
///
/// # Errors
/// As [`PgSessions::connect`].
pub fn connect(url: &str) -> Result<PgSessions, PgError> {
    PgSessions::connect(url, &PgOptions::default())
}

/// The store of session `session_id` at `url` (schema `abridge`): the
/// one-call form for a service that picks its store by URL. Keep a
/// [`PgSessions`] instead when opening many sessions, so they share a pool.
///
/// # Errors
/// As [`PgSessions::connect`].
pub fn open(url: &str, session_id: &str) -> Result<PgStore, PgError> {
    Ok(connect(url)?.store(session_id))
}
