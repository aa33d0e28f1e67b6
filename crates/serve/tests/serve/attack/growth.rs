//! What a server keeps must not grow with what clients ask: missing ids
//! leave no memory behind, and idle sessions give their descriptors back.
//! Read from `/proc` of a server process of its own.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::time::Duration;

use abridge_serve::SessionStores;
use abridge_serve::Tenant;
use abridge_session::SessionStore;
use abridge_session::StoreError;
use serde_json::json;

use crate::common::Api;
use crate::common::Setup;
use crate::common::TOKEN_A;
use crate::common::small;
use crate::kill::ChildOptions;
use crate::kill::Server;

/// Resident memory of `pid` in bytes (`VmRSS`).
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("VmRSS");
    line.split_whitespace()
        .nth(1)
        .and_then(|kb| kb.parse::<u64>().ok())
        .expect("kB")
        * 1024
}

/// Open file descriptors of `pid`.
fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .expect("fd dir")
        .count()
}

/// `count` lookups of missing ids (the longest ids accepted), eight at a
/// time.
async fn lookups(api: &Api, from: usize, count: usize) {
    let tasks: Vec<_> = (0..8)
        .map(|worker| {
            let api = api.clone();
            tokio::spawn(async move {
                for i in (from + worker..from + count).step_by(8) {
                    let id = format!("{i:0>128}");
                    let (status, _) = api.get(&format!("/v1/sessions/{id}/stats")).await;
                    assert_eq!(status, 404);
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("lookups");
    }
}

// Issue 28: the gate map gained an entry for every id looked up, missing
// ones included (80,000 404s added 26-41 MB, never freed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_of_missing_ids_leave_memory_flat() {
    let dir = tempfile::tempdir().expect("dir");
    let server = Server::start_child(dir.path(), &ChildOptions::default()).await;
    let api = Api::new(&server.base, Some(TOKEN_A));
    // Warm up: the allocator's arenas, the connection pool, the buffers.
    lookups(&api, 0, 2_000).await;
    let before = rss(server.pid());
    lookups(&api, 2_000, 10_000).await;
    let after = rss(server.pid());
    let grown = after.saturating_sub(before);
    eprintln!("10,000 missing-id lookups: RSS {before} -> {after} bytes (+{grown})");
    // On the code before, each lookup kept about 400 bytes: 4 MB here.
    assert!(
        grown < 1536 * 1024,
        "the server grew by {grown} bytes over 10,000 lookups of missing ids"
    );
}

// Issue 28: every session ever opened kept two descriptors for the life
// of the process; at `ulimit -n 256` creates failed from the 122nd on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descriptors_stay_flat_after_opening_and_idling_a_thousand_sessions() {
    const OPEN: usize = 16;
    let dir = tempfile::tempdir().expect("dir");
    let child = ChildOptions {
        limits: format!("open_sessions={OPEN},session_idle=1"),
        ..ChildOptions::default()
    };
    let server = Server::start_child(dir.path(), &child).await;
    let api = Api::new(&server.base, Some(TOKEN_A));
    api.create(&small("warm", &["digest"])).await;
    let before = fds(server.pid());
    let tasks: Vec<_> = (0..4)
        .map(|worker| {
            let api = api.clone();
            tokio::spawn(async move {
                for i in (worker..1_000).step_by(4) {
                    let (status, body) = api
                        .post("/v1/sessions", &json!({"id": format!("s{i}")}))
                        .await;
                    assert_eq!(status, 201, "session {i}: {body}");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("creates");
    }
    let during = fds(server.pid());
    // Idle for longer than the idle time: the sweep closes them all.
    let mut after = during;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        after = fds(server.pid());
        if after <= before {
            break;
        }
    }
    eprintln!("descriptors: {before} before, {during} after 1,000 creates, {after} once idle");
    assert!(
        during <= before + 2 * OPEN + 16,
        "{during} descriptors with at most {OPEN} sessions open (from {before})"
    );
    assert!(
        after <= before + 4,
        "{after} descriptors once idle (from {before})"
    );
    let (status, listed) = api.get("/v1/sessions").await;
    assert_eq!(status, 200);
    assert_eq!(listed["sessions"].as_array().map(Vec::len), Some(1_001));
}

/// Stores whose first append (of any session) fails: what a full disk,
/// or a process out of descriptors, does to a create half-way.
#[derive(Debug)]
struct FailingFirstAppend(Box<dyn SessionStores>, Arc<AtomicBool>);

/// A store that fails its append while the shared flag is unset.
#[derive(Debug)]
struct FailOnce(Box<dyn SessionStore>, Arc<AtomicBool>);

impl SessionStore for FailOnce {
    fn location(&self) -> String {
        self.0.location()
    }
    fn load(&mut self) -> Result<Option<abridge_session::LoadedLog>, StoreError> {
        self.0.load()
    }
    fn create(&mut self, header: &abridge_session::Header) -> Result<(), StoreError> {
        self.0.create(header)
    }
    fn append(&mut self, events: &[abridge_session::Event]) -> Result<(), StoreError> {
        if !self.1.swap(true, Ordering::SeqCst) {
            return Err(StoreError::Io {
                path: "/srv/secret/layout".into(),
                op: "append",
                source: std::io::Error::other("Too many open files (os error 24)"),
            });
        }
        self.0.append(events)
    }
    fn sync(&mut self) -> Result<(), StoreError> {
        self.0.sync()
    }
}

impl SessionStores for FailingFirstAppend {
    fn store(&self, tenant: &Tenant, id: &str) -> Result<Box<dyn SessionStore>, StoreError> {
        Ok(Box::new(FailOnce(
            self.0.store(tenant, id)?,
            Arc::clone(&self.1),
        )))
    }
    fn exists(&self, tenant: &Tenant, id: &str) -> bool {
        self.0.exists(tenant, id)
    }
    fn list(&self, tenant: &Tenant) -> Result<Vec<String>, StoreError> {
        self.0.list(tenant)
    }
    fn size(&self, tenant: &Tenant, id: &str) -> Result<u64, StoreError> {
        self.0.size(tenant, id)
    }
    fn usage(&self, tenant: &Tenant) -> Result<u64, StoreError> {
        self.0.usage(tenant)
    }
    fn discard(&self, tenant: &Tenant, id: &str) -> Result<(), StoreError> {
        self.0.discard(tenant, id)
    }
}

// Issue 28: a create that failed half-way left its files behind (a stray
// `.lock`, or a log without its record that answered 500 from then on),
// and its 500 named the store's paths.
#[tokio::test]
async fn a_create_that_fails_half_way_leaves_nothing_behind() {
    let dir = tempfile::tempdir().expect("dir");
    let mut setup = Setup::new(dir.path());
    let failed = Arc::new(AtomicBool::new(false));
    setup.wrap = Some(Arc::new(move |inner| {
        Box::new(FailingFirstAppend(inner, Arc::clone(&failed)))
    }));
    let server = setup.start().await;
    let api = server.client(TOKEN_A);
    let (status, body) = api.post("/v1/sessions", &small("half", &["digest"])).await;
    assert_eq!(status, 500, "{body}");
    assert_eq!(body["error"]["code"], "internal");
    assert!(body["error"]["error_id"].is_string(), "{body}");
    assert!(!body.to_string().contains("/srv"), "{body}");
    let left: Vec<String> = std::fs::read_dir(dir.path().join("team-a"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    let (status, listed) = api.get("/v1/sessions").await;
    assert_eq!((status, listed["sessions"].clone()), (200, json!([])));
    // The same id can be created again.
    let (status, body) = api.post("/v1/sessions", &small("half", &["digest"])).await;
    assert_eq!(status, 201, "{body}");
    server.shutdown().await;
}
