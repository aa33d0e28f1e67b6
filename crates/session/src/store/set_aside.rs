//! A torn tail set aside: the bytes of a write a crash cut short, moved
//! out of the log into a sidecar file beside it, never deleted.
//!
//! The log is append-only and a writer refuses a torn log (see
//! [`StoreError::Torn`]), so this is the one place a log gets shorter, and
//! only after the bytes it loses are durable elsewhere.

use std::io::Read;
use std::path::Path;
use std::path::PathBuf;

use super::fs::create_private;
use super::fs::sync_parent;
use crate::error::StoreError;
use crate::event::Event;
use crate::torn::TORN_SUFFIX;
use crate::torn::TornTail;

/// What [`JsonlStore::set_aside_torn`](super::JsonlStore::set_aside_torn)
/// moved out of the log.
#[derive(Debug, Clone, PartialEq)]
pub struct SetAside {
    /// The sidecar now holding the torn bytes, exactly as they were:
    /// `<file>.torn-N`, mode 0600, N the first free number from 1.
    pub sidecar: PathBuf,
    /// What was torn: where it started, its bytes and complete events.
    pub torn: TornTail,
    /// The complete events of the torn batch, in order, as read (blobs
    /// resolved): no longer in the log, offered back to a caller that
    /// chooses to append them again (`abridge repair --keep-complete`).
    pub complete: Vec<Event>,
}

/// Copies what `source` holds into a new sidecar beside `log`
/// (`<log>.torn-N`, the first N from 1 that is free, never an existing
/// file), synced with its directory entry so it outlives a power loss.
/// A failed copy leaves no sidecar.
pub(super) fn write_sidecar(log: &Path, source: &mut impl Read) -> Result<PathBuf, StoreError> {
    let io = |path: &Path, op: &'static str| {
        let path = path.to_path_buf();
        move |source| StoreError::Io { path, op, source }
    };
    let mut number = 1u32;
    let (path, mut file) = loop {
        let mut name = log.as_os_str().to_owned();
        name.push(format!("{TORN_SUFFIX}{number}"));
        let path = PathBuf::from(name);
        match create_private(&path) {
            Ok(file) => break (path, file),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => number += 1,
            Err(e) => return Err(io(&path, "create the torn tail's sidecar")(e)),
        }
    };
    let written = std::io::copy(source, &mut file)
        .and_then(|_| file.sync_all())
        .and_then(|()| sync_parent(&path));
    if let Err(error) = written {
        let _ = std::fs::remove_file(&path);
        return Err(io(&path, "write the torn tail's sidecar")(error));
    }
    Ok(path)
}
