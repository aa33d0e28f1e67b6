//! The store's own errors, and how they reach `SessionStore` callers.

use abridge_session::StoreError;

/// A failure of the PostgreSQL store.
///
/// The `SessionStore` methods return [`StoreError`]: a lost race is
/// [`StoreError::Conflict`], a session already there or missing is
/// `AlreadyExists` / `NotCreated`, and everything else arrives as
/// [`StoreError::Io`] whose source is this type (downcast it to tell a
/// refused connection from a schema that is too new).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PgError {
    /// The connection URL does not parse.
    #[error("bad PostgreSQL URL: {reason}")]
    Url {
        /// What is wrong (never the URL itself: it may hold a password).
        reason: String,
    },
    /// The schema name given in the options is not a plain identifier.
    #[error("bad schema name `{name}`: {reason}")]
    SchemaName {
        /// The name given.
        name: String,
        /// What is wrong.
        reason: &'static str,
    },
    /// The pool could not hand out a connection.
    #[error("{target}: cannot get a connection: {source}")]
    Pool {
        /// Database and schema, without credentials.
        target: String,
        /// The pool's error.
        #[source]
        source: deadpool_postgres::PoolError,
    },
    /// A statement failed.
    #[error("{target}: cannot {op}: {source}")]
    Query {
        /// Database and schema, without credentials.
        target: String,
        /// What we were doing (`append`, `load`, `migrate`, ...).
        op: &'static str,
        /// The driver's error.
        #[source]
        source: tokio_postgres::Error,
    },
    /// The database was migrated by a newer abridge: this build does not
    /// know its schema and refuses to touch it.
    #[error(
        "{target}: the schema is at version {found}, newer than the {supported} this build knows; upgrade abridge"
    )]
    SchemaTooNew {
        /// Database and schema.
        target: String,
        /// The version found in the database.
        found: i32,
        /// The newest version this crate ships.
        supported: i32,
    },
    /// A stored row does not decode.
    #[error("{target}: session `{session}` seq {seq}: {reason}")]
    Corrupt {
        /// Database and schema.
        target: String,
        /// The session.
        session: String,
        /// The row's seq (or -1 for the header).
        seq: i64,
        /// What is wrong.
        reason: String,
    },
    /// The compaction lock of a session is held by a live lease.
    #[error("session `{session}`: compaction `{compaction_id}` holds the lock (holder {holder})")]
    Busy {
        /// The session.
        session: String,
        /// The compaction that holds it.
        compaction_id: String,
        /// The holder's token.
        holder: String,
    },
    /// A compaction lock this process held expired and was taken by
    /// another holder (or removed): the compaction must not commit.
    #[error(
        "session `{session}`: the compaction lock of `{compaction_id}` was lost (its lease expired)"
    )]
    LockLost {
        /// The session.
        session: String,
        /// The compaction whose lock was lost.
        compaction_id: String,
    },
    /// The store's runtime thread is gone or cannot be used from here.
    #[error("the PostgreSQL store's runtime: {reason}")]
    Runtime {
        /// What happened.
        reason: String,
    },
}

impl PgError {
    /// This error as a [`StoreError`] for a `SessionStore` caller at
    /// `location`.
    pub(crate) fn into_store(self, location: &str, op: &'static str) -> StoreError {
        StoreError::Io {
            path: location.into(),
            op,
            source: std::io::Error::other(self),
        }
    }
}
