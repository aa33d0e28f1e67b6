//! A session as one JSONL file on disk.

use std::fs::File;
use std::fs::OpenOptions;
use std::io::BufReader;
use std::io::Read;
use std::io::Seek;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;
use std::time::Instant;

use super::LoadReport;
use super::LoadedLog;
use super::SessionStore;
use super::SkippedLine;
use super::TornTail;
use super::blob;
use super::fs::count_lines;
use super::fs::create_private;
use super::fs::sync_parent;
use super::fs::take_lock;
use super::line::decode_line;
use super::line::encode_in_batch;
use super::line::field_at_end;
use super::read::OpenBatch;
use super::read::Parsed;
use super::read::RawLine;
use super::read::at_column;
use super::read::line_of_batch;
use super::read::parse_header;
use super::read::read_line;
use super::read::renumber_salvaged;
use crate::error::StoreError;
use crate::event::Event;
use crate::event::EventBody;
use crate::event::Header;
use crate::event::MessageEvent;

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
/// - On load, a torn final line (a crash mid-write) is cut and reported; a
///   bad line before it is [`StoreError::Corrupt`] with line and column,
///   unless salvage is asked for. The first line of a batch of several
///   events carries `"batch":N`, so a write a crash stopped at a line
///   boundary is found too, and the whole partial batch is cut: after a
///   crash a batch is in the log entirely or not at all.
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
    /// writer lock unless read-only.
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

    fn writable(&mut self) -> Result<&mut File, StoreError> {
        if self.options.read_only || self.options.salvage {
            return Err(StoreError::Io {
                path: self.path.clone(),
                op: "append",
                source: std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    "the store was opened read-only",
                ),
            });
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
        let file = match File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(self.io("open")(e)),
        };
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let mut line = RawLine {
            bytes: Vec::new(),
            terminated: false,
            overlong: None,
        };
        let mut report = LoadReport::default();
        let mut events = Vec::new();
        let mut line_no: u64 = 0;
        let mut good_len: u64 = 0;
        let mut header: Option<Header> = None;
        let mut open_batch: Option<OpenBatch> = None;
        let limit = self.options.max_line_bytes;
        let blob_dir = self.blob_dir();
        while read_line(&mut reader, limit, &mut line).map_err(self.io("read"))? {
            line_no += 1;
            let line_len =
                line.overlong.unwrap_or(line.bytes.len() as u64) + u64::from(line.terminated);
            if let Some(len) = line.overlong {
                let error = StoreError::LineTooLong {
                    path: self.path.clone(),
                    line: line_no,
                    len,
                    limit,
                };
                if self.options.salvage && line_no > 1 {
                    report.skipped.push(SkippedLine {
                        line: line_no,
                        reason: error.to_string(),
                    });
                    good_len += line_len;
                    line_of_batch(&mut open_batch);
                    continue;
                }
                return Err(error);
            }
            let parsed = std::str::from_utf8(&line.bytes)
                .map_err(|e| {
                    let valid = &line.bytes[..e.valid_up_to()];
                    // The prefix is valid UTF-8 by construction.
                    let field = std::str::from_utf8(valid)
                        .map(field_at_end)
                        .unwrap_or_default();
                    (
                        e.valid_up_to() as u64 + 1,
                        field,
                        "invalid UTF-8".to_string(),
                    )
                })
                .and_then(|text| {
                    if line_no == 1 {
                        parse_header(text).map(Parsed::Header)
                    } else {
                        decode_line(text)
                            .map(|(event, batch)| Parsed::Event(event, batch))
                            .map_err(|e| (e.column, e.field, e.reason))
                    }
                });
            match parsed {
                Ok(Parsed::Header(h)) => header = Some(h),
                Ok(Parsed::Event(mut event, batch)) => {
                    if let EventBody::Message(MessageEvent { message, .. }) = &mut event.body {
                        report.blobs_resolved += blob::resolve(message, &blob_dir)?;
                    }
                    match batch {
                        Some(len) if len > 1 => {
                            open_batch = Some(OpenBatch {
                                line: line_no,
                                remaining: len - 1,
                                start: good_len,
                                events: events.len(),
                            });
                        }
                        _ => line_of_batch(&mut open_batch),
                    }
                    events.push(event);
                }
                Err((column, field, reason)) => {
                    let is_last = !line.terminated;
                    if is_last && line_no > 1 {
                        // A crash mid-append leaves an unterminated last
                        // line: cut it, so the next append starts clean.
                        report.torn_tail = Some(TornTail {
                            line: line_no,
                            bytes: line_len,
                        });
                        good_len += line_len;
                        break;
                    }
                    let reason = if field.is_empty() {
                        reason
                    } else {
                        format!("field `{field}`: {reason}")
                    };
                    if line_no == 1 {
                        return Err(StoreError::BadHeader {
                            path: self.path.clone(),
                            reason: at_column(column, &reason),
                        });
                    }
                    if self.options.salvage {
                        report.skipped.push(SkippedLine {
                            line: line_no,
                            reason: at_column(column, &reason),
                        });
                        good_len += line_len;
                        line_of_batch(&mut open_batch);
                        continue;
                    }
                    return Err(StoreError::Corrupt {
                        path: self.path.clone(),
                        line: line_no,
                        column,
                        reason,
                    });
                }
            }
            good_len += line_len;
            if !line.terminated {
                // A complete last line missing only its newline: keep it and
                // restore the newline on the next write.
                good_len += 0;
            }
        }
        let Some(header) = header else {
            return Err(StoreError::BadHeader {
                path: self.path.clone(),
                reason: "the file is empty".to_string(),
            });
        };
        if let Some(open) = open_batch {
            // A crash ended the file inside a batch: the batch was never
            // acknowledged, so none of it stays (the store's contract is
            // all of a batch or none of it).
            events.truncate(open.events);
            report.torn_tail = Some(TornTail {
                line: open.line,
                bytes: good_len - open.start,
            });
            good_len = open.start;
        } else if let Some(torn) = &report.torn_tail {
            good_len -= torn.bytes;
        }
        if report.torn_tail.is_some() && !self.options.read_only && !self.options.salvage {
            let file = OpenOptions::new()
                .write(true)
                .open(&self.path)
                .map_err(self.io("open to cut a torn line"))?;
            file.set_len(good_len).map_err(self.io("cut a torn line"))?;
            file.sync_all().map_err(self.io("sync"))?;
            tracing::warn!(path = %self.path.display(), "cut a torn final line");
        }
        self.ensure_trailing_newline()?;
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
        if self.options.read_only || self.options.salvage {
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
