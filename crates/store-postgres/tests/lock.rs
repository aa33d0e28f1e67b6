//! The compaction lock row: one live holder per session, taken over once
//! its lease expires, released on request.

mod common;

use std::time::Duration;

use abridge_session::Header;
use abridge_session::SessionStore;
use abridge_store_postgres::PgError;

const LONG: Duration = Duration::from_secs(600);

#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn a_live_lock_refuses_a_second_compaction_until_released() {
    let db = common::TestDb::new("lock_live");
    let (one, two) = (db.connect(), db.connect());
    one.store("s").create(&Header::new("s")).unwrap();
    let held = one.lock_compaction("s", "cmp-1", LONG).unwrap();
    held.check().unwrap();
    match two.lock_compaction("s", "cmp-2", LONG) {
        Err(PgError::Busy { compaction_id, .. }) => assert_eq!(compaction_id, "cmp-1"),
        other => panic!("a held lock must be busy, got {other:?}"),
    }
    let info = two.compaction_lock("s").unwrap().unwrap();
    assert_eq!((info.compaction_id.as_str(), info.live), ("cmp-1", true));
    held.release().unwrap();
    assert_eq!(two.compaction_lock("s").unwrap(), None);
    let next = two.lock_compaction("s", "cmp-2", LONG).unwrap();
    assert_eq!(next.compaction_id(), "cmp-2");
}

#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn an_expired_lease_is_stale_and_taken_over_and_its_holder_knows() {
    let db = common::TestDb::new("lock_expired");
    let (one, two) = (db.connect(), db.connect());
    one.store("s").create(&Header::new("s")).unwrap();
    // A zero lease is expired as soon as it is taken: what a crashed
    // holder's lease becomes once it stops renewing.
    let crashed = one.lock_compaction("s", "cmp-1", Duration::ZERO).unwrap();
    let info = two.compaction_lock("s").unwrap().unwrap();
    assert!(!info.live, "an expired lease is stale");
    let taker = two.lock_compaction("s", "cmp-2", LONG).unwrap();
    match crashed.check() {
        Err(PgError::LockLost { compaction_id, .. }) => assert_eq!(compaction_id, "cmp-1"),
        other => panic!("the old holder must learn it lost the lock, got {other:?}"),
    }
    // Releasing the lost lock must not free the new holder's row.
    crashed.release().unwrap();
    taker.check().unwrap();
}

#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn a_lock_on_a_session_that_does_not_exist_fails() {
    let db = common::TestDb::new("lock_missing");
    let sessions = db.connect();
    let result = sessions.lock_compaction("nobody", "cmp-1", LONG);
    assert!(matches!(result, Err(PgError::Query { .. })), "{result:?}");
}

// Issue 28: the row of a dropped lock was deleted by a task spawned on
// drop, so the next compaction of the session (often the next method of
// the same pass) could still find it and answer a spurious busy.
#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn a_dropped_lock_is_free_for_the_very_next_taker() {
    let db = common::TestDb::new("lock_dropped");
    let sessions = db.connect();
    sessions.store("s").create(&Header::new("s")).unwrap();
    for round in 0..200 {
        let lock = sessions
            .lock_compaction("s", &format!("cmp-{round}"), LONG)
            .unwrap_or_else(|e| panic!("round {round}: {e}"));
        drop(lock);
        assert_eq!(
            sessions.compaction_lock("s").unwrap(),
            None,
            "round {round}"
        );
    }
}
