//! SIGTERM with a half-open connection: the process stops.

use std::time::Duration;

use super::half_open;
use crate::common::Api;
use crate::common::TOKEN_A;
use crate::common::small;
use crate::kill::ChildOptions;
use crate::kill::Server;

// Issue 28: one half-open connection kept SIGTERM from stopping the
// server (still running after 45 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_the_server_despite_a_half_open_connection() {
    let dir = tempfile::tempdir().expect("dir");
    let child = ChildOptions {
        sigterm: true,
        // Heads may take long: only the shutdown timeout can end this one.
        limits: "header_timeout=600,shutdown_timeout=2".to_string(),
        ..ChildOptions::default()
    };
    let mut server = Server::start_child(dir.path(), &child).await;
    Api::new(&server.base, Some(TOKEN_A))
        .create(&small("s", &["digest"]))
        .await;
    let _stuck = half_open(
        &server.base,
        "POST /v1/sessions HTTP/1.1\r\nHost: x\r\nContent-",
    )
    .await;
    // The connection is accepted before the signal: a request after it
    // on another connection is answered.
    let (status, _) = Api::new(&server.base, Some(TOKEN_A))
        .get("/v1/sessions")
        .await;
    assert_eq!(status, 200);
    server.terminate();
    let exit = server
        .exited_within(Duration::from_secs(60))
        .await
        .expect("the server stopped after SIGTERM");
    assert!(exit.success(), "{exit}");
}
