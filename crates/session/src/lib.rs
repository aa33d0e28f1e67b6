//! The session log: an append-only tree of events from which the history a
//! model sees is folded.
//!
//! # Overview
//!
//! - [`Event`]: one line of the log. Every event has a `seq` (its index),
//!   a `parent` (the event before it on its branch), a time and a body.
//! - [`Session`]: the log in memory with its active path (the parent chain
//!   from the last event) and its [`Surface`] (the seqs the model sees).
//! - [`SessionStore`]: where the log lives: [`JsonlStore`] on disk,
//!   [`MemoryStore`] for tests and hosts with their own persistence.
//!
//! Other agents' session files are turned into logs by `abridge-import`,
//! which writes through the public API below: the log itself depends on no
//! other agent's format.
//!
//! # Why append-only
//!
//! A compaction never edits history: it appends a message that *replaces*
//! a span of the surface, or *rewrites* one tool result, and lists what it
//! hides. The originals stay in the file, so any earlier state can be
//! replayed, token counts can be cached by seq forever, and a crash can at
//! worst tear the last write, which a reader skips and a writer refuses
//! until `repair` sets its bytes aside (see [`JsonlStore`]).
//!
//! # Example
//!
//! ```
//! use abridge_llm::Message;
//! use abridge_session::{Draft, Session};
//!
//! let mut session = Session::in_memory("demo");
//! session.append_message(Message::user("fix the build"))?;
//! session.append_message(Message::assistant("done"))?;
//! let summary = session.append(Draft::replace(Message::user("[checkpoint]"), 0, 1, vec![0, 1]))?;
//! assert_eq!(session.surface().seqs(), &[summary]);
//! assert_eq!(session.events().len(), 3); // nothing was lost
//! # Ok::<(), abridge_session::SessionError>(())
//! ```

mod error;
mod event;
mod lease;
mod pin;
mod private;
mod reference;
mod repair;
mod session;
mod store;
mod surface;
pub mod time;
mod torn;
mod unpin;

pub use error::Place;
pub use error::SessionError;
pub use error::StoreError;
pub use event::Draft;
pub use event::Event;
pub use event::EventBody;
pub use event::FORMAT_VERSION;
pub use event::Header;
pub use event::HeaderTag;
pub use event::LogEvent;
pub use event::MessageEvent;
pub use event::Seq;
pub use event::SurfaceOp;
pub use event::TYPE_LEAF;
pub use event::TYPE_MESSAGE;
pub use lease::Lease;
pub use lease::Leases;
pub use pin::ActivePin;
pub use pin::PINNED_HEADER;
pub use pin::PINNED_SOURCE;
pub use pin::Pin;
pub use pin::PinFault;
pub use pin::TYPE_PIN;
pub use pin::pinned_text;
pub use private::PRIVATE_FILE_MODE;
pub use private::PrivateReplacement;
pub use private::create_private;
pub use private::write_private;
pub use reference::HIDDEN_NOTE;
pub use reference::Reference;
pub use reference::ReferenceError;
pub use reference::SCHEME as RECALL_SCHEME;
pub use repair::UNKNOWN_OUTCOME;
pub use repair::dangling_call_results;
pub use repair::dangling_tool_calls;
pub use repair::keep_torn_events;
pub use repair::repair_dangling_tool_calls;
pub use session::LogWriter;
pub use session::Navigation;
pub use session::Session;
pub use session::SurfaceCursor;
pub use session::WRITE_BATCH_BYTES;
pub use session::WRITE_BATCH_EVENTS;
pub use session::batch_is_full;
pub use session::check_drafts;
pub use session::check_drafts_with;
pub use store::BAD_BLOB_REFERENCE;
pub use store::BLOB_THRESHOLD;
pub use store::CompactionHold;
pub use store::FsyncPolicy;
pub use store::JsonlOptions;
pub use store::JsonlStore;
pub use store::LineError;
pub use store::LoadReport;
pub use store::LoadedLog;
pub use store::MemoryStore;
pub use store::SessionStore;
pub use store::SetAside;
pub use store::SkippedLine;
pub use store::blob_sha256;
#[cfg(any(test, feature = "testing"))]
pub use store::conformance;
pub use store::decode_event;
pub use store::encode_event;
pub use store::externalize_event;
pub use store::is_blob_key;
pub use store::resolve_with;
pub use surface::Surface;
pub use surface::SurfaceChange;
pub use torn::TORN_SUFFIX;
pub use torn::TornTail;
pub use unpin::TYPE_UNPIN;
pub use unpin::Unpin;
