//! No token value reaches a log line. This test has a test binary of its
//! own: `tracing` decides per call site, for the whole process, whether
//! anyone listens, and a capture scoped to one thread raced the other
//! tests' threads for that decision, so it once missed the very lines it
//! checks. Alone in its process, the capture sees every line.

#![allow(clippy::expect_used, clippy::unwrap_used)]

#[allow(dead_code)]
#[path = "serve/common.rs"]
mod common;

use abridge_test_support::logs::LogCapture;
use serde_json::json;

use crate::common::Api;
use crate::common::Setup;
use crate::common::TOKEN_A;
use crate::common::TOKEN_B;
use crate::common::fill;
use crate::common::small;

/// Every log line of a session's life, at trace level, from the server
/// and the client in this thread: no token value appears, while the
/// tenant does (so the capture did see the requests).
#[tokio::test(flavor = "current_thread")]
async fn no_token_reaches_a_log_line() {
    let logs = LogCapture::start();

    let dir = tempfile::tempdir().expect("dir");
    let server = Setup::new(dir.path()).start().await;
    let a = server.client(TOKEN_A);
    a.create(&small("logged", &["digest"])).await;
    fill(&a, "logged", 0..30).await;
    let (status, _) = a.post("/v1/sessions/logged/after-turn", &json!({})).await;
    assert_eq!(status, 200);
    let (status, _) = server
        .client(TOKEN_B)
        .get("/v1/sessions/logged/stats")
        .await;
    assert_eq!(status, 404);
    let (status, _) = Api::new(&server.base, Some("wrong-token-wrong-token"))
        .get("/v1/sessions")
        .await;
    assert_eq!(status, 401);
    server.shutdown().await;

    let text = logs.text();
    assert!(text.contains("team-a"), "the capture saw nothing:\n{text}");
    for secret in [TOKEN_A, TOKEN_B, "wrong-token-wrong-token"] {
        assert!(!text.contains(secret), "a token was logged");
    }
    // Issue 28: 401s and other 4xx were never logged, so guessing tokens
    // was invisible. One access line per request: the refused one at
    // warn, with its route and status; the others with their tenant.
    let access: Vec<&str> = text
        .lines()
        .filter(|line| line.contains("abridge_serve::access"))
        .collect();
    assert!(
        access.iter().any(|line| line.contains("WARN")
            && line.contains("route=/v1/sessions")
            && line.contains("status=401")),
        "no access line for the 401:\n{}",
        access.join("\n")
    );
    assert!(
        access.iter().any(|line| line.contains("tenant=team-b")
            && line.contains("route=/v1/sessions/{id}/stats")
            && line.contains("status=404")),
        "no access line for the 404:\n{}",
        access.join("\n")
    );
    assert!(
        access.len() >= 33,
        "one line per request ({} lines)",
        access.len()
    );
}
