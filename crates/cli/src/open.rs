//! Opening session files for the commands.

use std::path::Path;

use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::LoadReport;
use abridge_session::Session;
use abridge_session::SessionError;
use abridge_session::StoreError;

/// Opens an abridge session file, for reading or writing, with a note on
/// stderr when a reader finds a torn tail. A writer refuses a torn log
/// with the store's error, which says to run `abridge repair`.
pub(crate) fn open_session(path: &Path, write: bool) -> anyhow::Result<(Session, LoadReport)> {
    let (session, report) = open_quietly(path, write)?;
    if let Some(torn) = &report.torn_tail {
        eprintln!(
            "note: {}: the log ends in a write a crash cut short ({torn}); showing the complete part before it. Commands that write refuse this log until `abridge repair {}` sets those bytes aside",
            path.display(),
            path.display()
        );
    }
    Ok((session, report))
}

/// [`open_session`] without the note: for a command that reports a torn
/// tail itself (`check`).
pub(crate) fn open_quietly(path: &Path, write: bool) -> anyhow::Result<(Session, LoadReport)> {
    let options = JsonlOptions {
        read_only: !write,
        ..JsonlOptions::default()
    };
    let store = open_store(path, options)?;
    match Session::open(Box::new(store)) {
        Ok(opened) => Ok(opened),
        // The store's message already says what is wrong and what to run.
        Err(SessionError::Store(error @ StoreError::Torn { .. })) => Err(error.into()),
        Err(error) => Err(anyhow::Error::new(error).context(format!(
            "cannot open {} as an abridge session (is it another agent's file? try `abridge import`)",
            path.display()
        ))),
    }
}

/// The store of an existing abridge session file, not loaded yet.
pub(crate) fn open_store(path: &Path, options: JsonlOptions) -> anyhow::Result<JsonlStore> {
    if !path.exists() {
        anyhow::bail!(
            "{}: no such file; to read another agent's session, run `abridge import {}` first",
            path.display(),
            path.display()
        );
    }
    Ok(JsonlStore::open(path, options)?)
}
