//! Catching up with other writers: a session shared through a store with
//! several writers (PostgreSQL) falls behind when another process appends.
//! [`Session::catch_up`] reads only the events it has not seen and applies
//! them as its own appends are applied, so the surface, its change journal
//! and every incremental consumer stay right.

use super::Mark;
use super::Session;
use crate::error::Place;
use crate::error::SessionError;
use crate::event::Seq;

impl Session {
    /// Reads and applies the events other writers appended to the store
    /// since this session last read or wrote it. Returns how many there
    /// were. A cheap head check first: with a one-writer store (JSONL,
    /// the default of [`SessionStore::head`](crate::SessionStore::head))
    /// or when nothing is new, nothing is read.
    ///
    /// Call it before deciding anything from the session in memory (an
    /// append, a plan) when other processes may write the same session,
    /// and after an append failed with
    /// [`StoreError::Conflict`](crate::StoreError::Conflict).
    ///
    /// # Errors
    /// The store's; [`SessionError::Invalid`] naming the event when a new
    /// event does not apply (the session is then as before) or when the
    /// store holds fewer events than the session.
    pub fn catch_up(&mut self) -> Result<usize, SessionError> {
        let Some(head) = self.store.head()? else {
            return Ok(0);
        };
        let len = self.events.len() as Seq;
        if head == len {
            return Ok(0);
        }
        let location = self.store.location();
        if head < len {
            return Err(SessionError::Invalid {
                place: Place::Line {
                    location,
                    line: head + 2,
                },
                field: "seq",
                reason: format!(
                    "the store's log ends before seq {head}, but this session holds {len} events"
                ),
            });
        }
        let fresh = self.store.load_from(len)?;
        let count = fresh.len();
        let mark = Mark {
            events: self.events.len(),
            journal: self.journal.len(),
            epoch: self.epoch,
        };
        let mut undos = Vec::new();
        let mut refolded = false;
        for event in fresh {
            let seq = event.seq;
            if let Err((field, reason)) = self.apply_event(event, &mut undos, &mut refolded) {
                self.rollback(mark, undos, refolded);
                return Err(SessionError::Invalid {
                    place: Place::Line {
                        location,
                        line: seq + 2,
                    },
                    field,
                    reason,
                });
            }
        }
        tracing::debug!(count, "caught up with other writers");
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use abridge_llm::Message;

    use crate::event::Draft;
    use crate::event::Header;
    use crate::store::MemoryStore;
    use crate::store::SessionStore;
    use crate::{Session, SessionError, StoreError};

    /// Two sessions over one shared log: two writers.
    fn two_writers() -> (Session, Session) {
        let store = MemoryStore::new();
        let a = Session::create(Box::new(store.clone()), Header::new("s")).expect("create");
        let (b, _) = Session::open(Box::new(store)).expect("open");
        (a, b)
    }

    #[test]
    fn a_stale_writer_conflicts_then_catches_up_and_appends() {
        let (mut a, mut b) = two_writers();
        a.append_message(Message::user("from a"))
            .expect("a appends");
        let refused = b.append_message(Message::user("from b"));
        assert!(
            matches!(
                refused,
                Err(SessionError::Store(StoreError::Conflict {
                    expected: 0,
                    found: 1,
                    ..
                }))
            ),
            "{refused:?}"
        );
        assert!(b.is_empty(), "the refused batch left nothing in memory");
        assert_eq!(b.catch_up().expect("catch up"), 1);
        assert_eq!(b.catch_up().expect("nothing new"), 0);
        let seq = b
            .append_message(Message::user("from b"))
            .expect("b appends");
        assert_eq!(seq, 1);
        a.catch_up().expect("a catches up");
        assert_eq!(a.surface().seqs(), b.surface().seqs());
        assert_eq!(a.surface().seqs(), &[0, 1]);
        assert_eq!(a.fold_full().seqs(), a.surface().seqs());
    }

    #[test]
    fn a_branch_from_the_other_writer_refolds_the_surface() {
        let (mut a, mut b) = two_writers();
        a.append_message(Message::user("one")).expect("one");
        a.append_message(Message::user("two")).expect("two");
        a.navigate(Some(0)).expect("back to the first");
        b.catch_up().expect("catch up");
        assert_eq!(b.surface().seqs(), a.surface().seqs());
        assert_eq!(b.surface().seqs(), &[0]);
        assert_eq!(b.leaf(), Some(2));
    }

    #[test]
    fn a_store_behind_the_session_is_named() {
        let store = MemoryStore::new();
        let mut a = Session::create(Box::new(store.clone()), Header::new("s")).expect("create");
        a.append_message(Message::user("one")).expect("one");
        // A fresh store with the same header but no events stands for a
        // log that lost its tail.
        let mut empty = MemoryStore::new();
        empty.create(&Header::new("s")).expect("create");
        let (mut behind, _) = Session::open(Box::new(store)).expect("open");
        behind.store = Box::new(empty);
        let error = behind.catch_up().unwrap_err();
        assert!(
            matches!(error, SessionError::Invalid { field: "seq", .. }),
            "{error:?}"
        );
        let _ = a
            .append(Draft::message(Message::user("two")))
            .expect("a goes on");
    }
}
