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

#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn dropping_a_lock_frees_its_row() {
    let db = common::TestDb::new("lock_dropped");
    let sessions = db.connect();
    sessions.store("s").create(&Header::new("s")).unwrap();
    drop(sessions.lock_compaction("s", "cmp-1", LONG).unwrap());
    // The delete runs on the store's runtime thread after the drop; wait
    // for it by polling, bounded in count.
    let freed = (0..500).any(|_| {
        let row = sessions.compaction_lock("s").unwrap();
        if row.is_none() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
        false
    });
    assert!(freed, "a dropped lock's row is deleted");
    sessions.lock_compaction("s", "cmp-2", LONG).unwrap();
}
