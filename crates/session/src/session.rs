//! The live session: the log in memory, its active path and its surface.

use std::collections::HashSet;

use abridge_llm::SharedMessage;

use crate::error::Place;
use crate::error::SessionError;
use crate::event::Draft;
use crate::event::Event;
use crate::event::EventBody;
use crate::event::Header;
use crate::event::Seq;
use crate::lease::Leases;
use crate::store::LoadReport;
use crate::store::MemoryStore;
use crate::store::SessionStore;
use crate::surface::Surface;
use crate::surface::SurfaceChange;
use crate::surface::Undo;

mod catch_up;
mod hold;
mod rules;
mod writer;

pub use rules::check_drafts;
pub use rules::check_drafts_with;
pub use writer::LogWriter;
pub use writer::WRITE_BATCH_BYTES;
pub use writer::WRITE_BATCH_EVENTS;
pub use writer::batch_is_full;

/// A position in the surface change journal, for consumers that keep
/// running totals (see [`Session::surface_changes_since`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SurfaceCursor {
    epoch: u64,
    index: usize,
}

/// What a navigation did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Navigation {
    /// The `leaf` event appended to record it.
    pub leaf_event: Seq,
    /// The leaf before navigating.
    pub from: Option<Seq>,
    /// The event navigated to (`None`: before the first event).
    pub target: Option<Seq>,
    /// The deepest event on both the old and the new path.
    pub common_ancestor: Option<Seq>,
    /// Events on the old path after the common ancestor, oldest first: the
    /// branch that was left, which a branch summary may describe.
    pub abandoned: Vec<Seq>,
}

/// A session log in memory, backed by a [`SessionStore`].
///
/// Every append is validated before anything is written; a batch is
/// written in one store call and either lands whole or leaves no trace,
/// in memory and on disk. The surface is kept incrementally: appending on
/// the active leaf costs O(1) (a replace costs the length of the surface
/// after its span).
#[derive(Debug)]
pub struct Session {
    header: Header,
    events: Vec<Event>,
    surface: Surface,
    journal: Vec<SurfaceChange>,
    epoch: u64,
    store: Box<dyn SessionStore>,
    leases: Leases,
    /// Appended images claiming more pixels are refused.
    max_image_pixels: u64,
}

impl Session {
    /// Creates a new session in `store`.
    ///
    /// # Errors
    /// The store's, for example when a session already exists there.
    pub fn create(mut store: Box<dyn SessionStore>, header: Header) -> Result<Self, SessionError> {
        store.create(&header)?;
        Ok(Session {
            header,
            events: Vec::new(),
            surface: Surface::default(),
            journal: Vec::new(),
            epoch: 0,
            store,
            leases: Leases::default(),
            max_image_pixels: abridge_llm::DEFAULT_MAX_IMAGE_PIXELS,
        })
    }

    /// Work in flight on this session that the log cannot show (a
    /// compaction's model call): see [`Leases`].
    pub fn leases(&self) -> &Leases {
        &self.leases
    }

    /// A new session in a fresh [`MemoryStore`].
    pub fn in_memory(session_id: &str) -> Self {
        let mut store = MemoryStore::new();
        let header = Header::new(session_id);
        // A fresh memory store always accepts a header.
        let _ = store.create(&header);
        Session {
            header,
            events: Vec::new(),
            surface: Surface::default(),
            journal: Vec::new(),
            epoch: 0,
            store: Box::new(store),
            leases: Leases::default(),
            max_image_pixels: abridge_llm::DEFAULT_MAX_IMAGE_PIXELS,
        }
    }

    /// Opens the session in `store`, validating every event (seq, parent)
    /// and every surface operation on the active path.
    ///
    /// # Errors
    /// [`SessionError::Invalid`] naming the line and field of the first bad
    /// event; the store's errors, among them
    /// [`StoreError::Torn`](crate::StoreError::Torn) from a
    /// [`JsonlStore`](crate::JsonlStore) opened to write on a log a crash
    /// left torn (nothing is changed; see
    /// [`JsonlStore::set_aside_torn`](crate::JsonlStore::set_aside_torn));
    /// `NotCreated` when the store is empty.
    pub fn open(mut store: Box<dyn SessionStore>) -> Result<(Self, LoadReport), SessionError> {
        let location = store.location();
        let loaded = store.load()?.ok_or(crate::error::StoreError::NotCreated {
            location: location.clone(),
        })?;
        for (index, event) in loaded.events.iter().enumerate() {
            let place = || Place::Line {
                location: location.clone(),
                line: index as u64 + 2,
            };
            rules::check_links(event.seq, event.parent, index as u64).map_err(
                |(field, reason)| SessionError::Invalid {
                    place: place(),
                    field,
                    reason,
                },
            )?;
        }
        let mut session = Session {
            header: loaded.header,
            events: loaded.events,
            surface: Surface::default(),
            journal: Vec::new(),
            epoch: 0,
            store,
            leases: Leases::default(),
            max_image_pixels: abridge_llm::DEFAULT_MAX_IMAGE_PIXELS,
        };
        session
            .refold()
            .map_err(|(seq, field, reason)| SessionError::Invalid {
                place: Place::Line {
                    location,
                    line: seq + 2,
                },
                field,
                reason,
            })?;
        Ok((session, loaded.report))
    }

    /// The header line.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Every event, in log order.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// The event with this seq.
    pub fn event(&self, seq: Seq) -> Option<&Event> {
        usize::try_from(seq).ok().and_then(|i| self.events.get(i))
    }

    /// The message of a message event.
    pub fn message(&self, seq: Seq) -> Option<&SharedMessage> {
        self.event(seq).and_then(Event::message)
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// True when no event has been written.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The store's location, for messages.
    pub fn location(&self) -> String {
        self.store.location()
    }

    /// The leaf: the last event. `None` for an empty log.
    pub fn leaf(&self) -> Option<Seq> {
        self.events.last().map(|e| e.seq)
    }

    /// What the model sees, as seqs.
    pub fn surface(&self) -> &Surface {
        &self.surface
    }

    /// What the model sees, as messages (cheap: each is an `Arc` clone).
    pub fn surface_messages(&self) -> Vec<SharedMessage> {
        self.surface
            .seqs()
            .iter()
            .filter_map(|seq| self.message(*seq).cloned())
            .collect()
    }

    /// The seqs from the root to `seq`, oldest first.
    pub fn path_to(&self, seq: Option<Seq>) -> Vec<Seq> {
        rules::path_to(&self.events[..], seq)
    }

    /// The active path: root to leaf.
    pub fn active_path(&self) -> Vec<Seq> {
        self.path_to(self.leaf())
    }

    /// The deepest event that both `a` and `b` descend from (or are).
    pub fn common_ancestor(&self, a: Option<Seq>, b: Option<Seq>) -> Option<Seq> {
        let on_a: HashSet<Seq> = self.path_to(a).into_iter().collect();
        let mut cursor = b;
        let mut steps = 0;
        while let Some(current) = cursor {
            if on_a.contains(&current) || steps > self.events.len() {
                return on_a.contains(&current).then_some(current);
            }
            steps += 1;
            cursor = self.event(current).and_then(|e| e.parent);
        }
        None
    }

    /// The events on the path to `from` that are not on the path to `to`,
    /// oldest first: what navigating from `from` to `to` leaves behind.
    pub fn abandoned(&self, from: Option<Seq>, to: Option<Seq>) -> Vec<Seq> {
        let ancestor = self.common_ancestor(from, to);
        let path = self.path_to(from);
        let keep = match ancestor {
            Some(a) => path.iter().position(|s| *s == a).map_or(0, |i| i + 1),
            None => 0,
        };
        path[keep..].to_vec()
    }

    /// A cursor at the end of the change journal.
    pub fn surface_cursor(&self) -> SurfaceCursor {
        SurfaceCursor {
            epoch: self.epoch,
            index: self.journal.len(),
        }
    }

    /// The surface changes since `cursor`, oldest first. `None` when the
    /// surface was refolded since (navigation, a branch, a rollback), so the
    /// caller must recount from [`Session::surface`].
    pub fn surface_changes_since(&self, cursor: SurfaceCursor) -> Option<&[SurfaceChange]> {
        if cursor.epoch != self.epoch {
            return None;
        }
        self.journal.get(cursor.index..)
    }

    /// Appends one event.
    ///
    /// # Errors
    /// See [`Session::append_batch`].
    pub fn append(&mut self, draft: Draft) -> Result<Seq, SessionError> {
        let seqs = self.append_batch(vec![draft])?;
        Ok(seqs[0])
    }

    /// Refuses appended images that claim more than `limit` pixels (by
    /// their header, else their stated size), default
    /// [`DEFAULT_MAX_IMAGE_PIXELS`](abridge_llm::DEFAULT_MAX_IMAGE_PIXELS).
    /// Events already in the log are not checked: they are history, and
    /// nothing in abridge decodes an image.
    pub fn set_max_image_pixels(&mut self, limit: u64) {
        self.max_image_pixels = limit;
    }

    /// Appends a message on the active leaf.
    ///
    /// # Errors
    /// See [`Session::append_batch`].
    pub fn append_message(&mut self, message: abridge_llm::Message) -> Result<Seq, SessionError> {
        self.append(Draft::message(message))
    }

    /// Validates, writes and applies `drafts` in order, as one store write.
    ///
    /// Each draft is checked against the state left by the ones before it.
    /// If any is invalid or the write fails, nothing is written and the
    /// session is exactly as before.
    ///
    /// # Errors
    /// [`SessionError::Invalid`] naming the draft and field;
    /// [`SessionError::Store`] when the write fails.
    pub fn append_batch(&mut self, drafts: Vec<Draft>) -> Result<Vec<Seq>, SessionError> {
        let mark = Mark {
            events: self.events.len(),
            journal: self.journal.len(),
            epoch: self.epoch,
        };
        let mut undos: Vec<Undo> = Vec::new();
        let mut refolded = false;
        let mut seqs = Vec::with_capacity(drafts.len());
        for (index, draft) in drafts.into_iter().enumerate() {
            match self.apply_draft(draft, &mut undos, &mut refolded) {
                Ok(seq) => seqs.push(seq),
                Err((field, reason)) => {
                    self.rollback(mark, undos, refolded);
                    return Err(SessionError::Invalid {
                        place: Place::Draft { index },
                        field,
                        reason,
                    });
                }
            }
        }
        if let Err(error) = self.store.append(&self.events[mark.events..]) {
            self.rollback(mark, undos, refolded);
            return Err(error.into());
        }
        tracing::trace!(count = seqs.len(), "appended events");
        Ok(seqs)
    }

    /// Moves the leaf to `target` by appending a `leaf` event whose parent
    /// is `target`, so the choice survives a restart.
    ///
    /// # Errors
    /// Unknown target; a surface operation on the new path that does not
    /// apply; the store's errors.
    pub fn navigate(&mut self, target: Option<Seq>) -> Result<Navigation, SessionError> {
        if let Some(t) = target
            && self.event(t).is_none()
        {
            return Err(SessionError::UnknownSeq {
                seq: t,
                len: self.events.len(),
            });
        }
        let from = self.leaf();
        let common_ancestor = self.common_ancestor(from, target);
        let abandoned = self.abandoned(from, target);
        let leaf_event = self.append(Draft::body(EventBody::Leaf).with_parent(target))?;
        tracing::debug!(?from, ?target, abandoned = abandoned.len(), "navigated");
        Ok(Navigation {
            leaf_event,
            from,
            target,
            common_ancestor,
            abandoned,
        })
    }

    /// Makes every appended event durable now.
    ///
    /// # Errors
    /// The store's.
    pub fn sync(&mut self) -> Result<(), SessionError> {
        Ok(self.store.sync()?)
    }

    /// Folds the active path from scratch, without touching the live
    /// surface: what the incremental fold must always equal.
    pub fn fold_full(&self) -> Surface {
        let mut surface = Surface::default();
        for seq in self.active_path() {
            if let Some(m) = self.event(seq).and_then(Event::message_event)
                && surface.check(seq, &m.op).is_ok()
            {
                surface.apply(seq, &m.op);
            }
        }
        surface
    }

    fn apply_draft(
        &mut self,
        draft: Draft,
        undos: &mut Vec<Undo>,
        refolded: &mut bool,
    ) -> Result<Seq, (&'static str, String)> {
        let seq = self.events.len() as Seq;
        let leaf = self.leaf();
        let parent = draft.parent.unwrap_or(leaf);
        let event = Event {
            seq,
            parent,
            time: draft.time.unwrap_or_else(crate::time::now_rfc3339),
            body: draft.body,
        };
        // The pixel cap guards what this process accepts; an event another
        // writer already logged is caught up as it is.
        if let EventBody::Message(m) = &event.body {
            rules::check_image(m, self.max_image_pixels)?;
        }
        self.apply_event(event, undos, refolded)
    }

    /// Validates `event` against the state in memory and applies it: the
    /// one path both a new draft and a caught-up event take.
    fn apply_event(
        &mut self,
        event: Event,
        undos: &mut Vec<Undo>,
        refolded: &mut bool,
    ) -> Result<Seq, (&'static str, String)> {
        let (seq, parent, leaf) = (event.seq, event.parent, self.leaf());
        rules::check_links(seq, parent, self.events.len() as Seq)?;
        if parent == leaf {
            if let EventBody::Message(m) = &event.body {
                rules::check_message(&self.events[..], &self.surface, seq, m)?;
                let (change, undo) = self.surface.apply(seq, &m.op);
                self.journal.push(change);
                undos.push(undo);
            }
            self.events.push(event);
        } else {
            // The active path changes: refold. A rejected batch refolds
            // again after truncating, which restores the old surface.
            *refolded = true;
            self.events.push(event);
            if let Err((_, field, reason)) = self.refold() {
                self.events.pop();
                return Err((field, reason));
            }
        }
        Ok(seq)
    }

    /// Rebuilds the surface from the active path, validating every
    /// operation. On error returns the seq, field and reason.
    fn refold(&mut self) -> Result<(), (Seq, &'static str, String)> {
        let (surface, journal) = rules::fold(&self.events[..], self.leaf())?;
        self.surface = surface;
        self.journal = journal;
        self.epoch += 1;
        Ok(())
    }

    fn rollback(&mut self, mark: Mark, undos: Vec<Undo>, refolded: bool) {
        self.events.truncate(mark.events);
        if refolded {
            // The path before the batch was valid, so this refold cannot
            // fail; consumers see a new epoch and recount.
            let _ = self.refold();
        } else {
            for undo in undos.into_iter().rev() {
                self.surface.undo(undo);
            }
            self.journal.truncate(mark.journal);
            self.epoch = mark.epoch;
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Mark {
    events: usize,
    journal: usize,
    epoch: u64,
}
