//! The service over PostgreSQL: the paths an agent uses on one worker,
//! then several workers sharing sessions (alternating appends, a
//! compaction on one while the other appends, a worker killed with
//! SIGKILL). Each test skips, saying why, when `ABRIDGE_TEST_POSTGRES` is
//! not set.

use std::sync::Arc;
use std::time::Duration;

use abridge_session::Session;
use abridge_store_postgres::PgSessions;
use serde_json::Value;
use serde_json::json;

use crate::common::Api;
use crate::common::Gate;
use crate::common::Running;
use crate::common::Setup;
use crate::common::TOKEN_A;
use crate::common::TOKEN_B;
use crate::common::fill;
use crate::common::small;
use crate::common::turn;
use crate::kill::CHILD_LEASE;
use crate::kill::Server;
use crate::kill::markers;
use crate::pg::PgSchema;

/// The lease of in-process workers: long, nobody here dies holding it.
const LEASE: Duration = Duration::from_secs(30);
/// Turns before a compaction: enough that a manual pass has history to
/// hide beyond what it keeps.
const TURNS: usize = 40;

/// A worker on `db` with its own pool, and optionally a summarizer.
async fn worker(db: &PgSchema, summarizer: Option<Arc<Gate>>) -> (Running, Api) {
    let mut setup = Setup::new(std::path::Path::new("unused"));
    setup.pg = Some(db.connect(LEASE));
    setup.summarizer = summarizer.map(|gate| gate as Arc<dyn abridge_llm::LlmClient>);
    let running = setup.start().await;
    let api = running.client(TOKEN_A);
    (running, api)
}

/// `team-a`'s session `id`, read straight from the database.
fn read(pg: &PgSessions, id: &str) -> Session {
    Session::open(Box::new(pg.store(&format!("team-a/{id}"))))
        .expect("open from PostgreSQL")
        .0
}

/// The marker numbers of the user messages in the whole log, in log order.
fn logged_markers(session: &Session) -> Vec<usize> {
    session
        .events()
        .iter()
        .filter_map(|event| {
            let text = event.message()?.content.first()?.as_text()?;
            text.strip_prefix("marker-")?
                .split(':')
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

/// The log is valid: every invariant holds and no compaction is open.
fn assert_valid(session: &Session) {
    let report = abridge_compact::check::check_invariants(session);
    assert!(report.is_ok(), "{:?}", report.violations);
}

/// Appends one turn to `id`, answering the status.
async fn append(api: &Api, id: &str, i: usize) -> (u16, Value) {
    api.post(
        &format!("/v1/sessions/{id}/messages"),
        &json!({"messages": turn(i)}),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
async fn create_append_request_compact_and_restart_over_postgres() {
    let db = PgSchema::new("paths");
    let (server, api) = worker(&db, None).await;
    api.create(&small("s", &["digest"])).await;
    let (status, again) = api.post("/v1/sessions", &small("s", &["digest"])).await;
    assert_eq!(status, 409, "{again}");
    let (_, listed) = api.get("/v1/sessions").await;
    assert_eq!(listed["sessions"], json!(["s"]));
    let other = server.client(TOKEN_B);
    let (_, theirs) = other.get("/v1/sessions").await;
    assert_eq!(theirs["sessions"], json!([]), "another tenant's listing");
    let (status, _) = other.get("/v1/sessions/s/context").await;
    assert_eq!(status, 404, "another tenant's session");

    let mut turns = 0;
    loop {
        let appended = fill(&api, "s", turns..turns + 1).await;
        turns += 1;
        if appended["over_threshold"] == true {
            break;
        }
        assert!(turns < 200, "never crossed the threshold: {appended}");
    }
    let (status, pass) = api.post("/v1/sessions/s/after-turn", &json!({})).await;
    assert_eq!(status, 200, "{pass}");
    assert_eq!(pass["status"], "succeeded", "{pass}");
    let (status, request) = api.get("/v1/sessions/s/request").await;
    assert_eq!(status, 200, "{request}");
    fill(&api, "s", turns..turns + 4).await;
    let (status, manual) = api
        .post("/v1/sessions/s/compact", &json!({"methods": ["digest"]}))
        .await;
    assert_eq!(status, 200, "{manual}");
    assert_eq!(manual["outcomes"][0]["method"], "digest", "{manual}");
    server.shutdown().await;

    // Restarted on a new pool: every turn is in the log, the newest on
    // the surface.
    let (server, api) = worker(&db, None).await;
    let (status, context) = api.get("/v1/sessions/s/context").await;
    assert_eq!(status, 200, "{context}");
    assert!(markers(&context).contains(&(turns + 3)), "{context}");
    let session = read(&db.connect(LEASE), "s");
    assert_eq!(logged_markers(&session), (0..turns + 4).collect::<Vec<_>>());
    assert_valid(&session);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
async fn two_workers_appending_in_turn_keep_every_message_once_in_order() {
    let db = PgSchema::new("alternate");
    let (one, api_one) = worker(&db, None).await;
    let (two, api_two) = worker(&db, None).await;
    api_one.create(&small("s", &["digest"])).await;
    for i in 0..20 {
        let api = if i % 2 == 0 { &api_one } else { &api_two };
        let (status, body) = append(api, "s", i).await;
        assert_eq!(status, 200, "turn {i}: {body}");
        assert_eq!(body["seqs"][0], json!(2 * i + 1), "turn {i}: {body}");
    }
    let (_, context) = api_one.get("/v1/sessions/s/context").await;
    assert_eq!(markers(&context), (0..20).collect::<Vec<_>>());
    let session = read(&db.connect(LEASE), "s");
    assert_eq!(logged_markers(&session), (0..20).collect::<Vec<_>>());
    assert_valid(&session);
    one.shutdown().await;
    two.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
async fn a_compaction_on_one_worker_while_the_other_appends() {
    let db = PgSchema::new("compact_while");
    let gate = Arc::new(Gate::default());
    let (one, api_one) = worker(&db, Some(gate.clone())).await;
    let (two, api_two) = worker(&db, None).await;
    api_one.create(&small("s", &["soft", "digest"])).await;
    fill(&api_one, "s", 0..TURNS).await;

    let compacting = tokio::spawn({
        let api = api_one.clone();
        async move {
            api.post("/v1/sessions/s/compact", &json!({"methods": ["soft"]}))
                .await
        }
    });
    for _ in 0..4000 {
        if gate.arrived.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        gate.arrived.load(std::sync::atomic::Ordering::SeqCst) > 0,
        "the compaction never reached its summarizer"
    );
    // The first worker's compaction is in flight, holding the lock row.
    fill(&api_two, "s", TURNS..TURNS + 3).await;
    let (status, refused) = api_two
        .post("/v1/sessions/s/compact", &json!({"methods": ["digest"]}))
        .await;
    assert_eq!(status, 200, "{refused}");
    assert_eq!(refused["status"], "busy", "{refused}");

    gate.release(Gate::MANY);
    let (status, pass) = compacting.await.expect("join");
    assert_eq!(status, 200, "{pass}");
    assert_eq!(pass["outcomes"][0]["method"], "soft", "{pass}");
    // The checkpoint landed after the other worker's turns, which stay
    // on the surface behind it.
    let (_, context) = api_two.get("/v1/sessions/s/context").await;
    let visible = markers(&context);
    for i in TURNS..TURNS + 3 {
        assert!(
            visible.contains(&i),
            "turn {i} left the surface: {visible:?}"
        );
    }
    let session = read(&db.connect(LEASE), "s");
    assert_eq!(logged_markers(&session), (0..TURNS + 3).collect::<Vec<_>>());
    assert_valid(&session);
    assert!(abridge_compact::host::unmatched_starts(&session).is_empty());
    one.shutdown().await;
    two.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
async fn a_killed_worker_loses_nothing_acknowledged_and_the_other_compacts_next() {
    let db = PgSchema::new("killed");
    let dir = tempfile::tempdir().expect("dir");
    let target = format!("{}#{}", db.url(), db.schema());
    // The child's summarizer never answers: its compaction hangs until
    // the SIGKILL.
    let child = Server::start_on(dir.path(), Some(&target), true).await;
    let api_child = Api::new(&child.base, Some(TOKEN_A));
    let (survivor, api) = worker(&db, None).await;
    api_child.create(&small("s", &["soft", "digest"])).await;
    let mut acked = Vec::new();
    for i in 0..TURNS {
        let (status, body) = append(&api_child, "s", i).await;
        assert_eq!(status, 200, "{body}");
        acked.push(i);
    }
    let compacting = tokio::spawn({
        let api = api_child.clone();
        async move { api.try_post("/v1/sessions/s/compact", &json!({})).await }
    });
    let pg = db.connect(LEASE);
    for _ in 0..2000 {
        if pg.compaction_lock("team-a/s").expect("lock row").is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(pg.compaction_lock("team-a/s").expect("lock row").is_some());
    child.kill();
    assert!(
        compacting.await.expect("join").is_none(),
        "no answer from a killed worker"
    );

    // The survivor sees every acknowledged turn, and compacts once the
    // dead worker's lease has lapsed (until then the lock row answers
    // busy). Bounded: the lease is CHILD_LEASE, renewed by nobody.
    let (status, context) = api.get("/v1/sessions/s/context").await;
    assert_eq!(status, 200, "{context}");
    assert_eq!(markers(&context), acked);
    let mut pass = Value::Null;
    for _ in 0..(CHILD_LEASE.as_millis() / 50 + 200) {
        let (status, body) = api
            .post("/v1/sessions/s/compact", &json!({"methods": ["digest"]}))
            .await;
        assert_eq!(status, 200, "{body}");
        pass = body;
        if pass["status"] != "busy" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(pass["outcomes"][0]["method"], "digest", "{pass}");
    let session = read(&pg, "s");
    assert_eq!(logged_markers(&session), acked);
    assert_valid(&session);
    assert!(
        abridge_compact::host::unmatched_starts(&session).is_empty(),
        "the dead worker's start was closed as stale"
    );
    survivor.shutdown().await;
}
