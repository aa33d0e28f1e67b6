//! Followers hear of committed appends through LISTEN/NOTIFY.

mod common;

use std::time::Duration;

use abridge_session::Header;
use abridge_session::SessionStore;
use abridge_store_postgres::Appended;
use common::user;

/// Generous: a notification arrives in milliseconds; this only bounds a
/// broken test.
const WAIT: Duration = Duration::from_secs(30);

#[test]
fn a_follower_hears_appends_to_its_session_only() {
    let Some(db) = common::TestDb::new("follow") else {
        return;
    };
    let (writer, reader) = (db.connect(), db.connect());
    let mut a = writer.store("a");
    let mut b = writer.store("b");
    a.create(&Header::new("a")).unwrap();
    b.create(&Header::new("b")).unwrap();
    let follower = reader.subscribe(Some("b")).unwrap();
    let everything = reader.subscribe(None).unwrap();
    a.append(&[user(0, "to a")]).unwrap();
    b.append(&[user(0, "to b"), user(1, "again")]).unwrap();
    let heard = follower
        .recv_timeout(WAIT)
        .expect("a notification")
        .unwrap();
    assert_eq!(
        heard,
        Appended {
            session_id: "b".into(),
            next_seq: 2
        },
        "the append to `a` is filtered out"
    );
    let first = everything
        .recv_timeout(WAIT)
        .expect("a notification")
        .unwrap();
    let second = everything
        .recv_timeout(WAIT)
        .expect("a notification")
        .unwrap();
    assert_eq!(
        (first.session_id.as_str(), second.session_id.as_str()),
        ("a", "b"),
        "in commit order"
    );
}

#[test]
fn a_conflicting_append_notifies_nobody() {
    let Some(db) = common::TestDb::new("follow_conflict") else {
        return;
    };
    let sessions = db.connect();
    let mut store = sessions.store("s");
    store.create(&Header::new("s")).unwrap();
    let follower = sessions.subscribe(Some("s")).unwrap();
    store.append(&[user(0, "first")]).unwrap();
    assert!(store.append(&[user(0, "stale")]).is_err());
    store.append(&[user(1, "second")]).unwrap();
    let seqs: Vec<u64> = (0..2)
        .map(|_| {
            follower
                .recv_timeout(WAIT)
                .expect("a notification")
                .unwrap()
                .next_seq
        })
        .collect();
    assert_eq!(seqs, [1, 2], "the refused batch sent nothing");
}
