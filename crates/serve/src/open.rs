//! The `--store` value to a backend: a PostgreSQL URL or a directory.

use abridge_session::FsyncPolicy;

use crate::error::StoreChoiceError;
use crate::stores::JsonlDir;
use crate::stores::SessionStores;
use crate::stores_pg::PgDir;

/// Opens the backend a `--store` value names: a `postgres://` or
/// `postgresql://` URL (optionally ending in `#SCHEMA`, see
/// [`PgDir::connect`](crate::PgDir::connect)), shared by every worker
/// pointed at it, else a directory of JSONL files (created when missing)
/// for one worker.
///
/// # Errors
/// [`StoreChoiceError::Postgres`] when the database cannot be reached or
/// migrated, [`StoreChoiceError::Directory`] when the directory cannot be
/// made.
pub fn open_stores(value: &str) -> Result<Box<dyn SessionStores>, StoreChoiceError> {
    open_stores_with(value, FsyncPolicy::EveryBatch)
}

/// [`open_stores`], with JSONL sessions fsynced as `fsync` says (a
/// PostgreSQL store commits each append whatever it is).
///
/// # Errors
/// As [`open_stores`].
pub fn open_stores_with(
    value: &str,
    fsync: FsyncPolicy,
) -> Result<Box<dyn SessionStores>, StoreChoiceError> {
    if value.starts_with("postgres://") || value.starts_with("postgresql://") {
        return Ok(Box::new(PgDir::connect(value)?));
    }
    Ok(Box::new(JsonlDir::new(value)?.with_fsync(fsync)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreachable_postgres_urls_get_a_typed_error_without_the_password() {
        // Port 1 on loopback: nothing listens, the connect fails at once.
        let error = open_stores("postgres://abridge:hunter2@127.0.0.1:1/abridge").unwrap_err();
        assert!(matches!(error, StoreChoiceError::Postgres { .. }));
        let text = error.to_string();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(
            text.contains("postgres://abridge@127.0.0.1:1/abridge"),
            "{text}"
        );
    }
}
