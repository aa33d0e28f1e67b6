//! A connection whose writes give up on a client that stopped reading.
//!
//! An answer is written as fast as the client reads it. A client that
//! reads nothing would hold its connection, and whatever the answer keeps
//! alive (a session snapshot, a heavy-read turn), for as long as it
//! likes. Here a write that stays blocked for the write timeout fails
//! with `TimedOut`, and hyper closes the connection.

use std::pin::Pin;
use std::task::Context;
use std::task::Poll;
use std::time::Duration;

use tokio::io::AsyncRead;
use tokio::io::AsyncWrite;
use tokio::io::ReadBuf;
use tokio::time::Sleep;

/// `inner` with a deadline on every write that makes no progress.
#[derive(Debug)]
pub(super) struct WriteDeadline<T> {
    inner: T,
    limit: Duration,
    /// Running while a write (or flush) waits; cleared by any progress.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<T> WriteDeadline<T> {
    pub(super) fn new(inner: T, limit: Duration) -> Self {
        WriteDeadline {
            inner,
            limit,
            stalled: None,
        }
    }

    /// What a write that returned `poll` means under the deadline.
    fn judge<R>(
        &mut self,
        cx: &mut Context<'_>,
        poll: Poll<std::io::Result<R>>,
    ) -> Poll<std::io::Result<R>> {
        match poll {
            Poll::Ready(result) => {
                self.stalled = None;
                Poll::Ready(result)
            }
            Poll::Pending => {
                let limit = self.limit;
                let stalled = self
                    .stalled
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                if stalled.as_mut().poll(cx).is_ready() {
                    self.stalled = None;
                    return Poll::Ready(Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("the client read nothing for {} s", limit.as_secs()),
                    )));
                }
                Poll::Pending
            }
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteDeadline<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.judge(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.judge(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.judge(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;

    /// A peer that never reads: the writer's buffer fills, then the
    /// deadline fails the write instead of waiting forever.
    #[tokio::test]
    async fn a_write_the_peer_never_reads_fails_after_the_limit() {
        let (ours, _theirs) = tokio::io::duplex(1024);
        let mut stream = WriteDeadline::new(ours, Duration::from_millis(200));
        let chunk = vec![0u8; 4096];
        // The guard only stops a hang (what the code before did: wait).
        let error = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                if let Err(error) = stream.write_all(&chunk).await {
                    return error;
                }
            }
        })
        .await
        .expect("the stalled write gave up");
        assert_eq!(error.kind(), std::io::ErrorKind::TimedOut);
    }

    #[tokio::test]
    async fn a_peer_that_reads_keeps_the_connection() {
        let (ours, mut theirs) = tokio::io::duplex(1024);
        let mut stream = WriteDeadline::new(ours, Duration::from_secs(60));
        let reader = tokio::spawn(async move {
            let mut sink = Vec::new();
            tokio::io::AsyncReadExt::read_to_end(&mut theirs, &mut sink)
                .await
                .map(|_| sink.len())
        });
        for _ in 0..64 {
            stream
                .write_all(&[1u8; 4096])
                .await
                .expect("the reader drains it");
        }
        drop(stream);
        assert_eq!(reader.await.expect("join").expect("read"), 64 * 4096);
    }
}
