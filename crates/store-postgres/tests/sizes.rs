//! What a session holds in bytes, kept by every append (for a service's
//! quotas), and deleting a session a failed create left.

mod common;

use abridge_session::BLOB_THRESHOLD;
use abridge_session::Header;
use abridge_session::SessionStore;

#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn every_append_adds_its_lines_and_new_blobs_to_the_session_bytes() {
    let db = common::TestDb::new("sizes");
    let sessions = db.connect();
    let mut store = sessions.store("t/a");
    store.create(&Header::new("a")).unwrap();
    store.append(&[common::user(0, "hello")]).unwrap();
    // The same image twice: its blob row, and its bytes, count once.
    let big = common::image(1, BLOB_THRESHOLD + 10, 'A');
    let mut again = common::image(2, BLOB_THRESHOLD + 10, 'A');
    again.parent = Some(1);
    store.append(&[big]).unwrap();
    store.append(&[again]).unwrap();
    sessions.store("t/b").create(&Header::new("b")).unwrap();
    sessions.store("u/c").create(&Header::new("c")).unwrap();
    let expected = db.count(
        "SELECT (SELECT sum(octet_length(event::text)) FROM events WHERE session_id = 't/a')
              + (SELECT sum(octet_length(data)) FROM session_blobs WHERE session_id = 't/a')",
    );
    assert!(expected > BLOB_THRESHOLD as i64);
    assert_eq!(
        sessions.sizes_under("t/").unwrap(),
        vec![("t/a".to_string(), expected as u64), ("t/b".to_string(), 0)]
    );
}

#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn deleting_a_session_removes_its_rows() {
    let db = common::TestDb::new("delete");
    let sessions = db.connect();
    let mut store = sessions.store("gone");
    store.create(&Header::new("gone")).unwrap();
    store
        .append(&[common::image(0, BLOB_THRESHOLD + 10, 'G')])
        .unwrap();
    assert!(sessions.delete("gone").unwrap());
    assert!(!sessions.delete("gone").unwrap());
    for table in ["sessions", "events", "session_blobs"] {
        assert_eq!(
            db.count(&format!("SELECT count(*) FROM {table}")),
            0,
            "{table}"
        );
    }
}
