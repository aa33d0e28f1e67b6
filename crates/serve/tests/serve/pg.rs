//! A PostgreSQL schema of a test's own, on the database named by
//! `ABRIDGE_TEST_POSTGRES` (`.ci/postgres.sh` starts one), dropped when the
//! test ends. The tests that use one are `#[ignore = "needs PostgreSQL
//! ..."]`: `cargo xtask ci` runs them when the variable is set.

use std::time::Duration;

use abridge_store_postgres::PgOptions;
use abridge_store_postgres::PgSessions;

/// The variable CI sets to the test database's URL.
const URL_VAR: &str = "ABRIDGE_TEST_POSTGRES";

/// One test's schema.
pub(crate) struct PgSchema {
    url: String,
    schema: String,
}

impl PgSchema {
    /// A fresh schema named after `test`; panics without a test database
    /// (the test was asked for by name, so not running it would be a
    /// silent pass).
    pub(crate) fn new(test: &str) -> Self {
        let Ok(url) = std::env::var(URL_VAR) else {
            panic!(
                "{test} needs PostgreSQL: {URL_VAR} is not set (start one with `eval \"$(.ci/postgres.sh)\"`)"
            );
        };
        let db = PgSchema {
            url,
            schema: format!("serve_{test}_{}", std::process::id()),
        };
        if let Err(e) = db.drop_schema() {
            panic!("drop a leftover test schema: {e}");
        }
        db
    }

    /// A worker's own pool on the schema, holding compaction locks for
    /// `lease` (short in tests that kill a holder, so nobody waits long).
    pub(crate) fn connect(&self, lease: Duration) -> PgSessions {
        let options = PgOptions {
            schema: self.schema.clone(),
            compaction_lease: lease,
            ..PgOptions::default()
        };
        PgSessions::connect(&self.url, &options).expect("connect to the test database")
    }

    /// The URL and schema, for a worker in another process.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The schema name.
    pub(crate) fn schema(&self) -> &str {
        &self.schema
    }

    /// Drops the schema on a thread of its own: this may run inside a
    /// test's runtime, where blocking on another one would panic.
    fn drop_schema(&self) -> Result<(), String> {
        let (url, sql) = (
            self.url.clone(),
            format!("DROP SCHEMA IF EXISTS \"{}\" CASCADE", self.schema),
        );
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async move {
                let (client, connection) =
                    tokio_postgres::connect(&url, tokio_postgres::NoTls).await?;
                let driver = tokio::spawn(connection);
                let result = client.batch_execute(&sql).await;
                drop(client);
                let _ = driver.await;
                result
            })
        })
        .join();
        match dropped {
            Ok(result) => result.map_err(|e| e.to_string()),
            Err(_) => Err("the thread dropping it panicked".to_string()),
        }
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        // Also after a failure; a panic here would abort the test run.
        let _ = self.drop_schema();
    }
}
