//! Followers: LISTEN for appends made by any worker.
//!
//! `SessionStore` has no follow or watch operation, so the store offers
//! [`PgSessions::subscribe`] beside it. Every committed append sends a
//! NOTIFY on the schema's channel, inside its transaction, so a follower
//! hears of it only once it is committed and in commit order.

use std::sync::mpsc;
use std::time::Duration;

use futures::StreamExt;
use tokio_postgres::AsyncMessage;

use crate::error::PgError;
use crate::sessions::PgSessions;

/// One committed append: the session and its log's new length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Appended {
    /// The session appended to.
    pub session_id: String,
    /// The seq the next event will have (the log's length).
    pub next_seq: u64,
}

/// A live LISTEN on its own connection (outside the pool). Dropping it
/// closes the connection.
#[derive(Debug)]
pub struct Subscription {
    events: mpsc::Receiver<Result<Appended, PgError>>,
    task: tokio::task::JoinHandle<()>,
}

impl PgSessions {
    /// Listens for appends to `session_id` (or to every session of the
    /// schema when `None`). Appends committed after this returns are
    /// reported; a follower that needs what came before loads the log
    /// first and then skips announcements it has already read.
    ///
    /// # Errors
    /// Connection failures.
    pub fn subscribe(&self, session_id: Option<&str>) -> Result<Subscription, PgError> {
        let (config, tls) = (self.inner.config.clone(), self.inner.tls.clone());
        let (channel, target) = (self.channel(), self.inner.target.clone());
        let wanted = session_id.map(str::to_string);
        let (tx, rx) = mpsc::channel();
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let task = self.inner.bridge.spawn(async move {
            let q = |op| {
                let target = target.clone();
                move |source| PgError::Query { target, op, source }
            };
            let (client, mut connection) = match config.connect(tls).await {
                Ok(pair) => pair,
                Err(e) => {
                    let _ = ready_tx.send(Err(q("connect a follower")(e)));
                    return;
                }
            };
            let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
            // The LISTEN is sent while the connection is being driven below.
            let statement = format!("LISTEN \"{channel}\"");
            let listen = client.batch_execute(&statement);
            let mut listen = std::pin::pin!(listen);
            let mut ready_tx = Some(ready_tx);
            loop {
                tokio::select! {
                    done = &mut listen, if ready_tx.is_some() => {
                        if let Some(ready) = ready_tx.take() {
                            let failed = done.is_err();
                            let _ = ready.send(done.map_err(q("listen")));
                            if failed {
                                return;
                            }
                        }
                    }
                    message = messages.next() => match message {
                        Some(Ok(AsyncMessage::Notification(note))) => {
                            let Some(appended) = parse(note.payload()) else { continue };
                            if wanted.as_ref().is_some_and(|w| *w != appended.session_id) {
                                continue;
                            }
                            if tx.send(Ok(appended)).is_err() {
                                return;
                            }
                        }
                        Some(Ok(_)) => {}
                        Some(Err(e)) => {
                            let error = q("follow appends")(e);
                            match ready_tx.take() {
                                Some(ready) => drop(ready.send(Err(error))),
                                None => drop(tx.send(Err(error))),
                            }
                            return;
                        }
                        None => return,
                    },
                }
            }
        });
        let ready = self.inner.bridge.run(async move {
            ready_rx.await.map_err(|_| PgError::Runtime {
                reason: "the follower stopped before listening".into(),
            })?
        });
        match ready {
            Ok(()) => Ok(Subscription { events: rx, task }),
            Err(e) => {
                task.abort();
                Err(e)
            }
        }
    }
}

impl Subscription {
    /// The next append, waiting at most `timeout`; `None` when none came.
    /// An error ends the subscription (the connection was lost).
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Result<Appended, PgError>> {
        self.events.recv_timeout(timeout).ok()
    }

    /// The next append already received, without waiting.
    pub fn try_recv(&self) -> Option<Result<Appended, PgError>> {
        self.events.try_recv().ok()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn parse(payload: &str) -> Option<Appended> {
    let value: serde_json::Value = serde_json::from_str(payload).ok()?;
    Some(Appended {
        session_id: value.get("session")?.as_str()?.to_string(),
        next_seq: value.get("next_seq")?.as_u64()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notification_payload_parses_or_is_ignored() {
        assert_eq!(
            parse(r#"{"session":"s1","next_seq":4}"#),
            Some(Appended {
                session_id: "s1".into(),
                next_seq: 4
            })
        );
        assert_eq!(parse("garbage"), None);
        assert_eq!(parse(r#"{"session":"s1"}"#), None);
    }
}
