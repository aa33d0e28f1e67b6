//! Cancellation is dropping the future or the stream: the connection must
//! close at once, not linger in a detached task. A raw TCP server that
//! never finishes its answer reports when the client hangs up.

use std::time::Duration;

use abridge_llm::LlmClient;
use abridge_llm::Purpose;
use abridge_llm::StreamEvent;
use futures::StreamExt;
use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

use super::support::Kind;
use super::support::request;

/// Serves one connection: reads the request, optionally writes `head`
/// (and never more), then reports when the client closes the connection.
async fn stalling_server(head: Option<String>) -> (String, oneshot::Receiver<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let uri = format!("http://{}", listener.local_addr().unwrap());
    let (closed, closed_rx) = oneshot::channel();
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buffer = vec![0u8; 64 * 1024];
        let mut seen = Vec::new();
        while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut buffer).await.unwrap();
            assert!(n > 0, "client closed before sending a request");
            seen.extend_from_slice(&buffer[..n]);
        }
        if let Some(head) = head {
            socket.write_all(head.as_bytes()).await.unwrap();
        }
        loop {
            match socket.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
        }
        let _ = closed.send(());
    });
    (uri, closed_rx)
}

/// Generous bound: the server would otherwise wait forever.
const HANG_UP_WITHIN: Duration = Duration::from_secs(10);

#[tokio::test]
async fn dropping_a_call_closes_the_connection() {
    let (uri, closed) = stalling_server(None).await;
    let client = Kind::Chat.client(&uri);
    let compaction = request(Purpose::Compaction);
    let call = client.complete(&compaction);
    assert!(
        tokio::time::timeout(Duration::from_millis(200), call)
            .await
            .is_err()
    );
    tokio::time::timeout(HANG_UP_WITHIN, closed)
        .await
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn dropping_a_stream_closes_the_connection() {
    let event = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n";
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{event}\r\n",
        event.len()
    );
    let (uri, closed) = stalling_server(Some(head)).await;
    let client = Kind::Chat.client(&uri);
    let mut stream = client.stream(&request(Purpose::Turn)).await.unwrap();
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(first, StreamEvent::TextDelta("Hi".into()));
    drop(stream);
    tokio::time::timeout(HANG_UP_WITHIN, closed)
        .await
        .unwrap()
        .unwrap();
}
