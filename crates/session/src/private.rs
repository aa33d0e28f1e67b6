//! Files only their owner can read: the one place every file abridge
//! writes is created (the log and its blobs here; reports, frames,
//! handoff documents and shake artifacts in the crates above).
//!
//! A session holds whatever the agent saw, secrets included, so
//! everything derived from it is created mode 0600 like the log itself.
//! The mode is set when the file is created, never changed afterwards, so
//! there is no moment when another user could open it.

use std::fs::File;
use std::fs::OpenOptions;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;

/// The permission bits of every file abridge creates (unix).
pub const PRIVATE_FILE_MODE: u32 = 0o600;

/// Distinguishes temporary files of one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Creates a new file at `path`, readable and writable by its owner only.
/// Fails if the file exists.
///
/// # Errors
/// The I/O error of creating it.
pub fn create_private(path: &Path) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(PRIVATE_FILE_MODE);
    }
    options.open(path)
}

/// Writes `bytes` to `path`, replacing any file there, through a private
/// temporary file beside it: a reader never sees half a file, and the
/// result is 0600 even when the file it replaces was not.
///
/// # Errors
/// The I/O error of creating, writing, syncing or renaming; the temporary
/// file is removed on failure.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut file = PrivateReplacement::create(path)?;
    file.write_all(bytes)?;
    file.commit()
}

/// A file that replaces `path` once committed, written in pieces: the
/// pieces go to a private temporary file beside it, which
/// [`commit`](Self::commit) syncs and renames into place. Dropped before
/// that, it removes the temporary file and leaves `path` as it was. For
/// content too large to gather first (the token counts of a session
/// being imported); [`write_private`] is the one-piece form.
#[derive(Debug)]
pub struct PrivateReplacement {
    path: PathBuf,
    temp: PathBuf,
    /// `None` once committed.
    file: Option<std::io::BufWriter<File>>,
}

impl PrivateReplacement {
    /// Starts the replacement of `path`.
    ///
    /// # Errors
    /// The I/O error of creating the temporary file.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        let temp = temp_beside(path);
        let file = create_private(&temp)?;
        Ok(PrivateReplacement {
            path: path.to_path_buf(),
            temp,
            file: Some(std::io::BufWriter::new(file)),
        })
    }

    /// Syncs what was written and renames it into place.
    ///
    /// # Errors
    /// The I/O error of flushing, syncing or renaming; the temporary file
    /// is removed then.
    pub fn commit(mut self) -> std::io::Result<()> {
        let Some(file) = self.file.take() else {
            return Ok(());
        };
        let done = file
            .into_inner()
            .map_err(std::io::IntoInnerError::into_error)
            .and_then(|file| file.sync_all())
            .and_then(|()| std::fs::rename(&self.temp, &self.path));
        if done.is_err() {
            let _ = std::fs::remove_file(&self.temp);
        }
        done
    }
}

impl Write for PrivateReplacement {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match &mut self.file {
            Some(file) => file.write(bytes),
            None => Err(std::io::Error::other("written after commit")),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.as_mut().map_or(Ok(()), Write::flush)
    }
}

impl Drop for PrivateReplacement {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

fn temp_beside(path: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(path.file_name().unwrap_or_default());
    name.push(format!(
        ".{}.{}.tmp",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    path.with_file_name(name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn write_private_creates_0600_and_replaces_a_looser_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.html");
        write_private(&path, b"one").unwrap();
        assert_eq!(mode(&path), PRIVATE_FILE_MODE);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_private(&path, b"two").unwrap();
        assert_eq!(mode(&path), PRIVATE_FILE_MODE);
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn create_private_refuses_an_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        drop(create_private(&path).unwrap());
        assert_eq!(mode(&path), PRIVATE_FILE_MODE);
        assert!(create_private(&path).is_err());
    }
}
