//! Heavy reads (`report`, and `recall`'s search): built off the async
//! workers, a bounded number at once, and the report on a copy of the
//! session taken under its lock, streamed out as it is written. (The
//! next `request` and the `context` are built off the workers and
//! streamed too, but take no turn: their cost is the surface's, bounded
//! by the window, and agents call `request` on every turn.)
//!
//! Built on a worker thread while holding the session's lock, four
//! reports of one 100 MB session took every worker: another tenant's
//! trivial `/stats` waited 9.9 s, and the server grew from 184 MB to
//! 1.7 GB. Here a heavy read first takes a turn ([`HeavyReads`]: at most
//! `heavy_reads` at once, one per tenant, so another tenant always finds
//! one), then copies what it reads under the lock (a [`snapshot`]: the
//! events are shared, not copied, so this is quick), lets the lock go,
//! and builds on the blocking pool, handing the answer to the client in
//! chunks ([`streamed`]) instead of holding all of it. A client that goes
//! away stops the build at its next chunk.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;

use abridge_compact::host::lock_session;
use abridge_session::Event;
use abridge_session::Header;
use abridge_session::LoadedLog;
use abridge_session::Session;
use abridge_session::SessionStore;
use abridge_session::StoreError;
use axum::body::Body;
use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::response::IntoResponse;
use axum::response::Response;
use tokio::sync::OwnedSemaphorePermit;
use tokio::sync::Semaphore;
use tokio::sync::mpsc;

use crate::auth::Tenant;
use crate::error::ApiError;
use crate::sessions::Live;

/// Heavy reads one tenant may run at once: one, so that with two or more
/// in all another tenant always finds a turn.
pub(crate) const PER_TENANT: usize = 1;

/// Bytes handed to the client at a time.
const CHUNK: usize = 64 * 1024;

/// Turns for heavy reads: at most `limit` at once, [`PER_TENANT`] per
/// tenant.
#[derive(Debug)]
pub(crate) struct HeavyReads {
    all: Arc<Semaphore>,
    tenants: Mutex<HashMap<Tenant, Arc<Semaphore>>>,
}

/// A heavy read's turn; the next one waiting gets it when this drops.
#[derive(Debug)]
pub(crate) struct Turn {
    _tenant: OwnedSemaphorePermit,
    _all: OwnedSemaphorePermit,
}

impl HeavyReads {
    pub(crate) fn new(limit: usize) -> Self {
        HeavyReads {
            all: Arc::new(Semaphore::new(limit)),
            tenants: Mutex::new(HashMap::new()),
        }
    }

    /// Waits for a turn of `tenant` (its own first, so one tenant's queue
    /// never holds a turn another tenant could use).
    pub(crate) async fn turn(&self, tenant: &Tenant) -> Result<Turn, ApiError> {
        let own = Arc::clone(
            self.tenants
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(tenant.clone())
                .or_insert_with(|| Arc::new(Semaphore::new(PER_TENANT))),
        );
        let closed = |_| ApiError::Unavailable("the service is shutting down".to_string());
        let own = own.acquire_owned().await.map_err(closed)?;
        let all = Arc::clone(&self.all)
            .acquire_owned()
            .await
            .map_err(closed)?;
        Ok(Turn {
            _tenant: own,
            _all: all,
        })
    }
}

/// A copy of `live`'s session as it is now, to read without its lock:
/// the events are copied under the lock (their messages are shared, so
/// this is quick) and folded into a session of their own after it. Call
/// off the async workers.
///
/// # Errors
/// When the copy does not fold (it folded as the original, so only on a
/// bug) .
pub(crate) fn snapshot(live: &Live) -> Result<Session, ApiError> {
    let frozen = {
        let session = lock_session(live.harness.session());
        Frozen {
            location: session.location(),
            header: session.header().clone(),
            events: Some(session.events().to_vec()),
        }
    };
    Session::open(Box::new(frozen))
        .map(|(session, _)| session)
        .map_err(|e| ApiError::Internal(format!("a copy of the session: {e}")))
}

/// A session's log, handed over once, that refuses writes.
#[derive(Debug)]
struct Frozen {
    location: String,
    header: Header,
    events: Option<Vec<Event>>,
}

impl SessionStore for Frozen {
    fn location(&self) -> String {
        format!("{} (a read-only copy)", self.location)
    }

    fn load(&mut self) -> Result<Option<LoadedLog>, StoreError> {
        Ok(Some(LoadedLog {
            header: self.header.clone(),
            events: self.events.take().unwrap_or_default(),
            report: abridge_session::LoadReport::default(),
        }))
    }

    fn create(&mut self, _header: &Header) -> Result<(), StoreError> {
        Err(self.read_only())
    }

    fn append(&mut self, _events: &[Event]) -> Result<(), StoreError> {
        Err(self.read_only())
    }

    fn sync(&mut self) -> Result<(), StoreError> {
        Ok(())
    }
}

impl Frozen {
    fn read_only(&self) -> StoreError {
        StoreError::Io {
            path: self.location().into(),
            op: "write",
            source: std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "a copy made for reading",
            ),
        }
    }
}

/// Where a streamed answer is written: chunks of [`CHUNK`] bytes handed
/// to the response as they fill. A write fails once the client is gone.
#[derive(Debug)]
pub(crate) struct Chunks {
    buffer: Vec<u8>,
    sender: mpsc::Sender<Result<Bytes, std::io::Error>>,
}

impl Chunks {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(
            &mut self.buffer,
            Vec::with_capacity(CHUNK),
        ));
        self.sender.blocking_send(Ok(chunk)).map_err(|_| {
            std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the client went away")
        })
    }
}

impl std::io::Write for Chunks {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= CHUNK {
            self.send()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}

/// An answer of `content_type` that `write` produces on the blocking
/// pool, streamed to the client while it is written; `hold` (a heavy
/// read's [`Turn`], or nothing) is kept until it is done. The status (200) is sent first: a failure part way is
/// logged and cuts the answer short, so the client sees an incomplete
/// body, never a complete wrong one.
pub(crate) fn streamed<H, F>(content_type: &'static str, hold: H, write: F) -> Response
where
    H: Send + 'static,
    F: FnOnce(&mut Chunks) -> Result<(), String> + Send + 'static,
{
    let (sender, receiver) = mpsc::channel(4);
    let span = tracing::Span::current();
    let dispatch = tracing::dispatcher::get_default(Clone::clone);
    tokio::task::spawn_blocking(move || {
        tracing::dispatcher::with_default(&dispatch, || {
            span.in_scope(|| {
                let _hold = hold;
                let mut out = Chunks {
                    buffer: Vec::with_capacity(CHUNK),
                    sender,
                };
                let written = write(&mut out)
                    .and_then(|()| std::io::Write::flush(&mut out).map_err(|e| e.to_string()));
                if let Err(error) = written {
                    tracing::warn!(%error, "a streamed answer was cut short");
                    let _ = out.sender.blocking_send(Err(std::io::Error::other(error)));
                }
            });
        });
    });
    let chunks = futures::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|chunk| (chunk, receiver))
    });
    ([(CONTENT_TYPE, content_type)], Body::from_stream(chunks)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_tenant_waits_for_its_own_turn_and_leaves_the_other_to_others() {
        let reads = HeavyReads::new(2);
        let a = Tenant::new("a").expect("a");
        let b = Tenant::new("b").expect("b");
        let first = reads.turn(&a).await.expect("a's turn");
        // a's second read waits for a's first; b still gets a turn.
        let second =
            tokio::time::timeout(std::time::Duration::from_millis(50), reads.turn(&a)).await;
        assert!(second.is_err(), "a second turn of one tenant waits");
        let other = reads.turn(&b).await.expect("b's turn");
        drop((first, other));
        reads.turn(&a).await.expect("a's turn once its first ended");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_streamed_answer_arrives_whole_and_in_chunks() {
        let reads = HeavyReads::new(1);
        let turn = reads
            .turn(&Tenant::new("a").expect("a"))
            .await
            .expect("turn");
        let response = streamed("text/plain", turn, |out| {
            for i in 0..50_000 {
                std::io::Write::write_all(out, format!("line {i}\n").as_bytes())
                    .map_err(|e| e.to_string())?;
            }
            Ok(())
        });
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        let text = String::from_utf8(body.to_vec()).expect("utf-8");
        assert_eq!(text.lines().count(), 50_000);
        assert!(text.ends_with("line 49999\n"));
    }
}
