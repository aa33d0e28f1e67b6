//! The store conformance suite, unchanged, on PostgreSQL; and a session
//! written by one worker read back by another.

mod common;

use abridge_llm::Message;
use abridge_session::Header;
use abridge_session::Session;
use abridge_session::SessionStore;
use abridge_session::conformance;

#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn postgres_store_conforms() {
    let db = common::TestDb::new("conformance");
    let sessions = db.connect();
    let mut n = 0;
    conformance::run_all(&mut || {
        n += 1;
        Box::new(sessions.store(&format!("conformance-{n}"))) as Box<dyn SessionStore>
    });
}

#[test]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
fn a_session_written_by_one_worker_opens_on_another() {
    let db = common::TestDb::new("two_workers");
    let (first, second) = (db.connect(), db.connect());
    let mut session = Session::create(Box::new(first.store("s")), Header::new("s")).unwrap();
    session
        .append_message(Message::user("fix the build"))
        .unwrap();
    session.append_message(Message::assistant("done")).unwrap();
    let (reopened, report) = Session::open(Box::new(second.store("s"))).unwrap();
    assert_eq!(reopened.events(), session.events());
    assert_eq!(reopened.surface().seqs(), session.surface().seqs());
    assert_eq!(report, abridge_session::LoadReport::default());
    assert_eq!(second.list().unwrap(), vec!["s".to_string()]);
}
