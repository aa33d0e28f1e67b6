//! Files on disk for the JSONL store: created private (0600), made
//! durable in their directory, the writer's lock file, and counting lines. The blob store and the log file
//! both create files here, so neither reaches into the other for it.

use std::fs::File;
use std::fs::OpenOptions;
use std::io::BufRead;
use std::io::BufReader;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::error::StoreError;

/// Creates a file readable and writable by its owner only (the crate's
/// one helper, shared with everything abridge writes).
pub(super) use crate::private::create_private;

/// Forces to disk the directory entry of `path` (its parent directory), so
/// a file just created, renamed or made there survives a power loss: an
/// fsync of the file itself makes its bytes durable, not its name.
pub(super) fn sync_parent(path: &Path) -> std::io::Result<()> {
    let parent = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    File::open(parent)?.sync_all()
}

pub(super) fn take_lock(path: &Path) -> Result<File, StoreError> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".lock");
    let lock_path = path.with_file_name(name);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(&lock_path)
        .map_err(|source| StoreError::Io {
            path: lock_path.clone(),
            op: "open the lock file",
            source,
        })?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(StoreError::Locked {
            path: path.to_path_buf(),
            lock: lock_path,
        }),
        Err(std::fs::TryLockError::Error(source)) => Err(StoreError::Io {
            path: lock_path,
            op: "lock",
            source,
        }),
    }
}

/// Lines in the file at `path` (only on the error path: it reads it all).
pub(super) fn count_lines(path: &Path) -> std::io::Result<u64> {
    let mut reader = BufReader::new(File::open(path)?);
    let mut count = 0;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(count);
        }
        count += chunk.iter().filter(|b| **b == b'\n').count() as u64;
        let len = chunk.len();
        reader.consume(len);
    }
}
