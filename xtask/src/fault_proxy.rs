//! A fault proxy on loopback: it stands before an OpenAI-compatible server
//! (the real llama.cpp server in `cargo xtask e2e`) and, request by
//! request, forwards or breaks the exchange as scripted: a reply cut after
//! N body bytes, a stall that never answers, an error status with or
//! without Retry-After, a body that is not JSON, a body larger than any
//! client cap. With no upstream it answers chat completions itself (the
//! mock summarizer of the load run).
//!
//! It speaks just enough HTTP/1.1 for one client (reqwest): a request is a
//! head and a `content-length` body; forwarded answers are copied byte for
//! byte, with `connection: close` added so that a connection the proxy
//! cuts is never reused by the client's pool.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::time::Duration;
use std::time::Instant;

use anyhow::Context;
use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio::net::TcpStream;

/// What the proxy does with one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Forward to the upstream and copy the answer back unchanged.
    Pass,
    /// Forward, then close both connections after `after` bytes of the
    /// answer's body (a stream cut mid-event, a JSON body cut short).
    Cut {
        /// Body bytes passed on before the cut.
        after: usize,
    },
    /// Read the request and never answer; the connection is closed when
    /// the client gives up (its timeout) or after ten minutes.
    Stall,
    /// Answer with this status and a JSON error body, at once.
    Status {
        /// The HTTP status (429, 500, 503...).
        status: u16,
        /// Seconds sent as `Retry-After`, if any.
        retry_after: Option<u32>,
    },
    /// Answer 200 with a JSON content type and a body that is not JSON.
    Malformed,
    /// Answer 200 with a chat completion of `bytes` bytes, sent without a
    /// length and written until the client stops reading.
    Oversize {
        /// The size of the whole body.
        bytes: usize,
    },
    /// Answer a chat completion locally with this text (no upstream),
    /// after a pause standing in for the model's thinking.
    Mock {
        /// The assistant's text.
        text: String,
        /// The pause before answering.
        delay: Duration,
    },
}

/// One request the proxy received.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    /// When its head and body had arrived.
    pub(crate) at: Instant,
    /// What was done with it.
    pub(crate) fault: Fault,
    /// Answer body bytes written to the client (oversize, cut, pass).
    pub(crate) written: usize,
    /// True once the proxy is done with it (answered, cut, or the client
    /// went away).
    pub(crate) done: bool,
}

#[derive(Debug)]
struct Script {
    queue: VecDeque<Fault>,
    standing: Fault,
    seen: Vec<Seen>,
}

#[derive(Debug)]
struct Shared {
    script: Mutex<Script>,
    upstream: Option<SocketAddr>,
}

impl Shared {
    /// The script, locked briefly: never held across an await.
    fn script(&self) -> MutexGuard<'_, Script> {
        self.script
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes the next fault and records the request; returns its index.
    fn next(&self) -> (usize, Fault) {
        let mut script = self.script();
        let fault = script
            .queue
            .pop_front()
            .unwrap_or_else(|| script.standing.clone());
        script.seen.push(Seen {
            at: Instant::now(),
            fault: fault.clone(),
            written: 0,
            done: false,
        });
        (script.seen.len() - 1, fault)
    }

    fn wrote(&self, index: usize, bytes: usize) {
        if let Some(seen) = self.script().seen.get_mut(index) {
            seen.written += bytes;
        }
    }

    fn finished(&self, index: usize) {
        if let Some(seen) = self.script().seen.get_mut(index) {
            seen.done = true;
        }
    }
}

/// A running proxy; stopped (listener and open connections) on drop.
#[derive(Debug)]
pub(crate) struct FaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl FaultProxy {
    /// Starts a proxy before `upstream` (an `http://host:port/...` base
    /// URL), passing everything through until told otherwise.
    pub(crate) fn before(upstream: &str) -> anyhow::Result<Self> {
        let authority = upstream
            .strip_prefix("http://")
            .and_then(|rest| rest.split('/').next())
            .with_context(|| format!("upstream {upstream:?} is not an http:// URL"))?;
        let addr: SocketAddr = authority
            .parse()
            .with_context(|| format!("upstream {upstream:?} is not host:port"))?;
        Self::start(Some(addr), Fault::Pass)
    }

    /// Starts a mock that answers every chat completion with `text`
    /// after `delay` (each request waits on its own: many are answered at
    /// once).
    pub(crate) fn mock(text: &str, delay: Duration) -> anyhow::Result<Self> {
        Self::start(
            None,
            Fault::Mock {
                text: text.to_string(),
                delay,
            },
        )
    }

    fn start(upstream: Option<SocketAddr>, standing: Fault) -> anyhow::Result<Self> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0"))?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            script: Mutex::new(Script {
                queue: VecDeque::new(),
                standing,
                seen: Vec::new(),
            }),
            upstream,
        });
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let serving = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("fault-proxy".into())
            .spawn(move || {
                runtime.block_on(async move {
                    tokio::select! {
                        () = accept(listener, serving) => {}
                        _ = stopped => {}
                    }
                });
                // Dropping the runtime here ends every connection task.
            })?;
        Ok(FaultProxy {
            addr,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The base URL a client is given: `http://127.0.0.1:PORT/v1`.
    pub(crate) fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// From now on every request gets `fault`; anything queued is dropped.
    pub(crate) fn set(&self, fault: Fault) {
        let mut script = self.shared.script();
        script.queue.clear();
        script.standing = fault;
    }

    /// Every request so far, in order of arrival.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.shared.script().seen.clone()
    }

    /// [`seen`](Self::seen) once the proxy is done with every request (a
    /// write to a client that gave up ends with an error shortly after),
    /// or after `limit`.
    pub(crate) fn settled(&self, limit: Duration) -> Vec<Seen> {
        let deadline = Instant::now() + limit;
        loop {
            let seen = self.seen();
            if seen.iter().all(|s| s.done) || Instant::now() > deadline {
                return seen;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

async fn accept(listener: TcpListener, shared: Arc<Shared>) {
    while let Ok((socket, _)) = listener.accept().await {
        let _ = socket.set_nodelay(true);
        tokio::spawn(serve(socket, Arc::clone(&shared)));
    }
}

/// Where a head ends (after its blank line), if it has arrived.
fn head_end(buffer: &[u8]) -> Option<usize> {
    buffer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|at| at + 4)
}

/// The `content-length` of a head, 0 when absent.
fn content_length(head: &str) -> usize {
    head.lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0)
}

/// Reads one whole request (head and body) from `socket`, keeping bytes
/// of a following request in `buffer`. `None` when the client closed.
async fn read_request(
    socket: &mut TcpStream,
    buffer: &mut Vec<u8>,
) -> std::io::Result<Option<(String, Vec<u8>)>> {
    let mut scratch = vec![0u8; 64 * 1024];
    let end = loop {
        if let Some(end) = head_end(buffer) {
            break end;
        }
        let n = socket.read(&mut scratch).await?;
        if n == 0 {
            return Ok(None);
        }
        buffer.extend_from_slice(&scratch[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
    let total = end + content_length(&head);
    while buffer.len() < total {
        let n = socket.read(&mut scratch).await?;
        if n == 0 {
            return Ok(None);
        }
        buffer.extend_from_slice(&scratch[..n]);
    }
    let body = buffer[end..total].to_vec();
    buffer.drain(..total);
    Ok(Some((head, body)))
}

/// One client connection: requests in turn until one closes it.
async fn serve(mut client: TcpStream, shared: Arc<Shared>) {
    let mut buffer = Vec::new();
    while let Ok(Some((head, body))) = read_request(&mut client, &mut buffer).await {
        let (index, fault) = shared.next();
        let keep_open = match fault {
            Fault::Mock { text, delay } => {
                tokio::time::sleep(delay).await;
                answer(&mut client, 200, &[], &completion(&text, &body))
                    .await
                    .is_ok()
            }
            Fault::Status {
                status,
                retry_after,
            } => {
                let extra: Vec<(&str, String)> = retry_after
                    .map(|secs| ("retry-after", secs.to_string()))
                    .into_iter()
                    .collect();
                let message = format!(
                    r#"{{"error":{{"message":"injected status {status}","type":"server_error"}}}}"#
                );
                answer(&mut client, status, &extra, message.as_bytes())
                    .await
                    .is_ok()
            }
            Fault::Malformed => answer(
                &mut client,
                200,
                &[],
                br#"{"choices":[{"message":{"content":"#,
            )
            .await
            .is_ok(),
            Fault::Stall => {
                // Wait for the client to hang up (its timeout), reading
                // whatever it sends.
                let mut sink = [0u8; 1024];
                let _ = tokio::time::timeout(Duration::from_secs(600), async {
                    while matches!(client.read(&mut sink).await, Ok(n) if n > 0) {}
                })
                .await;
                false
            }
            Fault::Oversize { bytes } => {
                let written = oversize(&mut client, bytes).await;
                shared.wrote(index, written);
                false
            }
            Fault::Pass => {
                pass_on(&shared, index, &mut client, &head, &body, None).await;
                false
            }
            Fault::Cut { after } => {
                pass_on(&shared, index, &mut client, &head, &body, Some(after)).await;
                false
            }
        };
        shared.finished(index);
        if !keep_open {
            break;
        }
    }
    let _ = client.shutdown().await;
}

/// Forwards one request (see [`forward`]) and records what it passed on.
async fn pass_on(
    shared: &Shared,
    index: usize,
    client: &mut TcpStream,
    head: &str,
    body: &[u8],
    cut: Option<usize>,
) {
    let written = match shared.upstream {
        Some(upstream) => forward(client, upstream, head, body, cut).await,
        None => {
            let _ = answer(client, 502, &[], b"no upstream").await;
            0
        }
    };
    shared.wrote(index, written);
}

/// Writes a complete answer with a length (the connection stays usable).
async fn answer(
    client: &mut TcpStream,
    status: u16,
    extra: &[(&str, String)],
    body: &[u8],
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        reason(status),
        body.len()
    );
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    client.write_all(head.as_bytes()).await?;
    client.write_all(body).await
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Status",
    }
}

/// A chat completion answering `request` with `text`, with token figures
/// from the sizes (a quarter of the bytes) so a meter anchors on them.
fn completion(text: &str, request: &[u8]) -> Vec<u8> {
    let prompt = request.len() / 4;
    let output = text.len() / 4 + 1;
    serde_json::json!({
        "id": "mock-1",
        "object": "chat.completion",
        "model": "mock",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "stop"
        }],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": output,
            "total_tokens": prompt + output
        }
    })
    .to_string()
    .into_bytes()
}

/// Writes a 200 chat completion of `bytes` bytes without a length, until
/// done or the client stops reading; returns the body bytes written.
async fn oversize(client: &mut TcpStream, bytes: usize) -> usize {
    let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";
    if client.write_all(head.as_bytes()).await.is_err() {
        return 0;
    }
    let opening = br#"{"choices":[{"index":0,"message":{"role":"assistant","content":""#;
    let chunk = vec![b'a'; 64 * 1024];
    let mut written = 0;
    if client.write_all(opening).await.is_err() {
        return written;
    }
    written += opening.len();
    while written < bytes {
        let n = chunk.len().min(bytes - written);
        if client.write_all(&chunk[..n]).await.is_err() {
            break;
        }
        written += n;
    }
    written
}

/// Sends the request upstream on a fresh connection and copies the answer
/// back, with `connection: close` in its head; with `cut`, closes after
/// that many body bytes. Returns the body bytes passed on.
async fn forward(
    client: &mut TcpStream,
    upstream: SocketAddr,
    head: &str,
    body: &[u8],
    cut: Option<usize>,
) -> usize {
    let Ok(mut server) = TcpStream::connect(upstream).await else {
        let _ = answer(client, 502, &[], b"upstream unreachable").await;
        return 0;
    };
    let _ = server.set_nodelay(true);
    let sent = async {
        server.write_all(close_head(head).as_bytes()).await?;
        server.write_all(body).await
    };
    if sent.await.is_err() {
        let _ = answer(client, 502, &[], b"upstream write failed").await;
        return 0;
    }
    let mut buffer = Vec::new();
    let mut scratch = vec![0u8; 64 * 1024];
    let end = loop {
        if let Some(end) = head_end(&buffer) {
            break end;
        }
        match server.read(&mut scratch).await {
            Ok(n) if n > 0 => buffer.extend_from_slice(&scratch[..n]),
            _ => return 0,
        }
    };
    let answer_head = String::from_utf8_lossy(&buffer[..end]).into_owned();
    if client
        .write_all(close_head(&answer_head).as_bytes())
        .await
        .is_err()
    {
        return 0;
    }
    let mut pending = buffer.split_off(end);
    let mut written = 0;
    loop {
        let allowed = cut.map_or(pending.len(), |limit| {
            pending.len().min(limit.saturating_sub(written))
        });
        if client.write_all(&pending[..allowed]).await.is_err() {
            return written;
        }
        written += allowed;
        if cut.is_some_and(|limit| written >= limit) {
            return written;
        }
        match server.read(&mut scratch).await {
            Ok(n) if n > 0 => pending = scratch[..n].to_vec(),
            _ => return written,
        }
    }
}

/// `head` with any `connection` header replaced by `connection: close`.
fn close_head(head: &str) -> String {
    let mut out = String::with_capacity(head.len() + 20);
    for line in head.split("\r\n").filter(|line| !line.is_empty()) {
        let is_connection = line
            .split_once(':')
            .is_some_and(|(name, _)| name.trim().eq_ignore_ascii_case("connection"));
        if !is_connection {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("connection: close\r\n\r\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_head_replaces_keep_alive() {
        let head = "POST /v1/chat HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\ncontent-length: 2\r\n\r\n";
        assert_eq!(
            close_head(head),
            "POST /v1/chat HTTP/1.1\r\nHost: x\r\ncontent-length: 2\r\nconnection: close\r\n\r\n"
        );
    }

    #[test]
    fn content_length_is_read_case_blind() {
        assert_eq!(
            content_length("POST / HTTP/1.1\r\nContent-Length: 12\r\n\r\n"),
            12
        );
        assert_eq!(content_length("GET / HTTP/1.1\r\n\r\n"), 0);
    }
}
