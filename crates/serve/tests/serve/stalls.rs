//! A slow store must hold up only the session it serves: opening one
//! session from its store (a whole log read, or a PostgreSQL round trip)
//! runs off the async workers and without the registry's lock.

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

/// Stores whose `store("slow")` waits, once armed, until released.
#[derive(Debug)]
struct Stalling {
    inner: Box<dyn SessionStores>,
    stall: Arc<Stall>,
}

#[derive(Debug, Default)]
struct Stall {
    armed: AtomicBool,
    /// Told when a `store("slow")` call has begun waiting.
    entered: Mutex<Option<mpsc::Sender<()>>>,
    /// Ends the wait.
    release: Mutex<Option<mpsc::Receiver<()>>>,
    /// Set once the wait ended, by a release or by giving up.
    released: AtomicBool,
}

impl SessionStores for Stalling {
    fn store(&self, tenant: &Tenant, id: &str) -> Result<Box<dyn SessionStore>, StoreError> {
        if id == "slow" && self.stall.armed.swap(false, Ordering::SeqCst) {
            if let Some(entered) = self.stall.entered.lock().unwrap().take() {
                let _ = entered.send(());
            }
            let release = self.stall.release.lock().unwrap().take();
            // Gives up in the end, so code that blocks on this wait fails
            // the test (the other session answered only after it) instead
            // of hanging it.
            if let Some(release) = release {
                let _ = release.recv_timeout(Duration::from_secs(20));
            }
            self.stall.released.store(true, Ordering::SeqCst);
        }
        self.inner.store(tenant, id)
    }

    fn exists(&self, tenant: &Tenant, id: &str) -> bool {
        self.inner.exists(tenant, id)
    }

    fn list(&self, tenant: &Tenant) -> Result<Vec<String>, StoreError> {
        self.inner.list(tenant)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_stuck_opening_holds_up_no_other_session() {
    let dir = tempfile::tempdir().expect("dir");
    let stall = Arc::new(Stall::default());
    let mut setup = Setup::new(dir.path());
    let wrapped = stall.clone();
    setup.wrap = Some(Arc::new(move |inner| {
        Box::new(Stalling {
            inner,
            stall: wrapped.clone(),
        })
    }));
    // Both sessions written by one service, then read by a fresh one, so
    // the second must open each from its store on first use.
    let first = setup.start().await;
    let api = first.client(TOKEN_A);
    for id in ["slow", "fast"] {
        api.create(&small(id, &["digest"])).await;
        fill(&api, id, 0..1).await;
    }
    first.shutdown().await;

    let (entered_tx, entered_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel();
    *stall.entered.lock().unwrap() = Some(entered_tx);
    *stall.release.lock().unwrap() = Some(release_rx);
    stall.armed.store(true, Ordering::SeqCst);
    let second = setup.start().await;
    let api = second.client(TOKEN_A);
    let slow = tokio::spawn({
        let api = api.clone();
        async move { api.get("/v1/sessions/slow/stats").await }
    });
    tokio::task::spawn_blocking(move || entered_rx.recv_timeout(Duration::from_secs(20)))
        .await
        .expect("join")
        .expect("the slow session's open began");

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

    release_tx.send(()).expect("release");
    let (status, body) = slow.await.expect("slow request");
    assert_eq!(status, 200, "{body}");
    second.shutdown().await;
}
