//! History printed onto PNG frames that a vision model reads.
//!
//! A vision model bills an image by its pixel size, not by the text on it,
//! so history printed legibly onto frames can cost fewer tokens than the
//! same history as text, with no model call and a deterministic result.
//!
//! # Overview
//!
//! - [`serialize`]: messages to dense text, one scope per message
//!   (`[user]`, `[assistant]`, `[thinking]`, `[call] name(args)` with its
//!   `[result]` right after it), results and arguments capped head and tail.
//! - [`normalize()`]: ANSI stripped, line breaks as one filled cell,
//!   punctuation and box drawing folded to ASCII, emoji to short tags.
//! - `FaceId`: X.org misc-fixed BDF faces (with a dotted `0`) parsed by our
//!   own parser; CJK and other missing glyphs come from Droid Sans Fallback,
//!   two cells wide.
//! - [`Shape`], [`FrameSpec`]: glyph and cell sizes, frame sizes per model
//!   line, as data with provenance.
//! - [`paginate`], [`render_page`]: cells onto frames whose height hugs the
//!   rows used, written as indexed PNG with a palette of only the colours
//!   used (1 bit for black on white).
//! - [`frame_tokens`], [`frame_budget`]: what a frame costs, how many fit.
//! - [`Archive`]: text edges around an imaged middle, foveated when long,
//!   stored as text only; frames are drawn on demand into a [`FrameCache`].
//! - [`Snapcompact`]: the `snapcompact` compaction method.
//! - [`render_text`], [`render_messages`]: one call from text to frames.
//! - [`image_large_results`]: at request-build time, large older tool
//!   results sent as frames when cheaper (never persisted).
//! - [`image_instructions`]: the same for the system prompt's
//!   project-instruction sections (AGENTS.md, CLAUDE.md, ...), off by
//!   default.
//! - [`thinking_allowed`]: which provider families see `[thinking]` on
//!   frames.
//!
//! # Why frames are never stored
//!
//! A checkpoint holds image blocks whose source is a `snapcompact:` URL
//! with the frame's pixel size (so the meter bills them exactly), and the
//! archive's text sits in the checkpoint's summary event. The request
//! builder calls [`archive_from_summary`] and [`Archive::expand`] to swap
//! the references for PNGs. Session files stay small and any later
//! compaction re-renders from text.
//!
//! # Example
//!
//! ```
//! use abridge_snapcompact::{render_text, FrameSpec};
//! let spec = FrameSpec::for_model("claude-sonnet-4-5");
//! let frames = render_text("fn main() {\n    println!(\"0O 1lI\");\n}", &spec)?;
//! assert_eq!(frames.len(), 1);
//! assert_eq!((frames[0].width, frames[0].height), (1568, 16));
//! # Ok::<(), abridge_snapcompact::Error>(())
//! ```
mod archive;
mod budget;
mod canvas;
mod error;
mod expansion;
mod fallback;
mod font;
mod frame_cache;
mod frames;
mod inline;
mod instructions;
mod markers;
mod method;
mod middle;
mod normalize;
mod record;
mod render;
mod serialize;
mod shape;
mod thinking;

pub use archive::Archive;
pub use archive::ArchiveConfig;
pub use archive::FRAME_URL_SCHEME;
pub use archive::FrameRef;
pub use budget::BudgetInputs;
pub use budget::DEFAULT_BYTE_BUDGET;
pub use budget::FrameBudget;
pub use budget::base64_len;
pub use budget::frame_budget;
pub use budget::frame_tokens;
pub use error::Error;
pub use expansion::FrameExpansion;
pub use frame_cache::FrameCache;
pub use frames::render_messages;
pub use frames::render_runs;
pub use frames::render_runs_within;
pub use frames::render_text;
pub use inline::INLINE_NOTE;
pub use inline::InlineConfig;
pub use inline::image_large_results;
pub use instructions::INSTRUCTIONS_FRAMES_NOTE;
pub use instructions::INSTRUCTIONS_NOTE;
pub use instructions::image_instructions;
pub use instructions::instructions_frames_note;
pub use instructions::instructions_note;
pub use method::METHOD_NAME;
pub use method::Snapcompact;
pub use method::SnapcompactConfig;
pub use method::is_snapcompact_checkpoint;
pub use normalize::normalize;
pub use record::ArchiveRecord;
pub use record::FrameStats;
pub use record::archive_from_summary;
pub use render::Frame;
pub use render::Grid;
pub use render::Ink;
pub use render::Page;
pub use render::Run;
pub use render::paginate;
pub use render::render_page;
pub use serialize::SerializeConfig;
pub use serialize::plain_text;
pub use serialize::serialize;
pub use shape::FrameSpec;
pub use shape::MODEL_LINES;
pub use shape::ModelLine;
pub use shape::SHAPES;
pub use shape::Shape;
pub use thinking::thinking_allowed;
