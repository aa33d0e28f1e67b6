//! Large images live in their session's blob rows, out of the event rows;
//! a session reads only its own blobs; a refused batch leaves no blob
//! behind; a version-1 schema's shared blobs move to the sessions that
//! refer to them.

mod common;

use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_session::BLOB_THRESHOLD;
use abridge_session::EventBody;
use abridge_session::Header;
use abridge_session::SessionStore;
use abridge_session::StoreError;
use abridge_session::blob_sha256;
use common::image;

#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn a_large_image_is_kept_out_of_the_event_row_and_loads_back() {
    let db = common::TestDb::new("blobs_once");
    let sessions = db.connect();
    let big = image(0, BLOB_THRESHOLD + 10, 'A');
    for id in ["a", "b"] {
        let mut store = sessions.store(id);
        store.create(&Header::new(id)).unwrap();
        store.append(std::slice::from_ref(&big)).unwrap();
    }
    assert_eq!(
        db.count("SELECT count(*) FROM session_blobs"),
        2,
        "one row per session that wrote it"
    );
    let longest = db.count("SELECT max(length(event::text))::int8 FROM events");
    assert!(
        longest < BLOB_THRESHOLD as i64,
        "the event row holds a reference, not the data ({longest} bytes)"
    );
    let small = image(1, 100, 'B');
    sessions.store("a").append(&[small]).unwrap();
    assert_eq!(
        db.count("SELECT count(*) FROM session_blobs"),
        2,
        "small images stay inline"
    );
    let loaded = sessions.store("b").load().unwrap().unwrap();
    assert_eq!(loaded.events, vec![big]);
    assert_eq!(loaded.report.blobs_resolved, 1);
}

// Issue 28: the blobs table was shared by every session, so a session
// whose log named another's hash read that image back, byte for byte.
#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn a_session_cannot_read_another_sessions_blob_by_naming_its_hash() {
    let db = common::TestDb::new("blobs_borrowed");
    let sessions = db.connect();
    let secret = image(0, BLOB_THRESHOLD + 10, 'S');
    let EventBody::Message(m) = &secret.body else {
        unreachable!()
    };
    let Block::Image {
        source: ImageSource::Base64 { data, .. },
        ..
    } = &m.message.content[0]
    else {
        unreachable!()
    };
    let hash = blob_sha256(data.as_bytes());
    let mut owner = sessions.store("team-a/main");
    owner.create(&Header::new("main")).unwrap();
    owner.append(&[secret]).unwrap();

    let mut other = sessions.store("team-b/main");
    other.create(&Header::new("main")).unwrap();
    other.append(&[common::blob_reference(0, &hash)]).unwrap();
    let error = sessions.store("team-b/main").load().unwrap_err();
    match &error {
        StoreError::Blob { sha256, reason, .. } => {
            assert_eq!(sha256, &hash);
            assert!(reason.contains("missing"), "{error}");
        }
        other => panic!("expected a missing blob, got {other:?}"),
    }
    assert!(!error.to_string().contains(&"S".repeat(64)), "{error}");
}

#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn a_reference_that_is_not_a_key_loads_as_a_marker_without_a_query() {
    let db = common::TestDb::new("blobs_bad_key");
    let sessions = db.connect();
    let mut store = sessions.store("s");
    store.create(&Header::new("s")).unwrap();
    store
        .append(&[common::blob_reference(0, "'); DROP TABLE events; --")])
        .unwrap();
    let loaded = store.load().unwrap().unwrap();
    let EventBody::Message(m) = &loaded.events[0].body else {
        panic!("{:?}", loaded.events[0]);
    };
    assert_eq!(
        m.message.content,
        vec![Block::text(abridge_session::BAD_BLOB_REFERENCE)]
    );
    assert_eq!(db.count("SELECT count(*) FROM events"), 1);
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
    assert_eq!(db.count("SELECT count(*) FROM session_blobs"), 0);
    assert_eq!(db.count("SELECT count(*) FROM events"), 1);
}
