//! Opening session files for the commands.

use std::path::Path;

use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::LoadReport;
use abridge_session::Session;
use anyhow::Context;

/// Opens an abridge session file, for reading or writing.
pub(crate) fn open_session(path: &Path, write: bool) -> anyhow::Result<(Session, LoadReport)> {
    if !path.exists() {
        anyhow::bail!(
            "{}: no such file; to read another agent's session, run `abridge import {}` first",
            path.display(),
            path.display()
        );
    }
    let options = JsonlOptions {
        read_only: !write,
        ..JsonlOptions::default()
    };
    let store = JsonlStore::open(path, options)?;
    let (session, report) = Session::open(Box::new(store)).with_context(|| {
        format!(
            "cannot open {} as an abridge session (is it another agent's file? try `abridge import`)",
            path.display()
        )
    })?;
    if let Some(torn) = &report.torn_tail {
        eprintln!(
            "note: {}: line {} was cut short by a crash ({} bytes); it was removed",
            path.display(),
            torn.line,
            torn.bytes
        );
    }
    Ok((session, report))
}
