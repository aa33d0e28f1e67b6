//! Heavy reads: built from a copy of the session taken under its lock,
//! and streamed.

use std::time::Duration;

use serde_json::json;

use crate::common::Setup;
use crate::common::TOKEN_A;

// Issue 28: a report was built whole, on an async worker, holding the
// session's lock, then sent; four at once on a 100 MB session stalled
// another tenant and grew the server by 1.5 GB. Now it streams from a
// copy: the answer starts before it is complete, the session takes
// appends meanwhile, and the page shows the session as it was copied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_report_streams_from_a_copy_while_its_session_takes_appends() {
    let dir = tempfile::tempdir().expect("dir");
    let server = Setup::new(dir.path()).start().await;
    let api = server.client(TOKEN_A);
    api.create(&json!({"id": "big", "settings": {"method_order": ["digest"]}}))
        .await;
    for batch in 0..20 {
        let messages: Vec<_> = (0..50)
            .map(|i| json!({"role": "user", "content": [{"type": "text", "text": format!("turn {batch}-{i}: {}", "words in the log ".repeat(60))}]}))
            .collect();
        let (status, body) = api
            .post("/v1/sessions/big/messages", &json!({"messages": messages}))
            .await;
        assert_eq!(status, 200, "{body}");
    }
    let mut report = reqwest::Client::new()
        .get(format!("{}/v1/sessions/big/report", server.base))
        .bearer_auth(TOKEN_A)
        .send()
        .await
        .expect("report");
    assert_eq!(report.status(), 200);
    assert!(
        report.content_length().is_none(),
        "streamed: no length known before it is written"
    );
    let first = report.chunk().await.expect("read").expect("a first chunk");
    // The report is under way; the session takes an append meanwhile.
    let (status, body) = api
        .post(
            "/v1/sessions/big/messages",
            &json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "written-after-the-copy"}]}]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let mut page = first.to_vec();
    while let Some(chunk) = tokio::time::timeout(Duration::from_secs(120), report.chunk())
        .await
        .expect("the report ends")
        .expect("read")
    {
        page.extend_from_slice(&chunk);
    }
    let page = String::from_utf8(page).expect("utf-8");
    assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"));
    assert!(page.contains("turn 19-49"));
    assert!(
        !page.contains("written-after-the-copy"),
        "the page is the copy's"
    );
    server.shutdown().await;
}
