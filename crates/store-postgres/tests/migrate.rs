//! Migrations: applied once, idempotent, safe when workers start together;
//! a database newer than this build is refused.

mod common;

use abridge_session::BLOB_THRESHOLD;
use abridge_session::Header;
use abridge_session::SessionStore;
use abridge_session::blob_sha256;
use abridge_session::encode_event;
use abridge_store_postgres::PgError;
use abridge_store_postgres::PgSessions;
use abridge_store_postgres::SCHEMA_VERSION;

#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn the_first_connect_migrates_and_the_next_finds_nothing_to_do() {
    let db = common::TestDb::new("migrate_twice");
    let first = db.connect();
    let all: Vec<i32> = (1..=SCHEMA_VERSION).collect();
    assert_eq!(first.applied_migrations(), all.as_slice());
    first.store("kept").create(&Header::new("kept")).unwrap();
    let second = db.connect();
    assert!(second.applied_migrations().is_empty());
    assert_eq!(
        second.list().unwrap(),
        ["kept"],
        "data survives a reconnect"
    );
}

#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn workers_starting_together_apply_each_migration_once() {
    let db = common::TestDb::new("migrate_together");
    let applied: Vec<Vec<i32>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| db.connect().applied_migrations().to_vec()))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut all: Vec<i32> = applied.into_iter().flatten().collect();
    all.sort_unstable();
    assert_eq!(all, (1..=SCHEMA_VERSION).collect::<Vec<_>>());
}

#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn a_schema_newer_than_this_build_is_refused() {
    let db = common::TestDb::new("migrate_newer");
    let sessions = db.connect();
    sessions.store("kept").create(&Header::new("kept")).unwrap();
    let future = SCHEMA_VERSION + 7;
    db.sql(&format!(
        "INSERT INTO \"{}\".abridge_schema_version (version) VALUES ({future})",
        db.options.schema
    ));
    match PgSessions::connect(&db.url, &db.options) {
        Err(PgError::SchemaTooNew {
            found, supported, ..
        }) => assert_eq!((found, supported), (future, SCHEMA_VERSION)),
        other => panic!("a newer schema must be refused, got {other:?}"),
    }
}

// Issue 28: version 2 keys blobs by session. A version-1 schema's shared
// blob moves to every session whose log refers to it, so what opened
// before the upgrade opens after it.
#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn version_one_blobs_move_to_the_sessions_that_refer_to_them() {
    let db = common::TestDb::new("migrate_blobs");
    let schema = &db.options.schema;
    let data = "B".repeat(BLOB_THRESHOLD + 10);
    let hash = blob_sha256(data.as_bytes());
    let line = encode_event(&common::blob_reference(0, &hash))
        .unwrap()
        .replace('\'', "''");
    let mut rows = String::new();
    for id in ["a", "b"] {
        let header = serde_json::to_string(&Header::new(id)).unwrap();
        rows.push_str(&format!(
            "INSERT INTO sessions (id, header, next_seq) VALUES ('{id}', '{header}', 1);
             INSERT INTO events (session_id, seq, parent, type, event) VALUES ('{id}', 0, NULL, 'message', '{line}');"
        ));
    }
    db.sql(&format!(
        "CREATE SCHEMA \"{schema}\"; SET search_path TO \"{schema}\";
         {}
         CREATE TABLE abridge_schema_version (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());
         INSERT INTO abridge_schema_version (version) VALUES (1);
         {rows}
         INSERT INTO blobs (sha256, data) VALUES ('{hash}', '{data}');",
        include_str!("../migrations/0001_init.sql")
    ));
    let sessions = db.connect();
    assert_eq!(sessions.applied_migrations(), [2]);
    assert_eq!(db.count("SELECT count(*) FROM session_blobs"), 2);
    for id in ["a", "b"] {
        let loaded = sessions.store(id).load().unwrap().unwrap();
        assert_eq!(loaded.report.blobs_resolved, 1, "{id}");
    }
}
