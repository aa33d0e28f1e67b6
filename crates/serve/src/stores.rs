//! Where the service keeps sessions: the [`SessionStores`] contract and
//! its JSONL backend. The `--store` value picks a backend in
//! [`open_stores`](crate::open_stores); adding one is an arm there and an
//! implementation of the trait.

use std::fmt::Debug;
use std::path::Path;
use std::path::PathBuf;

use abridge_session::FsyncPolicy;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::SessionStore;
use abridge_session::StoreError;

use crate::auth::Tenant;
use crate::error::StoreChoiceError;

/// Every tenant's sessions in one backend.
///
/// # Contract
///
/// - Sessions are named by `(tenant, id)`; a tenant never reaches another
///   tenant's session through these methods, whatever the id.
/// - `store` hands out the [`SessionStore`] for one session, existing or
///   not yet created (the session's `load` then answers `None`). The
///   service holds at most one open store per session at a time.
/// - `list` returns the ids of a tenant's created sessions, sorted.
/// - Ids reaching these methods are already checked by [`valid_id`].
pub trait SessionStores: Send + Sync + Debug {
    /// The store of session `id` of `tenant`.
    ///
    /// # Errors
    /// The backend's failure (a held lock, I/O).
    fn store(&self, tenant: &Tenant, id: &str) -> Result<Box<dyn SessionStore>, StoreError>;

    /// True when `tenant` has a session `id`.
    fn exists(&self, tenant: &Tenant, id: &str) -> bool;

    /// The tenant's session ids, sorted.
    ///
    /// # Errors
    /// The backend's failure.
    fn list(&self, tenant: &Tenant) -> Result<Vec<String>, StoreError>;

    /// What session `id` of `tenant` holds, in bytes (its log and its
    /// blobs): what the per-session quota is checked against.
    ///
    /// # Errors
    /// The backend's failure.
    fn size(&self, tenant: &Tenant, id: &str) -> Result<u64, StoreError>;

    /// What all of `tenant`'s sessions hold together, in bytes: what the
    /// tenant's quota is checked against.
    ///
    /// # Errors
    /// The backend's failure.
    fn usage(&self, tenant: &Tenant) -> Result<u64, StoreError>;

    /// Removes everything of session `id`: only for a create that failed
    /// half-way, on a session nobody else has seen (the service holds its
    /// gate, and it did not exist). Nothing else deletes a session.
    ///
    /// # Errors
    /// The backend's failure.
    fn discard(&self, tenant: &Tenant, id: &str) -> Result<(), StoreError>;
}

/// True for a session id the service accepts: 1 to 128 ASCII letters,
/// digits, `-`, `_` or `.`, not starting with `.` (so it is a safe file
/// name everywhere).
pub fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 128
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// JSONL files: `DIR/TENANT/ID.jsonl`, each with its lock file and blob
/// directory beside it, fsynced after every batch (an acknowledged append
/// survives a crash).
#[derive(Debug)]
pub struct JsonlDir {
    root: PathBuf,
    fsync: FsyncPolicy,
}

impl JsonlDir {
    /// Serves sessions under `root`, creating it when missing.
    ///
    /// # Errors
    /// [`StoreChoiceError::Directory`] when it cannot be created.
    pub fn new(root: impl Into<PathBuf>) -> Result<Self, StoreChoiceError> {
        let root = root.into();
        std::fs::create_dir_all(&root).map_err(|e| StoreChoiceError::Directory {
            path: root.display().to_string(),
            message: e.to_string(),
        })?;
        Ok(JsonlDir {
            root,
            fsync: FsyncPolicy::EveryBatch,
        })
    }

    /// The same directory with another fsync policy for the sessions it
    /// opens. `abridge proxy` syncs once per turn itself: its agent holds
    /// the whole history and resends it, so a sync per message would only
    /// put the disk's latency in front of every request.
    pub fn with_fsync(mut self, fsync: FsyncPolicy) -> Self {
        self.fsync = fsync;
        self
    }

    fn path(&self, tenant: &Tenant, id: &str) -> PathBuf {
        self.root
            .join(tenant.as_str())
            .join(format!("{id}.{EXTENSION}"))
    }

    /// A file beside the session's log: `ID.jsonl` + `suffix` (the
    /// JSONL store's `.lock` file and `.blobs` directory).
    fn beside(&self, tenant: &Tenant, id: &str, suffix: &str) -> PathBuf {
        let mut name = self.path(tenant, id).into_os_string();
        name.push(suffix);
        PathBuf::from(name)
    }
}

/// Bytes of the file at `path` (0 when it is missing).
fn file_bytes(path: &Path) -> Result<u64, StoreError> {
    match std::fs::metadata(path) {
        Ok(meta) => Ok(meta.len()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(source) => Err(StoreError::Io {
            path: path.to_path_buf(),
            op: "read a size",
            source,
        }),
    }
}

/// Bytes of the files directly in `dir` (0 when it is missing).
fn dir_bytes(dir: &Path) -> Result<u64, StoreError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(source) => {
            return Err(StoreError::Io {
                path: dir.to_path_buf(),
                op: "read the blob directory",
                source,
            });
        }
    };
    let mut total = 0;
    for entry in entries.filter_map(Result::ok) {
        total += entry.metadata().map_or(0, |meta| meta.len());
    }
    Ok(total)
}

/// Removes `path` (a file, or a directory with `all`); a missing one is
/// fine.
fn remove(path: &Path, all: bool) -> Result<(), StoreError> {
    let removed = if all {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    match removed {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(StoreError::Io {
            path: path.to_path_buf(),
            op: "remove a half-created session",
            source,
        }),
    }
}

const EXTENSION: &str = "jsonl";

impl SessionStores for JsonlDir {
    fn store(&self, tenant: &Tenant, id: &str) -> Result<Box<dyn SessionStore>, StoreError> {
        let dir = self.root.join(tenant.as_str());
        std::fs::create_dir_all(&dir).map_err(|source| StoreError::Io {
            path: dir.clone(),
            op: "create the tenant directory",
            source,
        })?;
        let options = JsonlOptions {
            fsync: self.fsync,
            ..JsonlOptions::default()
        };
        let store = JsonlStore::open(self.path(tenant, id), options)?;
        Ok(Box::new(store))
    }

    fn exists(&self, tenant: &Tenant, id: &str) -> bool {
        self.path(tenant, id).is_file()
    }

    fn list(&self, tenant: &Tenant) -> Result<Vec<String>, StoreError> {
        let dir = self.root.join(tenant.as_str());
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(StoreError::Io {
                    path: dir,
                    op: "list sessions",
                    source,
                });
            }
        };
        let mut ids: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().into_string().ok()?;
                let id = name.strip_suffix(&format!(".{EXTENSION}"))?;
                valid_id(id).then(|| id.to_string())
            })
            .collect();
        ids.sort();
        Ok(ids)
    }

    fn size(&self, tenant: &Tenant, id: &str) -> Result<u64, StoreError> {
        Ok(file_bytes(&self.path(tenant, id))? + dir_bytes(&self.beside(tenant, id, ".blobs"))?)
    }

    fn usage(&self, tenant: &Tenant) -> Result<u64, StoreError> {
        let mut total = 0;
        for id in self.list(tenant)? {
            total += self.size(tenant, &id)?;
        }
        Ok(total)
    }

    fn discard(&self, tenant: &Tenant, id: &str) -> Result<(), StoreError> {
        remove(&self.beside(tenant, id, ".blobs"), true)?;
        remove(&self.path(tenant, id), false)?;
        remove(&self.beside(tenant, id, ".lock"), false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_safe_file_names() {
        for good in ["a", "s-1", "x_y.z", &"a".repeat(128)] {
            assert!(valid_id(good), "{good}");
        }
        for bad in ["", ".hidden", "a/b", "..", "a b", &"a".repeat(129)] {
            assert!(!valid_id(bad), "{bad}");
        }
    }

    #[test]
    fn tenants_list_only_their_own_sessions() {
        let dir = tempfile::tempdir().expect("dir");
        let stores = JsonlDir::new(dir.path()).expect("stores");
        let a = Tenant::new("a").expect("a");
        let b = Tenant::new("b").expect("b");
        let mut store = stores.store(&a, "one").expect("store");
        store
            .create(&abridge_session::Header::new("one"))
            .expect("create");
        assert_eq!(stores.list(&a).expect("list"), vec!["one".to_string()]);
        assert!(stores.list(&b).expect("list").is_empty());
        assert!(stores.exists(&a, "one"));
        assert!(!stores.exists(&b, "one"));
    }

    #[test]
    fn a_discarded_session_leaves_no_file_behind() {
        let dir = tempfile::tempdir().expect("dir");
        let stores = JsonlDir::new(dir.path()).expect("stores");
        let a = Tenant::new("a").expect("a");
        let mut store = stores.store(&a, "half").expect("store");
        store
            .create(&abridge_session::Header::new("half"))
            .expect("create");
        assert!(stores.size(&a, "half").expect("size") > 0);
        assert_eq!(
            stores.usage(&a).expect("usage"),
            stores.size(&a, "half").expect("size")
        );
        drop(store);
        stores.discard(&a, "half").expect("discard");
        let left: Vec<_> = std::fs::read_dir(dir.path().join("a"))
            .expect("tenant dir")
            .filter_map(Result::ok)
            .map(|e| e.file_name())
            .collect();
        assert!(left.is_empty(), "{left:?}");
        assert!(!stores.exists(&a, "half"));
    }
}
