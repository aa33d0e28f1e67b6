//! Token accounting for abridge: how many tokens the history a model sees
//! costs, counted once and kept current.
//!
//! # Overview
//!
//! - [`Tokenizer`]: counts text. [`Tiktoken`] runs OpenAI's o200k and
//!   cl100k exactly (the same tokens as Python `tiktoken`, several times
//!   faster); [`Estimate`] is bytes / 4. [`tokenizer_for`] picks the closest
//!   one for a model's tokenizer family.
//! - [`CostModel`]: what a message costs: its text, thinking (signatures
//!   and encrypted reasoning sized by the reasoning they carry, earlier
//!   turns' thinking free where the provider drops it, [`PriorThinking`]),
//!   tool calls and results, images billed by their provider's
//!   formula ([`image_tokens`]), plus fixed per-block and per-message
//!   overhead ([`MESSAGE_OVERHEAD`], [`BLOCK_OVERHEAD`], ...).
//! - [`o200k_correction`]: how many tokens of a family counted with o200k
//!   one o200k token stands for (Claude: [`CLAUDE_O200K_CORRECTION`],
//!   measured by [`calibrate`] on the bundled Claude sessions' usage
//!   reports); [`KnownCounts`]: the provider's own counts, read first.
//! - [`TokenMeter`]: the figure compaction acts on. Costs are cached by
//!   event seq and the surface total follows the session's change journal,
//!   so measuring after an append is O(1). [`Measure`] holds our estimate,
//!   the figure anchored on the provider's last reported usage, and
//!   `tokens = max(anchored, estimate)`.
//! - [`TokenCounter`]: what compaction asks. [`MeterCounter`] answers
//!   from a [`TokenMeter`]; [`EstimateCounter`] is the bytes/4 fallback
//!   ([`estimate_tokens`]) that tests predict by hand. Cached counts are
//!   keyed by session and seq, so one counter may serve several sessions.
//! - [`KeptCounts`]: each message's cost kept between processes, keyed by
//!   seq and [`content_hash`], so reopening a session counts nothing
//!   already counted ([`TokenMeter::keep_counts`]).
//! - [`token_stats`] / [`model_token_stats`]: where the tokens go, by role,
//!   by tool, largest items, for a chosen model.
//!
//! # Why one figure
//!
//! Compaction loops when the trigger and the check that a compaction freed
//! enough count differently. Everything that asks "how full is the window"
//! asks a [`TokenMeter`] and reads [`Measure::tokens`]. Our count can be
//! wrong (a provider's tokenizer we do not have, a system prompt we do not
//! see); the provider's report can be stale (made before a compaction) or
//! missing. Taking the larger of the two, with stale reports dropped, errs
//! toward compacting early, never toward overflowing.
//!
//! # Example
//!
//! ```
//! use abridge_llm::{Catalog, Message};
//! use abridge_meter::{TokenMeter, Tokenizer, Tiktoken};
//! use abridge_session::Session;
//!
//! assert_eq!(Tiktoken::o200k().count("The quick brown fox jumps over the lazy dog."), 10);
//!
//! let lookup = Catalog::builtin().lookup("openrouter/anthropic/claude-sonnet-4.5");
//! let mut meter = TokenMeter::for_model(&lookup.entry);
//! let mut session = Session::in_memory("demo");
//! session.append_message(Message::user("fix the failing test"))?;
//! let measure = meter.measure(&session);
//! assert!(measure.tokens < lookup.entry.context_window);
//! # Ok::<(), abridge_session::SessionError>(())
//! ```

mod bpe;
pub mod calibrate;
mod correction;
mod cost;
mod counter;
mod image;
mod kept;
mod kept_file;
mod known;
mod meter;
mod pretokenize;
mod rank_table;
mod stats;
mod tokenizer;

/// The header reader lives with the vocabulary (one owner for the meter
/// and the image cap); re-exported where it was.
pub use abridge_llm::sniff_size;
pub use correction::CLAUDE_4_7_TOKENIZER_GROWTH;
pub use correction::CLAUDE_O200K_CORRECTION;
pub use correction::o200k_correction;
pub use cost::BLOCK_OVERHEAD;
pub use cost::CostModel;
pub use cost::MESSAGE_OVERHEAD;
pub use cost::OPAQUE_CHARS_PER_TOKEN;
pub use cost::PriorThinking;
pub use cost::TOOL_CALL_OVERHEAD;
pub use cost::TOOL_ERROR_OVERHEAD;
pub use cost::TOOL_RESULT_OVERHEAD;
pub use counter::EstimateCounter;
pub use counter::MeterCounter;
pub use counter::TokenCounter;
pub use image::ANTHROPIC_STANDARD_MAX_EDGE;
pub use image::ANTHROPIC_STANDARD_MAX_PIXELS;
pub use image::MAX_IMAGE_EDGE;
pub use image::UNKNOWN_IMAGE_EDGE;
pub use image::anthropic_standard_size;
pub use image::image_block_tokens;
pub use image::image_tokens;
pub use kept::ContentHash;
pub use kept::KEPT_MAGIC;
pub use kept::KEPT_VERSION;
pub use kept::KeptCounts;
pub use kept::KeptError;
pub use kept::content_hash;
pub use kept_file::KeptFile;
pub use kept_file::KeptLoad;
pub use kept_file::KeptWriter;
pub use known::KnownCounts;
pub use meter::Anchor;
pub use meter::Measure;
pub use meter::TokenMeter;
pub use stats::Item;
pub use stats::PREVIEW_CHARS;
pub use stats::TokenStats;
pub use stats::ToolTokens;
pub use stats::UNKNOWN_TOOL;
pub use stats::model_token_stats;
pub use stats::token_stats;
pub use tokenizer::ESTIMATE_BYTES_PER_TOKEN;
pub use tokenizer::Encoding;
pub use tokenizer::Estimate;
pub use tokenizer::Tiktoken;
pub use tokenizer::Tokenizer;
pub use tokenizer::estimate_tokens;
pub use tokenizer::tokenizer_for;
