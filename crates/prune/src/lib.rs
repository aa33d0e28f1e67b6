//! Model-free reclaim for abridge: tool-output pruning, superseded and
//! useless elision, shake into artifacts, and trim.
//!
//! # Overview
//!
//! Most of a coding agent's context is tool output. This crate reclaims it
//! without a model, as `rewrite` events over the session log: each
//! replaces the content of one visible tool result and keeps its call id,
//! so tool pairing holds, and the original stays in the log, so
//! [`restore`] can bring it back.
//!
//! - [`prune`]: superseded reads ([`SUPERSEDED`]), results a tool flagged
//!   useless ([`USELESS`]) and old outputs beyond the newest protected
//!   tokens ([`PRUNED`]).
//! - [`mask`]: every tool result but the newest N replaced by a one-line
//!   placeholder ([`MASKED`]).
//! - [`shake`]: large results and fenced or XML blocks of older results
//!   moved out of the context ([`SHAKEN`]).
//! - [`trim`]: a result over a size limit keeps head and tail
//!   ([`TRIM_MARKER`]).
//!
//! Every placeholder that hides something names it by a recall reference
//! (`recall://SEQ` of the result it replaces, or `recall://SEQ#START-END`
//! for characters of its text) and the [`RECALL_TOOL`] that reads it back
//! from the log, where the original stays. Logs written before that carry
//! `artifact://` references, still readable through an [`ArtifactStore`]
//! ([`resolve`]); the recall tool does that for the model.
//!
//! Each pass is a pure function from a session and its configuration to a
//! [`Reclaim`]: rewrites for the compaction transaction (or drafts for
//! `Session::append_batch`) and a [`Report`]. Passes read a [`Snapshot`]
//! of the surface, whose costs the seam's `TokenCounter` counted (the
//! plan's, inside a method), and price their rewrites with that same
//! counter, so they measure exactly as the trigger and the commit check
//! do.
//!
//! # Methods
//!
//! [`PruneMethod`], [`MaskMethod`], [`ShakeMethod`] and [`TrimMethod`] implement the
//! seam's `CompactionMethod` on a plan's snapshot; [`ReclaimConfig::method`]
//! builds them by name (`prune`, `mask`, `shake`, `trim`) for `abridge compact --method`.
//! Harnesses call the pass functions directly between turns, with
//! [`PassContext::per_turn`].
//!
//! # Why rewrites and not a checkpoint
//!
//! A rewrite changes one result in place; everything the model said stays
//! verbatim, nothing is summarized, and no latency is spent. It still
//! changes the prompt from that position on, so a per-turn pass (see
//! [`PassContext`]) rewrites only near the tail unless the provider's
//! cache has expired.
//!
//! # Example
//!
//! ```
//! use abridge_llm::{Block, Message, Role};
//! use abridge_compact::EstimateCounter;
//! use abridge_prune::{PassContext, PruneConfig, Snapshot, prune};
//! use abridge_session::Session;
//!
//! let mut session = Session::in_memory("demo");
//! session.append_message(Message {
//!     role: Role::Assistant,
//!     content: vec![Block::ToolCall {
//!         id: "c1".into(),
//!         name: "read".into(),
//!         arguments: serde_json::json!({"path": "a.rs"}),
//!     }],
//!     meta: Default::default(),
//! })?;
//! session.append_message(Message::tool_result("c1", "fn a() {}\n".repeat(200), false))?;
//! // Protect nothing and accept any saving, to show one rewrite.
//! let config = PruneConfig { protect_tokens: 0, min_saving_tokens: 0, ..PruneConfig::default() };
//! let counter = EstimateCounter::new();
//! let snapshot = Snapshot::of_session(&session, &counter);
//! let reclaim = prune(&snapshot, &config, &PassContext::compaction(), &counter);
//! assert_eq!(reclaim.rewrites.len(), 1);
//! session.append_batch(reclaim.drafts())?;
//! # Ok::<(), abridge_session::SessionError>(())
//! ```

mod artifact;
mod context;
mod error;
mod mask;
mod method;
pub mod placeholder;
mod prune;
mod reads;
mod regions;
mod report;
mod rewrite;
mod scan;
mod shake;
mod trim;

#[cfg(test)]
mod guards;

pub use artifact::ARTIFACT_SCHEME;
pub use artifact::ArtifactId;
pub use artifact::ArtifactRef;
pub use artifact::ArtifactStore;
pub use artifact::DirArtifactStore;
pub use artifact::MemoryArtifactStore;
pub use artifact::resolve;
pub use context::PassContext;
pub use context::PassKind;
pub use error::PruneError;
pub use mask::DEFAULT_MASK_KEEP;
pub use mask::MaskConfig;
pub use mask::mask;
pub use method::MaskMethod;
pub use method::PruneMethod;
pub use method::ReclaimConfig;
pub use method::ShakeMethod;
pub use method::TrimMethod;
pub use placeholder::MASKED;
pub use placeholder::PLACEHOLDER_PREFIX;
pub use placeholder::PRUNED;
pub use placeholder::RECALL_TOOL;
pub use placeholder::SHAKEN;
pub use placeholder::SHAKEN_IMAGE;
pub use placeholder::SUPERSEDED;
pub use placeholder::TRIM_MARKER;
pub use placeholder::USELESS;
pub use placeholder::is_placeholder;
pub use placeholder::placeholder_reference;
pub use prune::DEFAULT_PROTECTED_TOOLS;
pub use prune::PruneConfig;
pub use prune::prune;
pub use reads::ArgEquals;
pub use reads::FileRead;
pub use reads::ReadSyntax;
pub use reads::ReadTool;
pub use reads::Selector;
pub use reads::default_read_tools;
pub use report::Reclaim;
pub use report::Report;
pub use report::RewriteNote;
pub use report::Rule;
pub use rewrite::original_of;
pub use rewrite::restore;
pub use scan::Snapshot;
pub use shake::ImagePolicy;
pub use shake::ShakeConfig;
pub use shake::ShakePreset;
pub use shake::result_text;
pub use shake::shake;
pub use trim::TrimConfig;
pub use trim::trim;
