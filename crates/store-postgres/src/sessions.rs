//! The connection to one database schema, from which per-session stores
//! are made.

use std::sync::Arc;

use deadpool_postgres::Client;
use deadpool_postgres::Manager;
use deadpool_postgres::ManagerConfig;
use deadpool_postgres::Pool;
use deadpool_postgres::RecyclingMethod;
use tokio_postgres::config::Host;

use crate::error::PgError;
use crate::migrate::check_schema;
use crate::migrate::migrate;
use crate::runtime::Bridge;

/// How [`PgSessions::connect`] connects.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// The PostgreSQL schema (namespace) holding abridge's tables, so one
    /// database can hold several independent abridge deployments (and
    /// tests can each have their own). Default `abridge`.
    pub schema: String,
    /// Most connections the pool opens. Default 8.
    pub pool_size: usize,
    /// The lease of the compaction hold a session's store takes
    /// (`SessionStore::hold_compaction`): how long after a worker dies its
    /// compaction stops blocking others. Renewed every third of it while
    /// the worker lives. Default 30 s.
    pub compaction_lease: std::time::Duration,
}

impl Default for PgOptions {
    fn default() -> Self {
        PgOptions {
            schema: "abridge".to_string(),
            pool_size: 8,
            compaction_lease: std::time::Duration::from_secs(30),
        }
    }
}

/// One abridge deployment in one PostgreSQL schema: a connection pool, the
/// runtime thread that drives it, and the schema brought up to date.
///
/// Cheap to clone (clones share the pool). [`PgSessions::store`] makes the
/// [`SessionStore`](abridge_session::SessionStore) of one session.
#[derive(Debug, Clone)]
pub struct PgSessions {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) bridge: Bridge,
    pub(crate) pool: Pool,
    pub(crate) schema: String,
    /// Database and schema without credentials, for messages.
    pub(crate) target: String,
    /// The lease of the holds its stores take.
    pub(crate) compaction_lease: std::time::Duration,
    applied: Vec<i32>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The config holds the password: show only the target.
        f.debug_struct("PgSessions")
            .field("target", &self.target)
            .field("applied", &self.applied)
            .finish_non_exhaustive()
    }
}

impl PgSessions {
    /// Connects to the database at `url` (a `postgres://` or
    /// `postgresql://` URL, or a `key=value` connection string), applies
    /// any pending migration to `options.schema`, and checks the schema is
    /// not newer than this build.
    ///
    /// # Errors
    /// [`PgError::Url`], [`PgError::SchemaName`], connection and query
    /// failures, [`PgError::SchemaTooNew`].
    pub fn connect(url: &str, options: &PgOptions) -> Result<Self, PgError> {
        check_schema(&options.schema)?;
        let mut config: tokio_postgres::Config = url.parse().map_err(|e| PgError::Url {
            reason: format!("{e}"),
        })?;
        // Every pooled connection resolves table names in our schema.
        let mut startup = config.get_options().unwrap_or_default().to_string();
        if !startup.is_empty() {
            startup.push(' ');
        }
        startup.push_str(&format!("-c search_path={}", options.schema));
        config.options(&startup);
        let target = describe(&config, &options.schema);
        let tls = crate::tls::connector()?;
        let manager = Manager::from_config(
            config,
            tls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(options.pool_size.max(1))
            .build()
            .map_err(|e| PgError::Runtime {
                reason: format!("cannot build the pool: {e}"),
            })?;
        let bridge = Bridge::start()?;
        let applied = {
            let pool = pool.clone();
            let schema = options.schema.clone();
            let target = target.clone();
            bridge.run(async move {
                let mut client = get(&pool, &target).await?;
                migrate(&mut client, &schema, &target).await
            })?
        };
        Ok(PgSessions {
            inner: Arc::new(Inner {
                bridge,
                pool,
                schema: options.schema.clone(),
                target,
                compaction_lease: options.compaction_lease,
                applied,
            }),
        })
    }

    /// The ids of every session in this schema, oldest first.
    ///
    /// # Errors
    /// Connection and query failures.
    pub fn list(&self) -> Result<Vec<String>, PgError> {
        self.run(|client, target| async move {
            let rows = client
                .query("SELECT id FROM sessions ORDER BY created_at, id", &[])
                .await
                .map_err(|source| PgError::Query {
                    target,
                    op: "list sessions",
                    source,
                })?;
            Ok(rows.iter().map(|row| row.get(0)).collect())
        })
    }

    /// The ids of the sessions whose id starts with `prefix`, sorted: a
    /// service that names sessions `TENANT/ID` lists one tenant's with
    /// `TENANT/`.
    ///
    /// # Errors
    /// Connection and query failures.
    pub fn list_under(&self, prefix: &str) -> Result<Vec<String>, PgError> {
        let prefix = prefix.to_string();
        self.run(|client, target| async move {
            let rows = client
                .query(
                    "SELECT id FROM sessions WHERE left(id, length($1)) = $1 ORDER BY id",
                    &[&prefix],
                )
                .await
                .map_err(|source| PgError::Query {
                    target,
                    op: "list sessions",
                    source,
                })?;
            Ok(rows.iter().map(|row| row.get(0)).collect())
        })
    }

    /// The bytes each session under `prefix` holds (its events' JSON lines
    /// and its blobs, kept by every append), sorted by id: what a service
    /// checks a tenant's quota against.
    ///
    /// # Errors
    /// Query failures.
    pub fn sizes_under(&self, prefix: &str) -> Result<Vec<(String, u64)>, PgError> {
        let prefix = prefix.to_string();
        self.run(|client, target| async move {
            let rows = client
                .query(
                    "SELECT id, bytes FROM sessions WHERE left(id, length($1)) = $1 ORDER BY id",
                    &[&prefix],
                )
                .await
                .map_err(|source| PgError::Query {
                    target,
                    op: "read session sizes",
                    source,
                })?;
            Ok(rows
                .iter()
                .map(|row| (row.get(0), row.get::<_, i64>(1).max(0) as u64))
                .collect())
        })
    }

    /// Deletes session `id` with its events, blobs and lock row; true when
    /// it existed. For undoing a create that failed half-way, before anyone
    /// else saw the session: nothing else in abridge deletes a session.
    ///
    /// # Errors
    /// Query failures.
    pub fn delete(&self, id: &str) -> Result<bool, PgError> {
        let id = id.to_string();
        self.run(|client, target| async move {
            let deleted = client
                .execute("DELETE FROM sessions WHERE id = $1", &[&id])
                .await
                .map_err(|source| PgError::Query {
                    target,
                    op: "delete a session",
                    source,
                })?;
            Ok(deleted > 0)
        })
    }

    /// The migration versions this connect applied (empty when the schema
    /// was already current).
    pub fn applied_migrations(&self) -> &[i32] {
        &self.inner.applied
    }

    /// The schema this deployment lives in.
    pub fn schema(&self) -> &str {
        &self.inner.schema
    }

    /// The database and schema, without credentials: safe to log.
    pub fn target(&self) -> &str {
        &self.inner.target
    }

    /// Runs `work` with a pooled connection on the runtime thread.
    pub(crate) fn run<T, F, Fut>(&self, work: F) -> Result<T, PgError>
    where
        F: FnOnce(Client, String) -> Fut + Send + 'static,
        Fut: std::future::Future<Output = Result<T, PgError>> + Send + 'static,
        T: Send + 'static,
    {
        let pool = self.inner.pool.clone();
        let target = self.inner.target.clone();
        self.inner.bridge.run(async move {
            let client = get(&pool, &target).await?;
            work(client, target).await
        })
    }
}

async fn get(pool: &Pool, target: &str) -> Result<Client, PgError> {
    pool.get().await.map_err(|source| PgError::Pool {
        target: target.to_string(),
        source,
    })
}

/// `postgres://HOST[:PORT]/DB#SCHEMA`, never with the user or password.
fn describe(config: &tokio_postgres::Config, schema: &str) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(name)) => name.clone(),
        Some(Host::Unix(path)) => path.display().to_string(),
        None => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .map_or(String::new(), |p| format!(":{p}"));
    let db = config.get_dbname().unwrap_or("");
    format!("postgres://{host}{port}/{db}#{schema}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_never_shows_the_password() {
        let config: tokio_postgres::Config =
            "postgres://me:secret@db.example:5433/work".parse().unwrap();
        let shown = describe(&config, "abridge");
        assert_eq!(shown, "postgres://db.example:5433/work#abridge");
        assert!(!shown.contains("secret"));
    }

    #[test]
    fn a_bad_url_or_schema_is_refused_before_connecting() {
        let url = PgSessions::connect("postgres://h/db?sslmode=sometimes", &PgOptions::default());
        assert!(matches!(url, Err(PgError::Url { .. })), "{url:?}");
        let options = PgOptions {
            schema: "Bad-Name".into(),
            ..PgOptions::default()
        };
        let schema = PgSessions::connect("postgres://h/db", &options);
        assert!(
            matches!(schema, Err(PgError::SchemaName { .. })),
            "{schema:?}"
        );
    }
}
