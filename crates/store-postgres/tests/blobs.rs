//! Large images live once in the blobs table, out of the event rows, and a
//! refused batch leaves no blob behind.

mod common;

use abridge_session::BLOB_THRESHOLD;
use abridge_session::Header;
use abridge_session::SessionStore;
use common::image;

#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn a_large_image_is_kept_once_in_the_blobs_table_and_loads_back() {
    let db = common::TestDb::new("blobs_once");
    let sessions = db.connect();
    let big = image(0, BLOB_THRESHOLD + 10, 'A');
    for id in ["a", "b"] {
        let mut store = sessions.store(id);
        store.create(&Header::new(id)).unwrap();
        store.append(std::slice::from_ref(&big)).unwrap();
    }
    assert_eq!(
        db.count("SELECT count(*) FROM blobs"),
        1,
        "shared by content"
    );
    let longest = db.count("SELECT max(length(event::text))::int8 FROM events");
    assert!(
        longest < BLOB_THRESHOLD as i64,
        "the event row holds a reference, not the data ({longest} bytes)"
    );
    let small = image(1, 100, 'B');
    sessions.store("a").append(&[small]).unwrap();
    assert_eq!(
        db.count("SELECT count(*) FROM blobs"),
        1,
        "small images stay inline"
    );
    let loaded = sessions.store("b").load().unwrap().unwrap();
    assert_eq!(loaded.events, vec![big]);
    assert_eq!(loaded.report.blobs_resolved, 1);
}

#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn a_batch_refused_for_a_conflict_writes_no_blob() {
    let db = common::TestDb::new("blobs_conflict");
    let sessions = db.connect();
    let mut store = sessions.store("s");
    store.create(&Header::new("s")).unwrap();
    store.append(&[common::user(0, "first")]).unwrap();
    let stale = image(0, BLOB_THRESHOLD + 10, 'C');
    assert!(store.append(&[stale]).is_err());
    assert_eq!(db.count("SELECT count(*) FROM blobs"), 0);
    assert_eq!(db.count("SELECT count(*) FROM events"), 1);
}
