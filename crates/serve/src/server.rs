//! The accept loop: hyper's HTTP/1 connections with the service's time
//! limits, a cap on open connections, and a shutdown that ends.
//!
//! `axum::serve` is not used: it sets no header timeout (a client that
//! sends half a request head holds its connection forever), has no
//! connection cap, and at shutdown waits for every connection however
//! long it takes, so one half-open connection kept the process running
//! after SIGTERM. Here:
//!
//! - each connection reads request heads under hyper's header timeout,
//!   which runs from the moment the connection waits for a head: a
//!   half-sent head and an idle keep-alive connection both end after
//!   [`ServiceLimits::header_timeout`];
//! - a write that makes no progress for [`ServiceLimits::write_timeout`]
//!   (a client that stopped reading) closes the connection ([`io`]);
//! - past [`ServiceLimits::max_connections`] a new connection is
//!   answered 503 and closed at once, never queued;
//! - at shutdown the listener closes, every connection is asked to finish
//!   its request and close, and those still open after
//!   [`ServiceLimits::shutdown_timeout`] are dropped.
//!
//! Request bodies are timed by the `read_body` middleware, where the
//! answer can still be a 408.

mod io;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use hyper_util::rt::TokioTimer;
use tokio::net::TcpListener;
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use tokio::sync::Semaphore;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::limits::ServiceLimits;

/// Serves `router` on `listener` with the service's connection limits
/// (header and write timeouts, the connection cap, a shutdown that ends)
/// until `shutdown` completes: the accept loop of every HTTP face
/// (`abridge serve`, `abridge proxy`). Bodies are the router's business
/// ([`read_limited`](crate::read_limited)).
pub async fn serve_hardened(
    listener: TcpListener,
    router: Router,
    limits: ServiceLimits,
    shutdown: impl Future<Output = ()>,
) {
    serve(listener, router, Arc::new(limits), shutdown).await;
}

/// Serves `router` on `listener` until `shutdown` completes, then closes
/// the listener and ends every connection within the shutdown timeout.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    limits: Arc<ServiceLimits>,
    shutdown: impl Future<Output = ()>,
) {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let (closing, closed) = watch::channel(false);
    let mut connections = JoinSet::new();
    let full = refusal(limits.max_connections);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        accept_failed(&error).await;
                        continue;
                    }
                };
                match Arc::clone(&permits).try_acquire_owned() {
                    Ok(permit) => {
                        connections.spawn(connection(
                            stream,
                            peer,
                            router.clone(),
                            Arc::clone(&limits),
                            closed.clone(),
                            permit,
                        ));
                    }
                    Err(_) => refuse(&stream, peer, &full),
                }
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    drop(listener);
    let open = connections.len();
    tracing::info!(
        open,
        "shutting down: listener closed, connections asked to finish"
    );
    closing.send_replace(true);
    let deadline = tokio::time::sleep(limits.shutdown_timeout);
    tokio::pin!(deadline);
    loop {
        tokio::select! {
            next = connections.join_next() => if next.is_none() { break },
            () = &mut deadline => {
                let dropped = connections.len();
                tracing::warn!(dropped, "connections still open after the shutdown timeout; dropping them");
                connections.abort_all();
                while connections.join_next().await.is_some() {}
                break;
            }
        }
    }
}

/// One connection, until the client closes it, a limit ends it, or
/// shutdown asks it to finish (then it ends after its current request).
async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    router: Router,
    limits: Arc<ServiceLimits>,
    mut closing: watch::Receiver<bool>,
    _permit: OwnedSemaphorePermit,
) {
    if let Err(error) = stream.set_nodelay(true) {
        tracing::debug!(%peer, %error, "cannot set TCP_NODELAY");
    }
    let stream = TokioIo::new(io::WriteDeadline::new(stream, limits.write_timeout));
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        tower::ServiceExt::oneshot(router.clone(), request)
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let connection = builder.serve_connection(stream, service);
    tokio::pin!(connection);
    let mut asked = false;
    loop {
        tokio::select! {
            result = connection.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%peer, %error, "connection ended");
                }
                return;
            }
            changed = closing.wait_for(|closing| *closing), if !asked => {
                asked = true;
                if changed.is_ok() {
                    connection.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

/// The answer a connection past the cap gets before it is closed: the
/// error body every other refusal has.
fn refusal(limit: usize) -> Vec<u8> {
    let body = serde_json::json!({"error": {
        "code": "unavailable",
        "message": format!("the service has {limit} connections open, its limit; retry shortly"),
        "limit": limit,
    }})
    .to_string();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Answers a connection past the cap without waiting for it: one
/// non-blocking write (a fresh socket's buffer takes it whole), then the
/// socket is closed.
fn refuse(stream: &TcpStream, peer: SocketAddr, answer: &[u8]) {
    tracing::warn!(%peer, "connection refused: at the connection limit");
    let _ = stream.try_write(answer);
}

/// A failed accept: a connection that died in the backlog is skipped; a
/// lack of resources (no file descriptors) is logged and retried after a
/// pause, so the loop does not spin.
async fn accept_failed(error: &std::io::Error) {
    use std::io::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::ConnectionAborted | ErrorKind::ConnectionReset | ErrorKind::ConnectionRefused
    ) {
        return;
    }
    tracing::error!(%error, "accepting a connection failed; retrying shortly");
    tokio::time::sleep(Duration::from_millis(100)).await;
}
