//! Each tenant's quotas: sessions, bytes per session, bytes in all; a
//! refusal names the quota and its limit, and writes nothing.

use serde_json::json;

use super::code;
use crate::common::Setup;
use crate::common::TOKEN_A;
use crate::common::TOKEN_B;
use crate::common::small;

/// A user message of about `kib` KiB.
fn message(kib: usize) -> serde_json::Value {
    json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "q".repeat(kib * 1024)}]}]})
}

// Issue 28: a tenant could create sessions and write bytes without end.
#[tokio::test]
async fn a_tenant_past_a_quota_is_refused_naming_it() {
    let dir = tempfile::tempdir().expect("dir");
    let mut setup = Setup::new(dir.path());
    setup.limits.sessions_per_tenant = 3;
    setup.limits.session_bytes = 1 << 20;
    setup.limits.tenant_bytes = (1 << 20) + (512 << 10);
    let server = setup.start().await;
    let (a, b) = (server.client(TOKEN_A), server.client(TOKEN_B));
    for id in ["one", "two", "three"] {
        a.create(&small(id, &["digest"])).await;
    }
    let (status, body) = a.post("/v1/sessions", &small("four", &["digest"])).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(code(status, &body), "quota_exceeded");
    assert_eq!(body["error"]["quota"], "sessions");
    assert_eq!(body["error"]["limit"], 3);
    let (_, listed) = a.get("/v1/sessions").await;
    assert_eq!(listed["sessions"].as_array().map(Vec::len), Some(3));
    b.create(&small("four", &["digest"])).await;

    // One session: 900 KiB fits, 200 KiB more does not.
    let (status, body) = a.post("/v1/sessions/one/messages", &message(900)).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = a.post("/v1/sessions/one/messages", &message(200)).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["quota"], "session_bytes");
    assert_eq!(body["error"]["limit"], 1 << 20);
    // The tenant: 900 KiB in one session, 700 more in another pass 1.5 MiB.
    let (status, body) = a.post("/v1/sessions/two/messages", &message(700)).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["error"]["quota"], "tenant_bytes");
    assert_eq!(body["error"]["limit"], (1 << 20) + (512 << 10));
    let (_, context) = a.get("/v1/sessions/two/context").await;
    assert_eq!(context["messages"], json!([]), "nothing of a refused batch");
    // Another tenant is not counted against it.
    let (status, body) = b.post("/v1/sessions/four/messages", &message(700)).await;
    assert_eq!(status, 200, "{body}");
    server.shutdown().await;
}
