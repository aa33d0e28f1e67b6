//! Migrations: applied once, idempotent, safe when workers start together;
//! a database newer than this build is refused.

mod common;

use abridge_session::Header;
use abridge_session::SessionStore;
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
