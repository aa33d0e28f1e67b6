//! Graceful shutdown: running compactions finish within the grace
//! period; past it they are aborted and the log says so (no stale start).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::json;

use crate::common::Gate;
use crate::common::Setup;
use crate::common::TOKEN_A;
use crate::common::ends;
use crate::common::fill;
use crate::common::open_log;
use crate::common::small;
use crate::common::wait_in_log;

async fn in_flight(grace: Duration) -> (tempfile::TempDir, Arc<Gate>, crate::common::Running) {
    let dir = tempfile::tempdir().expect("dir");
    let gate = Arc::new(Gate::default());
    let mut setup = Setup::new(dir.path());
    setup.summarizer = Some(gate.clone());
    setup.grace = grace;
    let server = setup.start().await;
    let api = server.client(TOKEN_A);
    api.create(&small("s", &["soft"])).await;
    fill(&api, "s", 0..40).await;
    (dir, gate, server)
}

#[tokio::test]
async fn a_running_compaction_finishes_within_the_grace_period() {
    let (dir, gate, server) = in_flight(Duration::from_secs(600)).await;
    let api = server.client(TOKEN_A);
    let request = tokio::spawn(async move { api.post("/v1/sessions/s/compact", &json!({})).await });
    wait_in_log(dir.path(), "s", "compaction/start").await;
    while gate.arrived.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let stopping = tokio::spawn(server.shutdown());
    // Shutdown has begun: the service waits for the pass.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!stopping.is_finished());
    gate.release(100);
    let (status, pass) = request.await.expect("request");
    assert_eq!(status, 200, "{pass}");
    assert_eq!(pass["status"], "succeeded", "{pass}");
    let report = stopping.await.expect("stopped");
    assert_eq!(report.compactions.running, 1);
    assert_eq!(report.compactions.aborted, 0);
    let session = open_log(dir.path(), "s");
    assert_eq!(ends(&session), vec![("ok".to_string(), None)]);
    assert!(abridge_compact::host::unmatched_starts(&session).is_empty());
}

#[tokio::test]
async fn past_the_grace_period_a_compaction_is_aborted_cleanly() {
    let (dir, _gate, server) = in_flight(Duration::from_millis(50)).await;
    let api = server.client(TOKEN_A);
    let request = tokio::spawn(async move { api.post("/v1/sessions/s/compact", &json!({})).await });
    wait_in_log(dir.path(), "s", "compaction/start").await;
    let report = server.shutdown().await;
    assert_eq!(report.compactions.running, 1);
    assert_eq!(report.compactions.aborted, 1);
    let (status, body) = request.await.expect("request");
    assert_eq!(status, 503, "{body}");
    let session = open_log(dir.path(), "s");
    assert!(
        abridge_compact::host::unmatched_starts(&session).is_empty(),
        "no start is left without its end"
    );
    let ends = ends(&session);
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert_eq!(ends[0].0, "error");
    assert_eq!(ends[0].1.as_deref(), Some("cancelled"), "{ends:?}");
}
