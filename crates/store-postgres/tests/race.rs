//! Two writers racing on one session: one wins, the other gets a typed
//! conflict, nothing of the loser's batch is written, the log stays valid.

mod common;

use std::sync::Arc;
use std::sync::Barrier;

use abridge_llm::Message;
use abridge_session::Header;
use abridge_session::Session;
use abridge_session::SessionError;
use abridge_session::SessionStore;
use abridge_session::StoreError;
use common::user;

#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn of_two_sessions_open_on_one_log_the_second_writer_gets_a_conflict() {
    let db = common::TestDb::new("race_sessions");
    let (one, two) = (db.connect(), db.connect());
    let mut setup = Session::create(Box::new(one.store("s")), Header::new("s")).unwrap();
    setup.append_message(Message::user("start")).unwrap();
    let (mut a, _) = Session::open(Box::new(one.store("s"))).unwrap();
    let (mut b, _) = Session::open(Box::new(two.store("s"))).unwrap();
    a.append_message(Message::user("from a")).unwrap();
    let lost = b.append_message(Message::user("from b"));
    match lost {
        Err(SessionError::Store(StoreError::Conflict {
            expected, found, ..
        })) => assert_eq!((expected, found), (1, 2)),
        other => panic!("the second writer must get a conflict, got {other:?}"),
    }
    assert_eq!(b.events().len(), 1, "the loser's session rolled back");
    let (log, _) = Session::open(Box::new(two.store("s"))).unwrap();
    let texts: Vec<String> = log
        .events()
        .iter()
        .filter_map(|e| e.message().map(|m| m.plain_text()))
        .collect();
    assert_eq!(texts, ["start", "from a"]);
}

#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn many_writers_racing_on_one_seq_leave_exactly_one_batch() {
    let db = common::TestDb::new("race_threads");
    const WRITERS: usize = 4;
    const ROUNDS: u64 = 5;
    let workers: Vec<_> = (0..WRITERS).map(|_| db.connect()).collect();
    workers[0].store("s").create(&Header::new("s")).unwrap();
    for round in 0..ROUNDS {
        let barrier = Arc::new(Barrier::new(WRITERS));
        let results: Vec<Result<(), StoreError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = workers
                .iter()
                .enumerate()
                .map(|(w, sessions)| {
                    let barrier = Arc::clone(&barrier);
                    let mut store = sessions.store("s");
                    scope.spawn(move || {
                        // Each writer's batch: three events from seq 3*round.
                        let batch: Vec<_> = (0..3)
                            .map(|i| user(round * 3 + i, &format!("writer {w} round {round}")))
                            .collect();
                        barrier.wait();
                        store.append(&batch)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let wins = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(
            wins, 1,
            "round {round}: exactly one writer wins: {results:?}"
        );
        for result in results.iter().filter(|r| r.is_err()) {
            assert!(
                matches!(result, Err(StoreError::Conflict { found, .. }) if *found == round * 3 + 3),
                "round {round}: the losers get a conflict: {result:?}"
            );
        }
    }
    let (session, _) = Session::open(Box::new(workers[1].store("s"))).unwrap();
    let events = session.events();
    assert_eq!(events.len() as u64, ROUNDS * 3);
    for round in events.chunks(3) {
        let texts: Vec<String> = round
            .iter()
            .filter_map(|e| e.message().map(|m| m.plain_text()))
            .collect();
        assert!(
            texts.iter().all(|t| *t == texts[0]),
            "one writer's batch per round, never interleaved: {texts:?}"
        );
    }
}
