//! Maintenance progress as server-sent events.

use serde_json::json;

use crate::common::Setup;
use crate::common::TOKEN_A;
use crate::common::fill;
use crate::common::small;

/// Reads the stream until an event named `name` has arrived; returns
/// every event name seen, in order.
async fn read_until(response: &mut reqwest::Response, seen: &mut Vec<String>, name: &str) {
    let mut pending = String::new();
    while !seen.iter().any(|n| n == name) {
        let chunk = response
            .chunk()
            .await
            .expect("chunk")
            .unwrap_or_else(|| panic!("the stream ended before {name}; saw {seen:?}"));
        pending.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = pending.find("\n\n") {
            let block: String = pending.drain(..end + 2).collect();
            if let Some(event) = block.lines().find_map(|l| l.strip_prefix("event: ")) {
                seen.push(event.to_string());
            }
        }
    }
}

#[tokio::test]
async fn a_pass_is_streamed_step_by_step() {
    let dir = tempfile::tempdir().expect("dir");
    let server = Setup::new(dir.path()).start().await;
    let api = server.client(TOKEN_A);
    api.create(&small("s", &["prune", "digest"])).await;
    fill(&api, "s", 0..30).await;

    let mut stream = api.events("s").await;
    assert_eq!(stream.status().as_u16(), 200);
    assert!(
        stream
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"))
    );
    let mut seen = Vec::new();
    read_until(&mut stream, &mut seen, "ready").await;

    let (status, pass) = api.post("/v1/sessions/s/compact", &json!({})).await;
    assert_eq!(status, 200, "{pass}");
    read_until(&mut stream, &mut seen, "pass_ended").await;
    assert_eq!(seen.first().map(String::as_str), Some("ready"));
    assert_eq!(
        seen.get(1).map(String::as_str),
        Some("pass_started"),
        "{seen:?}"
    );
    assert!(seen.iter().any(|e| e == "attempt_started"), "{seen:?}");
    assert!(seen.iter().any(|e| e == "attempt_landed"), "{seen:?}");

    // Shutdown ends the stream with a last `shutdown` event.
    let stopping = tokio::spawn(server.shutdown());
    read_until(&mut stream, &mut seen, "shutdown").await;
    assert!(stream.chunk().await.expect("end").is_none());
    stopping.await.expect("stopped");
}
