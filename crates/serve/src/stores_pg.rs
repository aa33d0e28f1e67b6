//! Sessions in PostgreSQL: every tenant's sessions in one schema, shared
//! by every worker pointed at it.
//!
//! A session's key in the store is `TENANT/ID`. A tenant name is ASCII
//! letters, digits, `-` and `_`, and an id never holds `/` ([`valid_id`]),
//! so the first `/` always splits the key back into its two parts: two
//! different `(tenant, id)` pairs never share a key, and a tenant's
//! listing (the keys under `TENANT/`) never shows another tenant's.

use abridge_session::SessionStore;
use abridge_session::StoreError;
use abridge_store_postgres::PgOptions;
use abridge_store_postgres::PgSessions;

use crate::auth::Tenant;
use crate::error::StoreChoiceError;
use crate::stores::SessionStores;
use crate::stores::valid_id;

/// Every tenant's sessions in one PostgreSQL schema.
#[derive(Debug, Clone)]
pub struct PgDir {
    sessions: PgSessions,
}

impl PgDir {
    /// Serves the sessions of an open deployment (its schema, pool and
    /// compaction lease).
    pub fn new(sessions: PgSessions) -> Self {
        PgDir { sessions }
    }

    /// Connects to the `--store` URL: `postgres://...`, optionally ending in
    /// `#SCHEMA` to pick the schema (default `abridge`), the form the store
    /// prints its targets in.
    ///
    /// # Errors
    /// [`StoreChoiceError::Postgres`] naming the URL without its password.
    pub fn connect(value: &str) -> Result<Self, StoreChoiceError> {
        let (url, schema) = match value.rsplit_once('#') {
            Some((url, schema)) => (url, Some(schema)),
            None => (value, None),
        };
        let mut options = PgOptions::default();
        if let Some(schema) = schema {
            options.schema = schema.to_string();
        }
        let sessions =
            PgSessions::connect(url, &options).map_err(|e| StoreChoiceError::Postgres {
                url: without_password(value),
                message: e.to_string(),
            })?;
        tracing::info!(target = sessions.target(), "sessions in PostgreSQL");
        Ok(PgDir { sessions })
    }

    /// The deployment, for locks and followers.
    pub fn sessions(&self) -> &PgSessions {
        &self.sessions
    }
}

/// `scheme://user:secret@host/...` with the secret left out, for errors.
fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let Some((userinfo, host)) = rest.split_once('@') else {
        return url.to_string();
    };
    let user = userinfo.split(':').next().unwrap_or_default();
    format!("{scheme}://{user}@{host}")
}

/// The store key of a tenant's session.
fn key(tenant: &Tenant, id: &str) -> String {
    format!("{tenant}/{id}")
}

impl SessionStores for PgDir {
    fn store(&self, tenant: &Tenant, id: &str) -> Result<Box<dyn SessionStore>, StoreError> {
        Ok(Box::new(self.sessions.store(&key(tenant, id))))
    }

    fn exists(&self, tenant: &Tenant, id: &str) -> bool {
        // The head answers `NotCreated` for a missing session.
        self.sessions.store(&key(tenant, id)).head().is_ok()
    }

    fn list(&self, tenant: &Tenant) -> Result<Vec<String>, StoreError> {
        let prefix = format!("{tenant}/");
        let keys = self
            .sessions
            .list_under(&prefix)
            .map_err(|e| self.failed("list sessions", e))?;
        let mut ids: Vec<String> = keys
            .iter()
            .filter_map(|k| k.strip_prefix(&prefix))
            .filter(|id| valid_id(id))
            .map(str::to_string)
            .collect();
        ids.sort();
        Ok(ids)
    }

    fn size(&self, tenant: &Tenant, id: &str) -> Result<u64, StoreError> {
        let key = key(tenant, id);
        let sizes = self
            .sessions
            .sizes_under(&key)
            .map_err(|e| self.failed("read a size", e))?;
        Ok(sizes
            .into_iter()
            .find_map(|(found, bytes)| (found == key).then_some(bytes))
            .unwrap_or(0))
    }

    fn usage(&self, tenant: &Tenant) -> Result<u64, StoreError> {
        let sizes = self
            .sessions
            .sizes_under(&format!("{tenant}/"))
            .map_err(|e| self.failed("read the tenant's sizes", e))?;
        Ok(sizes.into_iter().map(|(_, bytes)| bytes).sum())
    }

    fn discard(&self, tenant: &Tenant, id: &str) -> Result<(), StoreError> {
        self.sessions
            .delete(&key(tenant, id))
            .map(drop)
            .map_err(|e| self.failed("remove a half-created session", e))
    }
}

impl PgDir {
    /// A PostgreSQL failure as the store error the trait returns.
    fn failed(&self, op: &'static str, error: abridge_store_postgres::PgError) -> StoreError {
        StoreError::Io {
            path: self.sessions.target().into(),
            op,
            source: std::io::Error::other(error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_never_collide_across_tenants() {
        let a = Tenant::new("a").expect("a");
        let a_b = Tenant::new("a_b").expect("a_b");
        assert_ne!(key(&a, "b_c"), key(&a_b, "c"));
        assert_eq!(key(&a, "x.y"), "a/x.y");
        let (tenant, id) = key(&a_b, "s-1")
            .split_once('/')
            .map(|(t, i)| (t.to_string(), i.to_string()))
            .expect("split");
        assert_eq!((tenant.as_str(), id.as_str()), ("a_b", "s-1"));
    }

    #[test]
    fn a_bad_url_is_named_without_its_password() {
        let error = PgDir::connect("postgres://me:hunter2@h/db?sslmode=sometimes").unwrap_err();
        let text = error.to_string();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(text.contains("postgres://me@h/db"), "{text}");
    }
}
