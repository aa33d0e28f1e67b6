//! An import written to a store as it is read, for files whose events do
//! not fit in memory the way [`Imported`](crate::Imported) holds them.
//!
//! The file is read twice. The first pass builds nothing but the report
//! and the header (which some formats settle only at their end: a Claude
//! Code file is a sub-agent's only if every entry is a sidechain) and
//! checks every event by the session's rules without writing it
//! ([`LogWriter::checking`]); so a file that would be refused leaves the
//! store untouched, as [`Imported::into_session`](crate::Imported::into_session)
//! does. The second pass writes each event as it leaves the importer's
//! window. Both passes convert the same way (the same builder, the same
//! window), so what is written is what [`read_with`](crate::read_with)
//! followed by `into_session` writes; only the memory differs: a few dozen
//! bytes an event for the skeleton of the log and the importer's own
//! index, instead of the events themselves.
//!
//! Events reach the store in bounded batches
//! ([`batch_is_full`](abridge_session::batch_is_full)), so a crash in the
//! middle of an import tears at most one batch: the log refuses writers
//! until `abridge repair` sets that batch aside, and everything before it
//! is whole (docs/event-log.md, "A torn tail", says why this and not a
//! file renamed into place).

use std::cell::RefCell;
use std::path::Path;
use std::path::PathBuf;
use std::rc::Rc;

use abridge_llm::Origin;
use abridge_session::Draft;
use abridge_session::EventBody;
use abridge_session::Header;
use abridge_session::LogWriter;
use abridge_session::Seq;
use abridge_session::SessionStore;

use crate::ImportError;
use crate::ImportReport;
use crate::ReadOptions;
use crate::builder::Sink;
use crate::input::Input;

/// A file read once and found importable: what [`check_with`] returns,
/// to be written with [`Checked::write`].
#[derive(Debug, Clone)]
pub struct Checked {
    /// The header the log will be created with.
    pub header: Header,
    /// What will be imported, skipped and worked around.
    pub report: ImportReport,
    /// The model of the newest message a model wrote (by its origin), the
    /// model whose tokenizer counts the session: known before anything is
    /// written, so counts can be made as the events go by.
    pub last_model: Option<String>,
    path: PathBuf,
    options: ReadOptions,
}

/// What [`Checked::write`] wrote.
#[derive(Debug)]
pub struct Written {
    /// The header the log was created with.
    pub header: Header,
    /// What was imported, skipped and worked around.
    pub report: ImportReport,
    /// Events written.
    pub events: usize,
    /// Messages on the surface of the newest event's path.
    pub surface_messages: usize,
    /// The store, holding the new session; open it with
    /// [`Session::open`](abridge_session::Session::open) to read it.
    pub store: Box<dyn SessionStore>,
}

/// Reads the file at `path` once, as [`read_with`](crate::read_with)
/// does, building nothing but the header and the report, and checks every
/// event by the session's rules ([`LogWriter::checking`]). See the module
/// docs.
///
/// # Errors
/// What `read_with` returns for the file; [`ImportError::Session`] when
/// the session would refuse an event.
pub fn check_with(path: &Path, options: &ReadOptions) -> Result<Checked, ImportError> {
    let file = path.display().to_string();
    let mut checker = LogWriter::checking();
    checker.set_max_image_pixels(options.max_image_pixels);
    let checker = Rc::new(RefCell::new(checker));
    let last_model = Rc::new(RefCell::new(None));
    let sink = {
        let last_model = Rc::clone(&last_model);
        into(&checker, file.clone(), move |_, draft| {
            if let EventBody::Message(m) = &draft.body
                && let Some(Origin::Model { model, .. }) = &m.message.meta.origin
                && !model.is_empty()
            {
                *last_model.borrow_mut() = Some(model.clone());
            }
        })
    };
    let first = crate::read_input(&file, Input::File(path), options, sink)?;
    let last_model = last_model.borrow_mut().take();
    Ok(Checked {
        header: first.header,
        report: first.report,
        last_model,
        path: path.to_path_buf(),
        options: *options,
    })
}

/// The sink of both passes: each draft shown to `watch` with the seq it
/// gets, then pushed to `writer`; a refusal names `name` (the source file
/// for the check, the store for the write).
fn into(
    writer: &Rc<RefCell<LogWriter>>,
    name: String,
    mut watch: impl FnMut(Seq, &Draft) + 'static,
) -> Sink {
    let writer = Rc::clone(writer);
    Sink::Send(Box::new(move |draft| {
        let mut writer = writer.borrow_mut();
        watch(writer.len() as Seq, &draft);
        writer
            .push(draft)
            .map(drop)
            .map_err(|source| ImportError::Session {
                file: name.clone(),
                source,
            })
    }))
}

/// [`check_with`], then [`Checked::write`] with no watcher.
///
/// # Errors
/// As those two.
pub fn write_with(
    path: &Path,
    options: &ReadOptions,
    store: Box<dyn SessionStore>,
) -> Result<Written, ImportError> {
    check_with(path, options)?.write(store, |_, _| {})
}

impl Checked {
    /// Reads the file again and writes each event into a new session in
    /// `store` as it leaves the importer's window; `watch` sees every
    /// event, with its seq, before it is written (to count its tokens, for
    /// example).
    ///
    /// # Errors
    /// What reading the file returns (it may have changed since it was
    /// checked); [`ImportError::Session`] when the store fails: the
    /// batches before the failure stay written, a readable session that
    /// ends early.
    pub fn write(
        self,
        store: Box<dyn SessionStore>,
        watch: impl FnMut(Seq, &Draft) + 'static,
    ) -> Result<Written, ImportError> {
        let file = self.path.display().to_string();
        let location = store.location();
        let refused = |source| ImportError::Session {
            file: location.clone(),
            source,
        };
        let mut writer = LogWriter::create(store, &self.header).map_err(refused)?;
        writer.set_max_image_pixels(self.options.max_image_pixels);
        let writer = Rc::new(RefCell::new(writer));
        let sink = into(&writer, location.clone(), watch);
        let second = crate::read_input(&file, Input::File(&self.path), &self.options, sink)?;
        // The sink, and its handle on the writer, went with the builder.
        let writer = match Rc::try_unwrap(writer) {
            Ok(writer) => writer.into_inner(),
            Err(_) => unreachable!("the import's sink is dropped when the import ends"),
        };
        let (events, surface_messages) = (writer.len(), writer.surface_len());
        let store = writer.finish().map_err(refused)?;
        Ok(Written {
            header: second.header,
            report: second.report,
            events,
            surface_messages,
            store,
        })
    }
}
