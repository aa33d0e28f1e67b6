//! Who may do what: tokens, tenants and body limits (no token in logs:
//! tests/logs.rs).

use serde_json::json;

use crate::common::Api;
use crate::common::Setup;
use crate::common::TOKEN_A;
use crate::common::TOKEN_B;
use crate::common::fill;
use crate::common::small;

#[tokio::test]
async fn no_token_and_a_wrong_token_get_401() {
    let dir = tempfile::tempdir().expect("dir");
    let server = Setup::new(dir.path()).start().await;
    server
        .client(TOKEN_A)
        .create(&small("s", &["digest"]))
        .await;
    for api in [
        Api::new(&server.base, None),
        Api::new(&server.base, Some("not-a-known-token-at-all")),
    ] {
        for path in [
            "/v1/sessions",
            "/v1/sessions/s/context",
            "/v1/sessions/s/report",
        ] {
            let (status, body) = api.get(path).await;
            assert_eq!(status, 401, "{path}: {body}");
            assert_eq!(body["error"]["code"], "unauthorized");
        }
        let (status, _) = api.post("/v1/sessions", &json!({})).await;
        assert_eq!(status, 401);
    }
    // The document stays open to everyone.
    let (status, _) = Api::new(&server.base, None).get("/openapi.json").await;
    assert_eq!(status, 200);
    server.shutdown().await;
}

/// Another tenant's session answers 404, exactly as a missing one, on
/// every route, and is never listed.
#[tokio::test]
async fn another_tenants_session_is_404_everywhere() {
    let dir = tempfile::tempdir().expect("dir");
    let server = Setup::new(dir.path()).start().await;
    let a = server.client(TOKEN_A);
    let b = server.client(TOKEN_B);
    a.create(&small("private", &["digest"])).await;
    fill(&a, "private", 0..2).await;
    let base = "/v1/sessions/private";
    for path in ["context", "stats", "request", "report", "compaction/events"] {
        let (status, body) = b.get(&format!("{base}/{path}")).await;
        assert_eq!(status, 404, "{path}: {body}");
    }
    for (path, body) in [
        (
            "messages",
            json!({"messages": [{"role": "user", "content": []}]}),
        ),
        ("after-turn", json!({})),
        ("on-error", json!({"error": "context_overflow"})),
        ("compact", json!({})),
        ("recall", json!({"toc": true})),
    ] {
        let (status, answer) = b.post(&format!("{base}/{path}"), &body).await;
        assert_eq!(status, 404, "{path}: {answer}");
    }
    let (_, missing) = a.get("/v1/sessions/nothing-here/context").await;
    let (_, foreign) = b.get("/v1/sessions/private/context").await;
    assert_eq!(missing["error"]["code"], foreign["error"]["code"]);
    let (_, listed) = b.get("/v1/sessions").await;
    assert_eq!(listed["sessions"], json!([]));
    // b may use the same id for its own session: ids are per tenant.
    b.create(&small("private", &["digest"])).await;
    let (_, context) = b.get("/v1/sessions/private/context").await;
    assert_eq!(context["messages"], json!([]));
    let (_, context) = a.get("/v1/sessions/private/context").await;
    assert_eq!(context["messages"].as_array().map(Vec::len), Some(4));
    server.shutdown().await;
}

#[tokio::test]
async fn a_body_over_the_limit_gets_413() {
    let dir = tempfile::tempdir().expect("dir");
    let mut setup = Setup::new(dir.path());
    setup.limits.body_bytes = 16 * 1024;
    let server = setup.start().await;
    let api = server.client(TOKEN_A);
    api.create(&small("s", &["digest"])).await;
    let big = json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "x".repeat(17 * 1024)}]}]});
    let (status, body) = api.post("/v1/sessions/s/messages", &big).await;
    assert_eq!(status, 413);
    assert_eq!(body["error"]["code"], "too_large", "{body}");
    assert_eq!(body["error"]["limit"], 16 * 1024, "{body}");
    let (_, context) = api.get("/v1/sessions/s/context").await;
    assert_eq!(context["messages"], json!([]), "nothing of it was written");
    let small_enough = json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "x".repeat(1024)}]}]});
    let (status, _) = api.post("/v1/sessions/s/messages", &small_enough).await;
    assert_eq!(status, 200);
    server.shutdown().await;
}
