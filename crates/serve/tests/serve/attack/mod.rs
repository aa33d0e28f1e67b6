//! The attack suite (issue 28): each test does what an attacker did to the
//! service and checks the safe answer. Real sockets on loopback, raw TCP
//! for half-open connections, a real PostgreSQL when
//! `ABRIDGE_TEST_POSTGRES` is set, memory and descriptors read from
//! `/proc` of a server process of its own. No assertion is on time; the
//! waits are guards against a hang.

mod appends;
mod blobs;
mod connections;
mod growth;
mod passes;
mod quotas;
mod reads;
mod shapes;
mod shutdown;

use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// A raw connection to `base` (`http://HOST:PORT`).
pub(crate) async fn connect(base: &str) -> TcpStream {
    let addr = base.trim_start_matches("http://");
    TcpStream::connect(addr).await.expect("connect")
}

/// A connection that sent `head` (part of a request) and nothing more.
pub(crate) async fn half_open(base: &str, head: &str) -> TcpStream {
    let mut stream = connect(base).await;
    stream.write_all(head.as_bytes()).await.expect("write");
    stream
}

/// What the server sends on `stream` until it closes it, or `None` when
/// it is still open after `guard` (a hang, not a measurement).
pub(crate) async fn until_closed(stream: &mut TcpStream, guard: Duration) -> Option<Vec<u8>> {
    let mut seen = Vec::new();
    let read = tokio::time::timeout(guard, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    read.ok().map(|()| seen)
}

/// The error body's code, after checking the answer has the shape every
/// refusal has: JSON `{"error": {"code", "message"}}`.
pub(crate) fn code(status: u16, body: &serde_json::Value) -> String {
    let message = body["error"]["message"].as_str();
    assert!(
        message.is_some_and(|m| !m.is_empty()),
        "{status}: not the error shape: {body}"
    );
    body["error"]["code"]
        .as_str()
        .unwrap_or_else(|| panic!("{status}: no code: {body}"))
        .to_string()
}
