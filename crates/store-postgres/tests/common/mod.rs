//! Shared by the PostgreSQL tests: a schema of their own on the database
//! named by `ABRIDGE_TEST_POSTGRES` (started by `.ci/postgres.sh`). The
//! tests are `#[ignore = "needs PostgreSQL ..."]`, so a plain `cargo test`
//! lists them as ignored instead of passing them unrun; `cargo xtask ci`
//! runs them with `--ignored` when the variable is set, and lists them as
//! skipped otherwise.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use abridge_llm::Message;
use abridge_session::Event;
use abridge_session::EventBody;
use abridge_session::MessageEvent;
use abridge_session::SurfaceOp;
use abridge_store_postgres::PgOptions;
use abridge_store_postgres::PgSessions;

/// The variable CI sets to the test database's URL.
pub const URL_VAR: &str = "ABRIDGE_TEST_POSTGRES";

/// A schema for one test, dropped when this is dropped.
#[derive(Debug)]
pub struct TestDb {
    pub url: String,
    pub options: PgOptions,
}

impl TestDb {
    /// A fresh schema named after `test`.
    ///
    /// # Panics
    /// When no test database is configured: the test was asked for by
    /// name (`--ignored`), so not running it would be a silent pass.
    pub fn new(test: &str) -> TestDb {
        let Ok(url) = std::env::var(URL_VAR) else {
            panic!(
                "{test} needs PostgreSQL: {URL_VAR} is not set (start one with `eval \"$(.ci/postgres.sh)\"`)"
            );
        };
        let schema = format!("t_{test}_{}", std::process::id());
        let db = TestDb {
            url,
            options: PgOptions {
                schema,
                ..PgOptions::default()
            },
        };
        db.sql(&format!(
            "DROP SCHEMA IF EXISTS \"{}\" CASCADE",
            db.options.schema
        ));
        db
    }

    /// Connects (migrating the schema on first use).
    pub fn connect(&self) -> PgSessions {
        match PgSessions::connect(&self.url, &self.options) {
            Ok(sessions) => sessions,
            Err(e) => panic!("connect to the test database: {e}"),
        }
    }

    /// Runs `sql` on a connection of its own, outside the store.
    pub fn sql(&self, sql: &str) {
        if let Err(e) = self.try_sql(sql) {
            panic!("{sql}: {e}");
        }
    }

    /// The single integer `sql` returns, read in this test's schema.
    pub fn count(&self, sql: &str) -> i64 {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let scoped = format!("SET search_path TO \"{}\"", self.options.schema);
        runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(&self.url, tokio_postgres::NoTls)
                .await
                .unwrap();
            let driver = tokio::spawn(connection);
            client.batch_execute(&scoped).await.unwrap();
            let value: i64 = client.query_one(sql, &[]).await.unwrap().get(0);
            drop(client);
            let _ = driver.await;
            value
        })
    }

    fn try_sql(&self, sql: &str) -> Result<(), tokio_postgres::Error> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (client, connection) =
                tokio_postgres::connect(&self.url, tokio_postgres::NoTls).await?;
            let driver = tokio::spawn(connection);
            let result = client.batch_execute(sql).await;
            drop(client);
            let _ = driver.await;
            result
        })
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        // Also after a failure: a test's schema never outlives it.
        let _ = self.try_sql(&format!(
            "DROP SCHEMA IF EXISTS \"{}\" CASCADE",
            self.options.schema
        ));
    }
}

/// A user message at `seq` holding an image of `len` base64 characters.
pub fn image(seq: u64, len: usize, fill: char) -> Event {
    let source = abridge_llm::ImageSource::Base64 {
        media_type: "image/png".into(),
        data: std::iter::repeat_n(fill, len).collect(),
    };
    image_event(seq, source, Some(4))
}

/// A user message at `seq` whose one block is an image from `source`,
/// `side` pixels square when given.
fn image_event(seq: u64, source: abridge_llm::ImageSource, side: Option<u32>) -> Event {
    let message = Message {
        role: abridge_llm::Role::User,
        content: vec![abridge_llm::Block::Image {
            source,
            width: side,
            height: side,
        }],
        meta: abridge_llm::Meta::default(),
    };
    let mut event = user(seq, "");
    event.body = EventBody::Message(MessageEvent {
        message: Arc::new(message),
        op: SurfaceOp::Append,
        sources: Vec::new(),
    });
    event
}

/// A user message event at `seq`, child of `seq - 1`.
pub fn user(seq: u64, text: &str) -> Event {
    Event {
        seq,
        parent: seq.checked_sub(1),
        time: "2026-12-01T00:00:00.000Z".into(),
        body: EventBody::Message(MessageEvent {
            message: Arc::new(Message::user(text)),
            op: SurfaceOp::Append,
            sources: Vec::new(),
        }),
    }
}

/// A user message at `seq` that names blob `sha256` instead of carrying
/// its data: what a hostile log (or, before issue 28, a service's
/// client) writes.
pub fn blob_reference(seq: u64, sha256: &str) -> Event {
    let source = abridge_llm::ImageSource::Blob {
        media_type: "image/png".into(),
        sha256: sha256.to_string(),
        len: 100_000,
    };
    image_event(seq, source, None)
}
