//! Importers: other agents' session files turned into abridge logs.
//!
//! # Overview
//!
//! [`read`] (or [`read_bytes`]) parses a file written by pi (v1 and v3),
//! Claude Code, the Codex CLI, SWE-agent, aider or OpenHands into an
//! [`Imported`]: a [`Header`] taken from the source (session id, creation
//! time, working directory), the events as [`Draft`]s with explicit
//! parents, and an [`ImportReport`]. Nothing touches a disk until the
//! caller writes the drafts, in batches, with [`Imported::into_session`]
//! or [`Imported::append_to`]. The format is read from the content
//! ([`Format::detect`]); a file of several sessions (aider chats, OpenHands
//! evaluation records) gives one, chosen with [`read_with`] and
//! [`ReadOptions::session`].
//!
//! ```no_run
//! use abridge_session::{JsonlOptions, JsonlStore};
//!
//! let imported = abridge_import::read("session.jsonl".as_ref(), None)?;
//! let store = JsonlStore::open("out.jsonl", JsonlOptions::default())?;
//! let (session, report) = imported.into_session(Box::new(store))?;
//! assert_eq!(report.message_count(), session.events().iter().filter(|e| e.message().is_some()).count());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A file too large to hold as drafts is written while it is read:
//! [`check_with`] reads it once for its header and report, checking every
//! event, and [`Checked::write`] reads it again, writing each event to a
//! store as it is converted. Memory stays a few dozen bytes an event
//! whatever the events say; the log written is the one `into_session`
//! writes. `abridge import` does this.
//!
//! # Why a crate of its own
//!
//! The session log is abridge's own format; what other agents write changes
//! with their releases and grows with every agent supported. Keeping the
//! importers here means the log (`abridge-session`) depends on no other
//! agent's format, and a host that only records its own sessions never
//! compiles them. Importers see the log only through its public API:
//! drafts with explicit parents, validated by the session when written.
//!
//! # What is kept
//!
//! - Messages keep their source time, their producer ([`Origin::Model`]
//!   where the source names provider and model, else
//!   [`Origin::Imported`]) and their usage mapped onto the disjoint
//!   [`Usage`](abridge_llm::Usage) buckets.
//! - Tool calls stay paired with their results by the source's ids. A call
//!   the conversation moved past without a result gets an error result
//!   ([`MISSING_RESULT`]); a call left open at the very end is left for
//!   [`repair_dangling_tool_calls`](abridge_session::repair_dangling_tool_calls).
//!   Both, and results with no call, are listed in the report.
//! - Compactions the source recorded become checkpoint `replace` events
//!   listing every seq they hide, so the surface shows what that agent's
//!   model saw afterwards.
//! - Branches (pi v3 `id`/`parentId`, Claude Code `uuid`/`parentUuid`)
//!   become parent links. Source ids are looked up in a map at the moment
//!   each entry is read, so a parent is always an earlier event: duplicate
//!   ids (which pi's v1 migration produces) cannot make a loop, and are
//!   reported.
//! - What has no place in a log (progress lines, file snapshots, token
//!   events, turn contexts, thinking-level changes) is counted by kind in
//!   [`ImportReport::skipped`], never dropped silently.

mod aider;
mod builder;
mod call_ids;
mod claude;
mod codex;
mod document;
mod error;
mod format;
mod injected;
mod input;
mod instructions;
mod json;
mod openhands;
mod pi;
mod report;
mod sessions;
mod shared;
mod swe;
mod write;

use std::path::Path;

pub use error::ImportError;
pub use format::Format;
pub use instructions::instruction_pins;
pub use report::ImportReport;
pub use report::ImportWarning;
pub use sessions::each_session;
pub use write::Checked;
pub use write::Written;
pub use write::check_with;
pub use write::write_with;

use abridge_session::Draft;
use abridge_session::Header;
use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::SessionStore;
use builder::Output;
use builder::Sink;
use sessions::Wanted;
use sessions::one;
use sessions::pick;

use abridge_llm::Origin;

/// The text of the error result added for a tool call whose result the
/// source never recorded although the conversation went on (an interrupted
/// turn). Providers reject a call without a result, and the agents that
/// wrote these files send a similar stand-in themselves.
pub const MISSING_RESULT: &str = "[abridge import] No result was recorded for this tool call: the turn was interrupted before it finished. The tool may or may not have run.";

/// The text that stands on the surface for a Codex compaction item whose
/// summary is encrypted (only the provider can read it). The encrypted
/// data itself is kept in the `compaction/imported` log event.
pub const ENCRYPTED_SUMMARY: &str = "[abridge import] Earlier history was compacted by the provider into an encrypted summary that only it can read; the summary is kept in the session log.";

/// The `Origin::Injected` source of a Codex user message that Codex did not
/// echo as typed input, in a rollout that echoes what the user types: the
/// harness wrote it, though its text names no known marker.
pub const UNECHOED: &str = "unechoed";

/// Event type of the log event recording a compaction found in the source.
pub const TYPE_IMPORTED_COMPACTION: &str = "compaction/imported";

/// Event type of a model change found in the source.
pub const TYPE_MODEL_CHANGE: &str = "model_change";

/// The default of [`ReadOptions::max_record_bytes`]: 64 MiB, the same as
/// the session log's own line limit. Real records are far smaller; a longer
/// line is a broken or hostile file.
pub const MAX_RECORD_BYTES: u64 = 64 * 1024 * 1024;

/// How many leading bytes [`read`] shows [`Format::detect`].
pub const DETECT_BYTES: usize = 64 * 1024;

/// A source session parsed into events, not yet written anywhere.
#[derive(Debug, Clone)]
pub struct Imported {
    /// Header for the new log: the source's session id, creation time and
    /// working directory where it records them.
    pub header: Header,
    /// The events, seq 0 first, every parent explicit. They assume an
    /// empty session: write them with [`Imported::into_session`] or
    /// [`Imported::append_to`].
    pub drafts: Vec<Draft>,
    /// What was imported, skipped and worked around.
    pub report: ImportReport,
}

impl Imported {
    /// Creates a session in `store` with [`Imported::header`] and writes
    /// every draft, at most 256 events (and about 1 MiB of content) per
    /// write. The drafts are checked first
    /// ([`check_drafts`](abridge_session::check_drafts), which copies
    /// nothing), so a rejected import leaves `store` untouched.
    ///
    /// # Errors
    /// [`ImportError::Session`] when the session refuses the events or the
    /// store fails (for example a session already exists there). A store
    /// that fails part way keeps the batches written before the failure:
    /// whole events, a readable session that ends early.
    pub fn into_session(
        self,
        store: Box<dyn SessionStore>,
    ) -> Result<(Session, ImportReport), ImportError> {
        self.into_session_with(store, abridge_llm::DEFAULT_MAX_IMAGE_PIXELS)
    }

    /// [`Imported::into_session`] for a session whose images may claim at
    /// most `max_image_pixels`: the cap the file was read under
    /// ([`ReadOptions::max_image_pixels`]) when it was raised past the
    /// default, since the session checks every image again.
    ///
    /// # Errors
    /// As [`Imported::into_session`].
    pub fn into_session_with(
        self,
        store: Box<dyn SessionStore>,
        max_image_pixels: u64,
    ) -> Result<(Session, ImportReport), ImportError> {
        let location = store.location();
        let wrap = |source| ImportError::Session {
            file: location.clone(),
            source,
        };
        // Checked where they lie, before the store is touched: a refused
        // import writes nothing, and no second copy of it is built.
        abridge_session::check_drafts_with(&self.drafts, max_image_pixels).map_err(wrap)?;
        let mut session = Session::create(store, self.header).map_err(wrap)?;
        session.set_max_image_pixels(max_image_pixels);
        // Written in batches by the log's one batch policy, so the encoded
        // lines waiting for one write stay a small part of the import's
        // memory and huge messages go a few at a time. The drafts are
        // popped from the end of the reversed list, which gives its room
        // back as it empties: the session's events grow as the drafts
        // shrink.
        let mut rest = self.drafts;
        rest.reverse();
        while !rest.is_empty() {
            let mut batch = Vec::new();
            let mut bytes = 0;
            while !abridge_session::batch_is_full(batch.len(), bytes) {
                let Some(draft) = rest.pop() else {
                    break;
                };
                bytes += draft.body.content_bytes();
                batch.push(draft);
            }
            if rest.capacity() / 2 > rest.len() + abridge_session::WRITE_BATCH_EVENTS {
                rest.shrink_to_fit();
            }
            session.append_batch(batch).map_err(wrap)?;
        }
        Ok((session, self.report))
    }

    /// Writes every draft into `session`, which must be empty, in one batch.
    /// Returns the seqs written.
    ///
    /// # Errors
    /// [`ImportError::Session`] when the session is not empty or refuses
    /// the events; nothing is written then.
    pub fn append_to(self, session: &mut Session) -> Result<Vec<Seq>, ImportError> {
        let location = session.location();
        if !session.is_empty() {
            return Err(ImportError::Session {
                file: location,
                source: abridge_session::SessionError::Invalid {
                    place: abridge_session::Place::Draft { index: 0 },
                    field: "seq",
                    reason: format!(
                        "imported events start at seq 0 but the session already has {} events",
                        session.len()
                    ),
                },
            });
        }
        session
            .append_batch(self.drafts)
            .map_err(|source| ImportError::Session {
                file: location,
                source,
            })
    }
}

/// What to read from a file: which format (detected when `None`) and,
/// for files that hold several sessions (aider chats, OpenHands evaluation
/// records), which one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// The source format; `None` to detect it from the content.
    pub format: Option<Format>,
    /// Which session, counting from 1 in file order. `None`: the last one
    /// that holds a message, since a file grows at its end and the newest
    /// work is what a user usually means.
    pub session: Option<usize>,
    /// Longest line accepted, in bytes (a single-document format's lines
    /// too). Default [`MAX_RECORD_BYTES`]. Checked before anything is
    /// parsed, so a hostile line costs no memory: the import fails with
    /// [`ImportError::TooLong`] naming the file and line.
    pub max_record_bytes: u64,
    /// Most pixels an image may claim (by its header, else its stated
    /// size). Default [`DEFAULT_MAX_IMAGE_PIXELS`](abridge_llm::DEFAULT_MAX_IMAGE_PIXELS),
    /// 50 megapixels. Past it the import fails with
    /// [`ImportError::ImageTooLarge`] naming the file, line and field.
    pub max_image_pixels: u64,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            format: None,
            session: None,
            max_record_bytes: MAX_RECORD_BYTES,
            max_image_pixels: abridge_llm::DEFAULT_MAX_IMAGE_PIXELS,
        }
    }
}

/// Reads the session file at `path`. `format`: `None` to detect it. For a
/// file of several sessions, the last; see [`read_with`] to choose.
///
/// # Errors
/// [`ImportError`] naming the file, line and field of malformed input;
/// [`ImportError::UnknownFormat`] when detection fails;
/// [`ImportError::NoMessages`] when the file holds no message.
pub fn read(path: &Path, format: Option<Format>) -> Result<Imported, ImportError> {
    read_with(
        path,
        &ReadOptions {
            format,
            ..ReadOptions::default()
        },
    )
}

/// Reads the session file at `path` as `options` say.
///
/// # Errors
/// As [`read`], and [`ImportError::NoSuchSession`] when `options.session`
/// is past the sessions the file holds.
pub fn read_with(path: &Path, options: &ReadOptions) -> Result<Imported, ImportError> {
    let file = path.display().to_string();
    read_input(&file, input::Input::File(path), options, Sink::Keep)
}

/// Reads a session from memory; `file` names it in errors, and its
/// extension helps detection. `format`: `None` to detect it.
///
/// # Errors
/// As [`read`].
pub fn read_bytes(
    file: &str,
    bytes: &[u8],
    format: Option<Format>,
) -> Result<Imported, ImportError> {
    read_bytes_with(
        file,
        bytes,
        &ReadOptions {
            format,
            ..ReadOptions::default()
        },
    )
}

/// Reads a session from memory as `options` say.
///
/// # Errors
/// As [`read_with`].
pub fn read_bytes_with(
    file: &str,
    bytes: &[u8],
    options: &ReadOptions,
) -> Result<Imported, ImportError> {
    read_input(file, input::Input::Bytes(bytes), options, Sink::Keep)
}

/// Reads a session from `input` as `options` say, one record (or line) at
/// a time: the line-based formats, SWE-agent's document, OpenHands
/// trajectories and evaluation output (only the chosen record is parsed
/// twice), aider's Markdown.
fn read_input(
    file: &str,
    input: input::Input<'_>,
    options: &ReadOptions,
    sink: Sink,
) -> Result<Imported, ImportError> {
    // Line lengths are checked before anything is parsed.
    if input::scan(file, &input, options.max_record_bytes)?.blank {
        return Err(ImportError::Empty {
            file: file.to_string(),
        });
    }
    let format = format_of(file, &input, options.format)?;
    let _span = tracing::debug_span!("import", file, format = format.name()).entered();
    if !matches!(format, Format::Aider | Format::OpenHands) {
        // One session per file: only `--session 1` names it.
        pick(file, 1, options.session, |_| true)?;
    }
    let output = Output {
        sink,
        max_image_pixels: options.max_image_pixels,
    };
    let imported = match format {
        Format::Pi => pi::import(file, &input, output),
        Format::ClaudeCode => claude::import(file, &input, output),
        Format::Codex => codex::import(file, &input, output),
        Format::SweAgent => swe::import(file, &input, output),
        Format::Aider => one(file, options.session, output, |wanted, visit| {
            aider::sessions(file, &input, wanted, visit)
        }),
        Format::OpenHands => one(file, options.session, output, |wanted, visit| {
            openhands::sessions(file, &input, wanted, visit)
        }),
    }?;
    if imported.report.message_count() == 0 {
        return Err(ImportError::NoMessages {
            file: file.to_string(),
            records: imported.report.records,
            skipped: imported.report.skipped,
        });
    }
    tracing::debug!(
        events = imported.drafts.len(),
        warnings = imported.report.warnings.len(),
        "imported"
    );
    Ok(imported)
}

/// The format to read `input` as: the one detected, or `asked` when
/// given. A file detected as another format than the one asked for is
/// refused, naming both: read as the wrong format it would give a
/// session of nonsense (a pi log read as aider is one long reply).
/// `asked` decides alone only for a file detection cannot place.
fn format_of(
    file: &str,
    input: &input::Input<'_>,
    asked: Option<Format>,
) -> Result<Format, ImportError> {
    let found = Format::detect(Path::new(file), &input::head(file, input, DETECT_BYTES)?);
    match (asked, found) {
        (Some(asked), Some(found)) if asked != found => Err(ImportError::FormatMismatch {
            file: file.to_string(),
            asked: asked.name(),
            found: found.name(),
        }),
        (Some(format), _) | (None, Some(format)) => Ok(format),
        (None, None) => Err(ImportError::UnknownFormat {
            file: file.to_string(),
        }),
    }
}

/// Refuses a draft with an image claiming more than `limit` pixels,
/// naming the source line it came from.
fn check_image(
    file: &str,
    draft: &Draft,
    line: Option<u64>,
    limit: u64,
) -> Result<(), ImportError> {
    let abridge_session::EventBody::Message(event) = &draft.body else {
        return Ok(());
    };
    abridge_llm::check_image_pixels(&event.message, limit).map_err(|fault| {
        ImportError::ImageTooLarge {
            file: file.to_string(),
            line,
            field: format!("message.{}", fault.field),
            width: fault.width,
            height: fault.height,
            limit,
        }
    })
}

/// A model named the way aider and OpenHands (through LiteLLM) name them:
/// `provider/model` when a provider prefix is given, else the bare model,
/// whose provider the file does not say.
fn model_origin(name: &str) -> Origin {
    let (provider, model) = name.split_once('/').unwrap_or(("", name));
    Origin::Model {
        provider: provider.to_string(),
        model: model.to_string(),
    }
}

/// A session id for sources that record none: the file's stem.
fn id_from_file(file: &str) -> String {
    Path::new(file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "imported".to_string())
}

/// A source timestamp as our time string: RFC 3339 strings pass through,
/// numbers are read as Unix milliseconds.
fn time_of(value: &serde_json::Value, key: &str) -> Option<String> {
    match value.get(key)? {
        serde_json::Value::String(s) if !s.is_empty() => Some(s.clone()),
        serde_json::Value::Number(n) => n.as_i64().map(abridge_session::time::format_unix_millis),
        _ => None,
    }
}

/// An image block from a URL as chat formats write it: a `data:` URL with
/// base64 content becomes inline data, anything else stays a URL.
fn image_from_url(url: &str) -> abridge_llm::Block {
    let source = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(";base64,"))
        .map_or_else(
            || abridge_llm::ImageSource::Url {
                url: url.to_string(),
            },
            |(media_type, data)| abridge_llm::ImageSource::Base64 {
                media_type: media_type.to_string(),
                data: data.to_string(),
            },
        );
    abridge_llm::Block::Image {
        source,
        width: None,
        height: None,
    }
}

/// A header with the given id, creation time and cwd.
fn header(session_id: String, created: Option<String>, cwd: Option<String>) -> Header {
    let mut header = Header::new(session_id);
    if let Some(created) = created {
        header.created = created;
    }
    header.cwd = cwd;
    header
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_unknown_files_are_errors() {
        assert_eq!(
            read_bytes("e.jsonl", b"\n \n", None)
                .unwrap_err()
                .to_string(),
            "e.jsonl: the file is empty"
        );
        assert!(matches!(
            read_bytes("u.jsonl", b"{\"a\":1}\n", None).unwrap_err(),
            ImportError::UnknownFormat { .. }
        ));
    }
}
