//! Slow and idle clients: half-sent heads, idle keep-alives, slow bodies,
//! more connections than the cap, more event streams than a tenant may
//! hold.

use std::time::Duration;

use serde_json::json;
use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;

use super::code;
use super::connect;
use super::half_open;
use super::until_closed;
use crate::common::Setup;
use crate::common::TOKEN_A;
use crate::common::TOKEN_B;
use crate::common::fill;
use crate::common::small;

/// A guard against a hang: far past every limit these tests set.
const GUARD: Duration = Duration::from_secs(60);

/// Half-open connections this test makes (a slowloris).
const HALF_OPEN: usize = 300;

// Issue 28: half-sent heads and idle keep-alives stayed open forever, and
// 1,100 of them made a normal request time out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_open_connections_are_closed_while_a_normal_client_is_served() {
    let dir = tempfile::tempdir().expect("dir");
    let mut setup = Setup::new(dir.path());
    setup.limits.header_timeout = Duration::from_secs(1);
    let server = setup.start().await;
    let mut slow = Vec::with_capacity(HALF_OPEN);
    for i in 0..HALF_OPEN {
        let head = if i % 2 == 0 {
            "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nAuthor"
        } else {
            "GET /v1/sess"
        };
        slow.push(half_open(&server.base, head).await);
    }
    // An idle keep-alive connection: one whole request, then nothing.
    let mut idle = connect(&server.base).await;
    idle.write_all(b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("write");
    let mut first = [0u8; 12];
    idle.read_exact(&mut first).await.expect("an answer");
    assert_eq!(&first, b"HTTP/1.1 200");

    // Meanwhile a normal client goes about its work.
    let api = server.client(TOKEN_A);
    api.create(&small("s", &["digest"])).await;
    fill(&api, "s", 0..3).await;
    let (status, _) = api.get("/v1/sessions/s/stats").await;
    assert_eq!(status, 200);

    for (i, stream) in slow.iter_mut().enumerate() {
        assert!(
            until_closed(stream, GUARD).await.is_some(),
            "half-open connection {i} is still open"
        );
    }
    assert!(
        until_closed(&mut idle, GUARD).await.is_some(),
        "the idle keep-alive connection is still open"
    );
    let (status, _) = api.get("/v1/sessions/s/stats").await;
    assert_eq!(status, 200);
    server.shutdown().await;
}

// Issue 28: a body sent a few bytes at a time held its request forever.
#[tokio::test]
async fn a_body_that_does_not_arrive_gets_408() {
    let dir = tempfile::tempdir().expect("dir");
    let mut setup = Setup::new(dir.path());
    setup.limits.body_timeout = Duration::from_secs(1);
    let server = setup.start().await;
    server
        .client(TOKEN_A)
        .create(&small("s", &["digest"]))
        .await;
    let mut stream = half_open(
        &server.base,
        &format!(
            "POST /v1/sessions/s/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN_A}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"messages\""
        ),
    )
    .await;
    let answer = until_closed(&mut stream, GUARD)
        .await
        .expect("the server answers and closes");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    let body: serde_json::Value =
        serde_json::from_str(text.split("\r\n\r\n").nth(1).unwrap_or_default()).expect("json");
    assert_eq!(code(408, &body), "timeout");
    server.shutdown().await;
}

// Issue 28: there was no limit on connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_connection_cap_a_connection_is_refused_at_once() {
    const CAP: usize = 20;
    let dir = tempfile::tempdir().expect("dir");
    let mut setup = Setup::new(dir.path());
    setup.limits.max_connections = CAP;
    setup.limits.header_timeout = Duration::from_secs(600);
    let server = setup.start().await;
    // CAP connections, each known to be served (it had an answer), then
    // kept open and idle.
    let mut held = Vec::with_capacity(CAP);
    for _ in 0..CAP {
        let mut stream = connect(&server.base).await;
        stream
            .write_all(b"GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .expect("write");
        let mut first = [0u8; 12];
        stream.read_exact(&mut first).await.expect("an answer");
        held.push(stream);
    }
    let mut extra = connect(&server.base).await;
    let answer = until_closed(&mut extra, GUARD)
        .await
        .expect("the connection past the cap is closed at once");
    let text = String::from_utf8_lossy(&answer);
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 503"),
        "{text}"
    );
    if let Some(body) = text.split("\r\n\r\n").nth(1) {
        let body: serde_json::Value = serde_json::from_str(body).expect("json");
        assert_eq!(code(503, &body), "unavailable");
        assert_eq!(body["error"]["limit"], CAP);
    }
    // Once one closes, a normal client is served again.
    drop(held.pop());
    let api = server.client(TOKEN_A);
    let mut served = false;
    for _ in 0..100 {
        if api
            .try_post("/v1/sessions", &small("after", &["digest"]))
            .await
            .is_some()
        {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(served, "a connection freed a place");
    drop(held);
    server.shutdown().await;
}

// Issue 28: there was no limit on event streams.
#[tokio::test]
async fn a_tenant_holds_at_most_its_event_streams() {
    let dir = tempfile::tempdir().expect("dir");
    let mut setup = Setup::new(dir.path());
    setup.limits.event_streams_per_tenant = 2;
    let server = setup.start().await;
    let (a, b) = (server.client(TOKEN_A), server.client(TOKEN_B));
    a.create(&small("s", &["digest"])).await;
    b.create(&small("s", &["digest"])).await;
    let first = a.events("s").await;
    let second = a.events("s").await;
    assert_eq!(
        (first.status().as_u16(), second.status().as_u16()),
        (200, 200)
    );
    let third = a.events("s").await;
    assert_eq!(third.status(), 429);
    let body: serde_json::Value =
        serde_json::from_str(&third.text().await.expect("body")).expect("json");
    assert_eq!(code(429, &body), "too_many");
    assert_eq!(body["error"]["limit"], 2);
    let other = b.events("s").await;
    assert_eq!(other.status(), 200, "another tenant is not held up");
    drop((first, second, other));
    let (status, _) = a
        .post(
            "/v1/sessions/s/messages",
            &json!({"messages": crate::common::turn(0)}),
        )
        .await;
    assert_eq!(status, 200);
    server.shutdown().await;
}
