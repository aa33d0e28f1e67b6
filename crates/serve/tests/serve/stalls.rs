//! A slow store must hold up only the session it serves: opening one
//! session from its store (a whole log read, or a PostgreSQL round trip)
//! runs off the async workers and without the registry's lock, and so do
//! a compaction pass's writes.

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::Duration;

use abridge_serve::SessionStores;
use abridge_serve::Tenant;
use abridge_session::SessionStore;
use abridge_session::StoreError;

use crate::common::Setup;
use crate::common::TOKEN_A;
use crate::common::fill;
use crate::common::small;

/// Stores whose session "slow" stalls, once armed, until released: at
/// its opening (`store("slow")`), or at its next append.
#[derive(Debug)]
struct Stalling {
    inner: Box<dyn SessionStores>,
    stall: Arc<Stall>,
    at: StallAt,
}

/// Where [`Stalling`] stalls.
#[derive(Debug, Clone, Copy)]
enum StallAt {
    Open,
    Append,
}

/// A service setup in `dir` whose session "slow" stalls `at`, and the
/// stall to arm.
fn stalling(dir: &std::path::Path, at: StallAt) -> (Setup, Arc<Stall>) {
    let stall = Arc::new(Stall::default());
    let mut setup = Setup::new(dir);
    let wrapped = stall.clone();
    setup.wrap = Some(Arc::new(move |inner| {
        Box::new(Stalling {
            inner,
            stall: wrapped.clone(),
            at,
        })
    }));
    (setup, stall)
}

#[derive(Debug, Default)]
struct Stall {
    armed: AtomicBool,
    /// Told when the stalled call has begun waiting.
    entered: Mutex<Option<mpsc::Sender<()>>>,
    /// Ends the wait.
    release: Mutex<Option<mpsc::Receiver<()>>>,
    /// Set once the wait ended, by a release or by giving up.
    released: AtomicBool,
}

impl SessionStores for Stalling {
    fn store(&self, tenant: &Tenant, id: &str) -> Result<Box<dyn SessionStore>, StoreError> {
        if id != "slow" {
            return self.inner.store(tenant, id);
        }
        match self.at {
            StallAt::Open => {
                if self.stall.armed.swap(false, Ordering::SeqCst) {
                    self.stall.wait();
                }
                self.inner.store(tenant, id)
            }
            StallAt::Append => Ok(Box::new(StallingStore {
                inner: self.inner.store(tenant, id)?,
                stall: self.stall.clone(),
            })),
        }
    }

    fn exists(&self, tenant: &Tenant, id: &str) -> bool {
        self.inner.exists(tenant, id)
    }

    fn list(&self, tenant: &Tenant) -> Result<Vec<String>, StoreError> {
        self.inner.list(tenant)
    }

    fn size(&self, tenant: &Tenant, id: &str) -> Result<u64, StoreError> {
        self.inner.size(tenant, id)
    }

    fn usage(&self, tenant: &Tenant) -> Result<u64, StoreError> {
        self.inner.usage(tenant)
    }

    fn discard(&self, tenant: &Tenant, id: &str) -> Result<(), StoreError> {
        self.inner.discard(tenant, id)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_stuck_opening_holds_up_no_other_session() {
    let dir = tempfile::tempdir().expect("dir");
    let (setup, stall) = stalling(dir.path(), StallAt::Open);
    // Both sessions written by one service, then read by a fresh one, so
    // the second must open each from its store on first use.
    let first = setup.start().await;
    let api = first.client(TOKEN_A);
    for id in ["slow", "fast"] {
        api.create(&small(id, &["digest"])).await;
        fill(&api, id, 0..1).await;
    }
    first.shutdown().await;

    let (entered, release) = stall.arm();
    let second = setup.start().await;
    let api = second.client(TOKEN_A);
    let slow = tokio::spawn({
        let api = api.clone();
        async move { api.get("/v1/sessions/slow/stats").await }
    });
    began(entered, "the slow session's open").await;

    let (status, body) = api.get("/v1/sessions/fast/stats").await;
    assert_eq!(status, 200, "{body}");
    assert!(
        !stall.released.load(Ordering::SeqCst),
        "the other session answered only once the stuck open ended"
    );
    let (status, body) = api
        .post("/v1/sessions", &small("new-one", &["digest"]))
        .await;
    assert_eq!(status, 201, "{body}");
    assert!(
        !stall.released.load(Ordering::SeqCst),
        "creating waited on the stuck open"
    );

    release.send(()).expect("release");
    let (status, body) = slow.await.expect("slow request");
    assert_eq!(status, 200, "{body}");
    second.shutdown().await;
}

/// A store whose next append, once armed, waits until released (a disk
/// or a database that stops answering for a while).
#[derive(Debug)]
struct StallingStore {
    inner: Box<dyn SessionStore>,
    stall: Arc<Stall>,
}

impl SessionStore for StallingStore {
    fn location(&self) -> String {
        self.inner.location()
    }

    fn load(&mut self) -> Result<Option<abridge_session::LoadedLog>, StoreError> {
        self.inner.load()
    }

    fn create(&mut self, header: &abridge_session::Header) -> Result<(), StoreError> {
        self.inner.create(header)
    }

    fn append(&mut self, events: &[abridge_session::Event]) -> Result<(), StoreError> {
        if self.stall.armed.swap(false, Ordering::SeqCst) {
            self.stall.wait();
        }
        self.inner.append(events)
    }

    fn sync(&mut self) -> Result<(), StoreError> {
        self.inner.sync()
    }
}

impl Stall {
    /// Arms the stall: returns where the stalled call says it began
    /// waiting, and the sender that ends the wait.
    fn arm(&self) -> (mpsc::Receiver<()>, mpsc::Sender<()>) {
        let (entered_tx, entered_rx) = mpsc::channel();
        let (release_tx, release_rx) = mpsc::channel();
        *self.entered.lock().unwrap() = Some(entered_tx);
        *self.release.lock().unwrap() = Some(release_rx);
        self.armed.store(true, Ordering::SeqCst);
        (entered_rx, release_tx)
    }

    /// Says the wait began, then waits for the release (giving up after
    /// 20 s, so code that blocks on it fails the test instead of hanging
    /// it).
    fn wait(&self) {
        if let Some(entered) = self.entered.lock().unwrap().take() {
            let _ = entered.send(());
        }
        let release = self.release.lock().unwrap().take();
        if let Some(release) = release {
            let _ = release.recv_timeout(Duration::from_secs(20));
        }
        self.released.store(true, Ordering::SeqCst);
    }
}

/// A compaction pass runs as an async task and writes to its store from
/// inside it. With one worker thread, a pass stuck in that write must
/// not hold up another session's requests: the write runs off the
/// worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_pass_stuck_writing_holds_up_no_other_session() {
    let dir = tempfile::tempdir().expect("dir");
    let (setup, stall) = stalling(dir.path(), StallAt::Append);
    let server = setup.start().await;
    let api = server.client(TOKEN_A);
    for id in ["slow", "fast"] {
        api.create(&small(id, &["digest"])).await;
        fill(&api, id, 0..30).await;
    }

    let (entered, release) = stall.arm();
    let slow = tokio::spawn({
        let api = api.clone();
        async move {
            api.post("/v1/sessions/slow/compact", &serde_json::json!({}))
                .await
        }
    });
    began(entered, "the pass's write").await;

    let (status, body) = api.get("/v1/sessions/fast/stats").await;
    assert_eq!(status, 200, "{body}");
    fill(&api, "fast", 30..31).await;
    assert!(
        !stall.released.load(Ordering::SeqCst),
        "the other session answered only once the stuck write ended"
    );

    release.send(()).expect("release");
    let (status, pass) = slow.await.expect("slow request");
    assert_eq!(status, 200, "{pass}");
    assert_eq!(pass["status"], "succeeded", "{pass}");
    server.shutdown().await;
}

/// Waits (off the runtime) until the stalled call says it began; `what`
/// names it in the failure.
async fn began(entered: mpsc::Receiver<()>, what: &str) {
    tokio::task::spawn_blocking(move || entered.recv_timeout(Duration::from_secs(20)))
        .await
        .expect("join")
        .unwrap_or_else(|_| panic!("{what} never began"));
}
