//! What several workers sharing one session rely on, through the
//! `SessionStore` trait: the head and the tail of the log for catching up,
//! and the compaction hold (the lock row) across workers.

mod common;

use abridge_session::Header;
use abridge_session::SessionStore;
use abridge_session::StoreError;

#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn the_head_and_the_tail_show_what_another_writer_appended() {
    let db = common::TestDb::new("shared_tail");
    let (mut one, mut two) = (db.connect().store("s"), db.connect().store("s"));
    assert!(matches!(two.head(), Err(StoreError::NotCreated { .. })));
    one.create(&Header::new("s")).unwrap();
    assert_eq!(two.head().unwrap(), Some(0));
    let written = vec![
        common::user(0, "one"),
        common::user(1, "two"),
        common::user(2, "three"),
    ];
    one.append(&written).unwrap();
    assert_eq!(two.head().unwrap(), Some(3));
    let tail = two.load_from(1).unwrap();
    let seqs: Vec<u64> = tail.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, vec![1, 2]);
    assert_eq!(tail, written[1..].to_vec());
    assert!(two.load_from(3).unwrap().is_empty());
}

#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn one_hold_per_session_across_workers_and_it_is_known_as_live() {
    let db = common::TestDb::new("shared_hold");
    let (mut one, mut two) = (db.connect().store("s"), db.connect().store("s"));
    one.create(&Header::new("s")).unwrap();
    let hold = one
        .hold_compaction("cmp-1")
        .unwrap()
        .expect("a shared store holds");
    hold.check().unwrap();
    match two.hold_compaction("cmp-2") {
        Err(StoreError::Held { compaction_id, .. }) => assert_eq!(compaction_id, "cmp-1"),
        other => panic!("a second worker must be refused, got {other:?}"),
    }
    assert!(two.compaction_held("cmp-1").unwrap());
    assert!(!two.compaction_held("cmp-2").unwrap());
    drop(hold);
    // The release runs on the store's runtime thread; wait for it, bounded.
    let mut taken = None;
    for _ in 0..500 {
        if let Ok(next) = two.hold_compaction("cmp-2") {
            taken = next;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(taken.is_some(), "the dropped hold was never released");
    assert!(!two.compaction_held("cmp-1").unwrap());
}
