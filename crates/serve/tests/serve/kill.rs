//! SIGKILL of a serve process in the middle of appends and of a
//! compaction, then a restart on the same store: nothing acknowledged is
//! lost, the stale compaction start is recognised and closed, and the
//! next compaction succeeds.
//!
//! The server runs in a child process: this test binary started again
//! with only [`child_server`] selected and the environment telling it
//! where to serve from.

use std::path::Path;
use std::process::Child;
use std::process::Command;
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::json;

use crate::common::Api;
use crate::common::Gate;
use crate::common::Setup;
use crate::common::TOKEN_A;
use crate::common::ends;
use crate::common::open_log;
use crate::common::small;
use crate::common::turn;
use crate::common::wait_in_log;

const CHILD_DIR: &str = "ABRIDGE_SERVE_TEST_CHILD_DIR";
const CHILD_PORT_FILE: &str = "ABRIDGE_SERVE_TEST_CHILD_PORT_FILE";
const CHILD_HANG: &str = "ABRIDGE_SERVE_TEST_CHILD_HANG";
/// `URL#SCHEMA`: the child serves from PostgreSQL instead of its directory.
const CHILD_PG: &str = "ABRIDGE_SERVE_TEST_CHILD_PG";
/// `name=value,...`: limits of the child's own (see [`set_limits`]).
const CHILD_LIMITS: &str = "ABRIDGE_SERVE_TEST_CHILD_LIMITS";
/// Set: the child stops on SIGTERM (else only a kill stops it).
const CHILD_SIGTERM: &str = "ABRIDGE_SERVE_TEST_CHILD_SIGTERM";

/// The compaction lease of a child worker on PostgreSQL: short, so the
/// worker that outlives it does not wait long for the lock row.
pub(crate) const CHILD_LEASE: Duration = Duration::from_secs(2);

/// The server side: does nothing unless started by [`Server::start`].
#[test]
fn child_server() {
    let (Some(dir), Some(port_file)) = (
        std::env::var_os(CHILD_DIR),
        std::env::var_os(CHILD_PORT_FILE),
    ) else {
        return;
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async move {
        let gate = if std::env::var_os(CHILD_HANG).is_some() {
            Gate::default()
        } else {
            Gate::opened()
        };
        let mut setup = Setup::new(Path::new(&dir));
        setup.summarizer = Some(Arc::new(gate));
        if let Some(pg) = std::env::var_os(CHILD_PG) {
            let pg = pg.to_string_lossy().into_owned();
            let (url, schema) = pg.rsplit_once('#').expect("URL#SCHEMA");
            let options = abridge_store_postgres::PgOptions {
                schema: schema.to_string(),
                compaction_lease: CHILD_LEASE,
                ..abridge_store_postgres::PgOptions::default()
            };
            setup.pg =
                Some(abridge_store_postgres::PgSessions::connect(url, &options).expect("connect"));
        }
        if let Some(limits) = std::env::var_os(CHILD_LIMITS) {
            set_limits(&mut setup.limits, &limits.to_string_lossy());
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let service = abridge_serve::Service::new(setup.config()).expect("a valid configuration");
        let temp = Path::new(&port_file).with_extension("tmp");
        std::fs::write(&temp, port.to_string()).expect("port");
        std::fs::rename(&temp, &port_file).expect("port");
        if std::env::var_os(CHILD_SIGTERM).is_some() {
            service
                .run(listener, abridge_serve::shutdown_signal())
                .await
                .expect("serve");
        } else {
            service
                .run(listener, std::future::pending())
                .await
                .expect("serve");
        }
    });
}

/// Sets the limits named in `spec` (`name=value,...`; times in seconds).
fn set_limits(limits: &mut abridge_serve::ServiceLimits, spec: &str) {
    for pair in spec.split(',').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').expect("name=value");
        let number: u64 = value.parse().expect("a number");
        let secs = Duration::from_secs(number);
        match name {
            "open_sessions" => limits.open_sessions = number as usize,
            "session_idle" => limits.session_idle = secs,
            "header_timeout" => limits.header_timeout = secs,
            "shutdown_timeout" => limits.shutdown_timeout = secs,
            "max_connections" => limits.max_connections = number as usize,
            other => panic!("no limit {other} in the child's list"),
        }
    }
}

/// How a child server is started.
#[derive(Debug, Default, Clone)]
pub(crate) struct ChildOptions {
    /// Serve from PostgreSQL (`URL#SCHEMA`) instead of `dir/store`.
    pub(crate) pg: Option<String>,
    /// Its summarizer never answers.
    pub(crate) hang: bool,
    /// Limits of its own: `name=value,...` ([`set_limits`]).
    pub(crate) limits: String,
    /// It stops on SIGTERM.
    pub(crate) sigterm: bool,
}

/// A server process, killed on drop.
pub(crate) struct Server {
    child: Child,
    pub(crate) base: String,
}

impl Server {
    async fn start(dir: &Path, hang: bool) -> Self {
        Self::start_on(dir, None, hang).await
    }

    /// A worker serving from `pg` (`URL#SCHEMA`) when given, else from
    /// `dir/store`; `hang`: its summarizer never answers.
    pub(crate) async fn start_on(dir: &Path, pg: Option<&str>, hang: bool) -> Self {
        let child = ChildOptions {
            pg: pg.map(str::to_string),
            hang,
            ..ChildOptions::default()
        };
        Self::start_child(dir, &child).await
    }

    /// A server process as `child` says, serving `dir/store` unless it
    /// names a database.
    pub(crate) async fn start_child(dir: &Path, child: &ChildOptions) -> Self {
        let (pg, hang) = (child.pg.as_deref(), child.hang);
        let port_file = dir.join(format!("port-{}", std::process::id()));
        let _ = std::fs::remove_file(&port_file);
        let mut command = Command::new(std::env::current_exe().expect("exe"));
        command
            .args([
                "--exact",
                "kill::child_server",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_DIR, dir.join("store"))
            .env(CHILD_PORT_FILE, &port_file)
            .env_remove(CHILD_HANG)
            .env_remove(CHILD_PG)
            .env(CHILD_LIMITS, &child.limits)
            .env_remove(CHILD_SIGTERM);
        if child.sigterm {
            command.env(CHILD_SIGTERM, "1");
        }
        if let Some(pg) = pg {
            command.env(CHILD_PG, pg);
        }
        if hang {
            command.env(CHILD_HANG, "1");
        }
        // The child's own test harness lines would mix into ours.
        command.stdout(std::process::Stdio::null());
        let mut server = Server {
            child: command.spawn().expect("spawn"),
            base: String::new(),
        };
        for _ in 0..3000 {
            if let Ok(port) = std::fs::read_to_string(&port_file) {
                server.base = format!("http://127.0.0.1:{port}");
                return server;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the server process never wrote its port");
    }

    /// SIGKILL, and wait for the process to be gone.
    pub(crate) fn kill(mut self) {
        self.child.kill().expect("kill");
        self.child.wait().expect("wait");
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM.
    pub(crate) fn terminate(&self) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success(), "kill -TERM failed");
    }

    /// The exit status once the process has ended, polling every 50 ms for
    /// at most `limit` (a guard against a hang, not a measurement).
    pub(crate) async fn exited_within(
        &mut self,
        limit: Duration,
    ) -> Option<std::process::ExitStatus> {
        let polls = limit.as_millis() / 50;
        for _ in 0..polls {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return Some(status);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        None
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The marker numbers of the user messages in `context`.
pub(crate) fn markers(context: &serde_json::Value) -> Vec<usize> {
    context["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| {
            let text = m["message"]["content"][0]["text"].as_str()?;
            text.strip_prefix("marker-")?
                .split(':')
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_append_and_mid_compaction_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().expect("dir");
    let store = dir.path().join("store");

    // 1. Appends racing a SIGKILL.
    let server = Server::start(dir.path(), false).await;
    let api = Api::new(&server.base, Some(TOKEN_A));
    api.create(&small("s", &["soft"])).await;
    let acked = Arc::new(Mutex::new(Vec::new()));
    let writer = tokio::spawn({
        let api = api.clone();
        let acked = acked.clone();
        async move {
            for i in 0.. {
                let body = json!({"messages": turn(i)});
                match api.try_post("/v1/sessions/s/messages", &body).await {
                    Some((200, _)) => acked.lock().expect("lock").push(i),
                    _ => return,
                }
            }
        }
    });
    while acked.lock().expect("lock").len() < 40 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    server.kill();
    writer.await.expect("writer");
    let acked = acked.lock().expect("lock").clone();
    // A kill mid-write can leave a torn tail, which the restarted server
    // refuses, as every writer does, until `abridge repair` sets it aside:
    // do what that does (nothing acknowledged is in it, as step 2 checks).
    let log = store.join("team-a").join("s.jsonl");
    abridge_session::JsonlStore::open(&log, abridge_session::JsonlOptions::default())
        .expect("store")
        .set_aside_torn()
        .expect("set aside a torn tail");

    // 2. A compaction caught in flight by a SIGKILL.
    let server = Server::start(dir.path(), true).await;
    let api = Api::new(&server.base, Some(TOKEN_A));
    let (status, context) = api.get("/v1/sessions/s/context").await;
    assert_eq!(status, 200, "{context}");
    let seen = markers(&context);
    for i in &acked {
        assert!(seen.contains(i), "acknowledged turn {i} was lost");
    }
    let compacting = tokio::spawn({
        let api = api.clone();
        async move { api.try_post("/v1/sessions/s/compact", &json!({})).await }
    });
    wait_in_log(&store, "s", "compaction/start").await;
    server.kill();
    assert!(
        compacting.await.expect("join").is_none(),
        "no answer from a killed server"
    );
    let crashed = open_log(&store, "s");
    assert_eq!(abridge_compact::host::unmatched_starts(&crashed).len(), 1);

    // 3. Restarted: the stale start is closed on open, the next
    // compaction succeeds, and every acknowledged turn is still there.
    let server = Server::start(dir.path(), false).await;
    let api = Api::new(&server.base, Some(TOKEN_A));
    let (status, _) = api.get("/v1/sessions/s/stats").await;
    assert_eq!(status, 200);
    let reopened = open_log(&store, "s");
    assert!(abridge_compact::host::unmatched_starts(&reopened).is_empty());
    assert_eq!(ends(&reopened), vec![("stale".to_string(), None)]);
    let (status, pass) = api.post("/v1/sessions/s/compact", &json!({})).await;
    assert_eq!(status, 200, "{pass}");
    assert_eq!(pass["status"], "succeeded", "{pass}");
    let (_, recalled) = api
        .post(
            "/v1/sessions/s/recall",
            &json!({"query": format!("marker-{}", acked[0])}),
        )
        .await;
    assert!(
        recalled["text"]
            .as_str()
            .is_some_and(|t| t.contains(&format!("marker-{}", acked[0]))),
        "{recalled}"
    );
    let (_, context) = api.get("/v1/sessions/s/context").await;
    let last = acked.last().expect("acked");
    assert!(
        markers(&context).contains(last),
        "the newest acknowledged turn is on the surface"
    );
    server.kill();
}

/// A torn tail (what a kill in the middle of a write leaves) is refused,
/// never cut: requests on the session answer 500 naming `abridge repair`,
/// and the file keeps every byte; once the tail is set aside, the session
/// opens again. Regression test for "a torn tail is cut on open" (issue
/// 27).
#[tokio::test]
async fn a_torn_log_is_refused_with_every_byte_kept_until_it_is_set_aside() {
    let dir = tempfile::tempdir().expect("dir");
    let setup = crate::common::Setup::new(dir.path());
    let server = setup.start().await;
    let api = server.client(TOKEN_A);
    api.create(&small("t", &["digest"])).await;
    crate::common::fill(&api, "t", 0..4).await;
    server.shutdown().await;
    let log = dir.path().join("team-a").join("t.jsonl");
    let whole = std::fs::read(&log).expect("log");
    let cut = &whole[..whole.len() - 10];
    std::fs::write(&log, cut).expect("cut");

    let server = setup.start().await;
    let api = server.client(TOKEN_A);
    let (status, body) = api.get("/v1/sessions/t/context").await;
    assert_eq!(status, 500, "{body}");
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("cut short") && message.contains("abridge repair"),
        "{body}"
    );
    assert!(
        std::fs::read(&log).expect("log") == cut,
        "the server changed the log"
    );

    abridge_session::JsonlStore::open(&log, abridge_session::JsonlOptions::default())
        .expect("store")
        .set_aside_torn()
        .expect("set aside")
        .expect("a torn tail");
    let (status, body) = api.get("/v1/sessions/t/context").await;
    assert_eq!(status, 200, "{body}");
    server.shutdown().await;
}
