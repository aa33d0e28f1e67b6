//! A session as one JSONL file on disk.

use std::fs::File;
use std::fs::OpenOptions;
use std::io::Read;
use std::io::Seek;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;
use std::time::Instant;

use super::LoadedLog;
use super::SessionStore;
use super::blob;
use super::fs::count_lines;
use super::fs::create_private;
use super::fs::sync_parent;
use super::fs::take_lock;
use super::line::encode_in_batch;
use super::read::ReadLimits;
use super::read::ReadLog;
use super::read::read_log;
use super::read::renumber_salvaged;
use super::set_aside::SetAside;
use super::set_aside::write_sidecar;
use crate::error::StoreError;
use crate::event::Event;
use crate::event::Header;

/// When appended events are forced to disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// After every batch: an acknowledged append survives a crash or power
    /// loss. The default.
    EveryBatch,
    /// At most once per interval (checked at each append), trading the
    /// newest events on power loss for throughput. A process crash alone
    /// loses nothing: the OS still holds the written bytes.
    Interval(Duration),
    /// Never by us; the OS decides.
    Never,
}

/// How a [`JsonlStore`] opens its file.
#[derive(Debug, Clone)]
pub struct JsonlOptions {
    /// When to fsync. Default: every batch.
    pub fsync: FsyncPolicy,
    /// Longest line accepted, in bytes. Default 64 MiB; large images go to
    /// blobs, so only a broken or hostile file comes near it.
    pub max_line_bytes: u64,
    /// Keep the lines that parse and report the rest instead of failing.
    /// A salvaged store is read-only: write the result elsewhere.
    pub salvage: bool,
    /// Open without the writer lock and refuse appends (a viewer).
    pub read_only: bool,
}

impl Default for JsonlOptions {
    fn default() -> Self {
        JsonlOptions {
            fsync: FsyncPolicy::EveryBatch,
            max_line_bytes: 64 * 1024 * 1024,
            salvage: false,
            read_only: false,
        }
    }
}

/// A session stored as one JSONL file: a header line, then one event per
/// line.
///
/// - Appends go to the end of the file in one write per batch; a failed
///   write is cut back so the file never keeps half a batch.
/// - One writer at a time: an exclusive lock on `<file>.lock` is held while
///   the store lives; a second writer gets [`StoreError::Locked`]. The lock
///   belongs to the open file, so a child process forked by another
///   thread holds it too until it execs (std's `Command` closes it then):
///   a reopen racing a spawn can briefly see `Locked`.
/// - Nothing is ever cut from the file on load. A torn tail (a write a
///   crash cut short: an unterminated last line that does not parse, or a
///   batch whose lines end before its `"batch":N` said) is reported to a
///   reader, which sees the complete part before it, and refused with
///   [`StoreError::Torn`] to a writer, which could only bury it or cut it.
///   [`set_aside_torn`](JsonlStore::set_aside_torn) (what `abridge repair`
///   runs) moves those bytes to a sidecar file, and the log opens again.
///   So after a crash a batch is in the log entirely or not at all, and
///   the bytes of one that is not are never lost.
/// - A bad line before the end is [`StoreError::Corrupt`] with line and
///   column, unless salvage is asked for.
/// - Images whose base64 is over [`BLOB_THRESHOLD`](super::BLOB_THRESHOLD)
///   are kept in `<file>.blobs/<sha256>` and resolved on load.
/// - Files are created with mode 0600: sessions hold code and secrets.
#[derive(Debug)]
pub struct JsonlStore {
    path: PathBuf,
    options: JsonlOptions,
    file: Option<File>,
    _lock: Option<File>,
    len: u64,
    last_sync: Instant,
}

impl JsonlStore {
    /// Opens (or prepares to create) the session file at `path`, taking the
    /// writer lock unless read-only. Nothing is read yet: a torn tail is
    /// found by [`load`](SessionStore::load).
    ///
    /// # Errors
    /// [`StoreError::Locked`] when another writer holds it; I/O errors.
    pub fn open(path: impl Into<PathBuf>, options: JsonlOptions) -> Result<Self, StoreError> {
        let path = path.into();
        let lock = if options.read_only || options.salvage {
            None
        } else {
            Some(take_lock(&path)?)
        };
        Ok(JsonlStore {
            path,
            options,
            file: None,
            _lock: lock,
            len: 0,
            last_sync: Instant::now(),
        })
    }

    /// The session file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn blob_dir(&self) -> PathBuf {
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(".blobs");
        self.path.with_file_name(name)
    }

    fn io(&self, op: &'static str) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
        move |source| StoreError::Io {
            path: self.path.clone(),
            op,
            source,
        }
    }

    /// True for a store that may not write: a viewer, or a salvage.
    fn is_reader(&self) -> bool {
        self.options.read_only || self.options.salvage
    }

    fn read_only(&self, op: &'static str) -> StoreError {
        StoreError::Io {
            path: self.path.clone(),
            op,
            source: std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                "the store was opened read-only",
            ),
        }
    }

    fn limits(&self) -> ReadLimits {
        ReadLimits {
            max_line_bytes: self.options.max_line_bytes,
            salvage: self.options.salvage,
        }
    }

    /// Moves a torn tail out of the log into a sidecar file beside it
    /// (`<file>.torn-N`, 0600, a new N each time, never overwriting), so
    /// the log opens for writing again. The sidecar holds the torn bytes
    /// exactly; it is synced, with its directory entry, before the log is
    /// cut back to where the torn write began, so a crash in between
    /// leaves the bytes in both places, never in neither. Returns `None`
    /// (and changes nothing) when the log has no torn tail.
    ///
    /// The complete events of the torn batch come back in
    /// [`SetAside::complete`]: a caller that wants them appends them again
    /// through a [`Session`](crate::Session), which checks them as it
    /// checks any append (`abridge repair --keep-complete`).
    ///
    /// # Errors
    /// A read-only or salvage store refuses; [`StoreError::NotCreated`]
    /// when there is no file; what loading reports for a file that does
    /// not read (corruption before the end); I/O failures, which leave the
    /// log as it was.
    pub fn set_aside_torn(&mut self) -> Result<Option<SetAside>, StoreError> {
        if self.is_reader() {
            return Err(self.read_only("set aside a torn tail"));
        }
        let read = read_log(&self.path, &self.limits(), &self.blob_dir())?.ok_or_else(|| {
            StoreError::NotCreated {
                location: self.location(),
            }
        })?;
        let Some(torn) = read.report.torn_tail else {
            return Ok(None);
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&self.path)
            .map_err(self.io("open to set aside a torn tail"))?;
        let len = file.metadata().map_err(self.io("stat"))?.len();
        if len != read.good_len + torn.bytes {
            return Err(StoreError::Io {
                path: self.path.clone(),
                op: "set aside a torn tail",
                source: std::io::Error::other(format!(
                    "the file is {len} bytes, not the {} it had when read; another program is writing it",
                    read.good_len + torn.bytes
                )),
            });
        }
        file.seek(std::io::SeekFrom::Start(read.good_len))
            .map_err(self.io("seek"))?;
        let sidecar = write_sidecar(&self.path, &mut (&mut file).take(torn.bytes))?;
        file.set_len(read.good_len)
            .map_err(self.io("cut the torn tail after setting it aside"))?;
        file.sync_all().map_err(self.io("sync"))?;
        tracing::warn!(
            path = %self.path.display(),
            sidecar = %sidecar.display(),
            bytes = torn.bytes,
            "set a torn tail aside"
        );
        Ok(Some(SetAside {
            sidecar,
            torn,
            complete: read.torn_events,
        }))
    }

    fn writable(&mut self) -> Result<&mut File, StoreError> {
        if self.is_reader() {
            return Err(self.read_only("append"));
        }
        if self.file.is_none() {
            let file = OpenOptions::new()
                .append(true)
                .open(&self.path)
                .map_err(self.io("open for append"))?;
            self.len = file.metadata().map_err(self.io("stat"))?.len();
            self.file = Some(file);
        }
        self.file.as_mut().ok_or_else(|| StoreError::NotCreated {
            location: String::new(),
        })
    }

    fn maybe_sync(&mut self) -> Result<(), StoreError> {
        let due = match self.options.fsync {
            FsyncPolicy::EveryBatch => true,
            FsyncPolicy::Interval(every) => self.last_sync.elapsed() >= every,
            FsyncPolicy::Never => false,
        };
        if due {
            self.sync()?;
        }
        Ok(())
    }
}

impl SessionStore for JsonlStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    fn load(&mut self) -> Result<Option<LoadedLog>, StoreError> {
        let Some(read) = read_log(&self.path, &self.limits(), &self.blob_dir())? else {
            return Ok(None);
        };
        let ReadLog {
            header,
            mut events,
            report,
            ..
        } = read;
        if !self.is_reader() {
            if let Some(torn) = report.torn_tail {
                // Appending after a torn tail would bury it mid-file, and
                // cutting it would destroy bytes only `repair` may set
                // aside: a writer refuses, and nothing changes.
                return Err(StoreError::Torn {
                    path: self.path.clone(),
                    torn,
                });
            }
            self.ensure_trailing_newline()?;
        }
        if self.options.salvage {
            renumber_salvaged(&mut events);
        }
        Ok(Some(LoadedLog {
            header,
            events,
            report,
        }))
    }

    fn create(&mut self, header: &Header) -> Result<(), StoreError> {
        let mut file = match create_private(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(StoreError::AlreadyExists {
                    location: self.location(),
                });
            }
            Err(e) => return Err(self.io("create")(e)),
        };
        let mut text = serde_json::to_string(header).map_err(|e| StoreError::BadHeader {
            path: self.path.clone(),
            reason: e.to_string(),
        })?;
        text.push('\n');
        file.write_all(text.as_bytes())
            .map_err(self.io("write the header"))?;
        file.sync_all().map_err(self.io("sync"))?;
        // The new name too: without it a power loss can leave no file at
        // all behind a session that was reported created.
        sync_parent(&self.path).map_err(self.io("sync the session's directory"))?;
        Ok(())
    }

    fn append(&mut self, events: &[Event]) -> Result<(), StoreError> {
        let blob_dir = self.blob_dir();
        let mut buffer = String::new();
        for (index, event) in events.iter().enumerate() {
            let moved = blob::externalize(event, &blob_dir)?;
            let encoded = encode_in_batch(moved.as_ref().unwrap_or(event), index, events.len());
            let line = encoded.map_err(|e| StoreError::Io {
                path: self.path.clone(),
                op: "encode an event",
                source: std::io::Error::other(e),
            })?;
            if line.len() as u64 > self.options.max_line_bytes {
                // Refuse what load would refuse: a line over the limit
                // would make the whole session unreadable.
                let before = count_lines(&self.path).map_err(self.io("count lines"))?;
                return Err(StoreError::LineTooLong {
                    path: self.path.clone(),
                    line: before + 1 + buffer.bytes().filter(|b| *b == b'\n').count() as u64,
                    len: line.len() as u64,
                    limit: self.options.max_line_bytes,
                });
            }
            buffer.push_str(&line);
            buffer.push('\n');
        }
        let path = self.path.clone();
        let file = self.writable()?;
        let start = match file.metadata() {
            Ok(metadata) => metadata.len(),
            Err(source) => {
                return Err(StoreError::Io {
                    path,
                    op: "stat",
                    source,
                });
            }
        };
        if let Err(source) = file.write_all(buffer.as_bytes()) {
            // Never leave half a batch behind: cut back to where it began.
            let _ = file.set_len(start);
            return Err(StoreError::Io {
                path,
                op: "append",
                source,
            });
        }
        self.len = start + buffer.len() as u64;
        self.maybe_sync()
    }

    fn sync(&mut self) -> Result<(), StoreError> {
        if let Some(file) = self.file.as_mut() {
            file.sync_data().map_err(|source| StoreError::Io {
                path: self.path.clone(),
                op: "sync",
                source,
            })?;
        }
        self.last_sync = Instant::now();
        Ok(())
    }
}

impl JsonlStore {
    /// A file whose last line lost only its newline gets it back, so the
    /// next append starts on a line of its own.
    fn ensure_trailing_newline(&mut self) -> Result<(), StoreError> {
        if self.is_reader() {
            return Ok(());
        }
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&self.path)
            .map_err(self.io("open"))?;
        let len = file.metadata().map_err(self.io("stat"))?.len();
        if len == 0 {
            return Ok(());
        }
        file.seek(std::io::SeekFrom::Start(len - 1))
            .map_err(self.io("seek"))?;
        let mut last = [0u8; 1];
        file.read_exact(&mut last).map_err(self.io("read"))?;
        if last[0] != b'\n' {
            file.write_all(b"\n")
                .map_err(self.io("repair the last line"))?;
            file.sync_all().map_err(self.io("sync"))?;
        }
        Ok(())
    }
}
