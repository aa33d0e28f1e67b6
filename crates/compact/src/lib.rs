//! The compaction seam: what compaction does, not how.
//!
//! This crate is to abridge's compaction backends what `tower-service` is
//! to middleware: a few traits and the transaction they plug into, with no
//! backend code, no HTTP and few dependencies, so a backend or a host can
//! depend on it cheaply and it rarely breaks.
//!
//! # Overview
//!
//! - [`plan`] picks the surface span to compact: head-anchored (a previous
//!   checkpoint is folded into the next), never splitting a tool call from
//!   its result, keeping the newest `keep_recent_tokens` as whole units,
//!   and noting when the cut falls inside a turn. The [`Plan`] is an owned
//!   snapshot.
//! - [`CompactionMethod`] turns a plan into a [`MethodOutput`]: a
//!   checkpoint, or rewrites of individual tool results.
//! - [`begin`] / [`commit`] / [`abort`]: the transaction that writes it.
//! - [`Summarizer`], [`CompactionHooks`], [`CompactService`]: the other
//!   seams, so an LLM, a remote service or a test script writes summaries,
//!   a host joins in, and a harness calls compaction as a service.
//! - [`TokenCounter`] (with [`MeterCounter`] and [`EstimateCounter`]):
//!   the one figure every step counts with, carried by the [`Policy`] into
//!   every [`Plan`]. It is the meter's, re-exported here.
//! - [`check_invariants`]: what must hold of any session, for tests and
//!   users.
//! - [`attempt`]: one method, driven through the whole transaction
//!   (plan afresh, availability, hooks, commit or abort, abort on drop);
//!   [`compact_session`] is the same on a session the caller owns. Which
//!   method to try next is decided above the seam, by the `abridge` crate's
//!   Maintenance.
//!
//! # Why a three-step transaction
//!
//! A model can take minutes to write a summary. Holding `&mut Session` that
//! long would stop the agent from recording its turns, and writing pieces
//! as they come would leave half a compaction after a crash. So:
//!
//! 1. `begin` appends `compaction/start` and returns a [`Ticket`] owning the
//!    plan. The session is free again.
//! 2. The method runs on the owned plan, asynchronously.
//! 3. `commit` checks the planned span is still on the surface unchanged
//!    (same seqs at the same positions), then appends
//!    `compaction/summary`, the framed checkpoint (a `replace` listing every
//!    hidden seq plus the start and summary events as sources) and
//!    `compaction/end` in one all-or-nothing batch. Any failure appends only
//!    `compaction/end` with the error: the surface is untouched.
//!
//! A crash between 1 and 3 leaves an unmatched start. It is *stale* once
//! its ticket is gone (see [`txn`'s notes](begin)): inert, reported by
//! [`unmatched_starts`], never blocking the next `begin`.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use abridge_compact::*;
//! use abridge_llm::Message;
//! use abridge_session::Session;
//!
//! let mut session = Session::in_memory("demo");
//! for i in 0..6 {
//!     session.append_message(Message::user(format!("request {i}: {}", "x".repeat(400))))?;
//!     session.append_message(Message::assistant("ok"))?;
//! }
//! let policy = Policy::default().with_keep_recent_tokens(150);
//! let plan = plan(&session, &policy).expect("something to compact");
//! let ticket = begin(&mut session, plan, "example")?;
//! // ... a method runs here, with no borrow of the session ...
//! let output = MethodOutput::Checkpoint(
//!     Checkpoint::new("The user sent six requests; all answered.")
//!         .with_short_summary("Six requests were answered."),
//! );
//! let outcome = commit(&mut session, ticket, output)?;
//! assert!(outcome.tokens_after < outcome.tokens_before);
//! assert!(check_invariants(&session).is_ok());
//! # Ok::<(), CompactError>(())
//! ```

mod capabilities;
mod check;
mod details;
mod error;
mod events;
mod expansion;
mod frame;
mod hooks;
mod method;
mod plan;
mod planner;
mod policy;
mod run;
mod saving;
mod service;
mod summarizer;
mod txn;
mod types;

pub use abridge_redact::REDACTION_OPENING;
pub use abridge_redact::RedactError;
pub use abridge_redact::Redactor;
pub use abridge_redact::SecretKind;
pub use abridge_redact::redact_with;
pub use capabilities::Capabilities;
pub use capabilities::OutputKind;
pub use check::InvariantReport;
pub use check::Pairing;
pub use check::PairingFault;
pub use check::Violation;
pub use check::check_appended_pairing;
pub use check::check_invariants;
pub use details::DetailSection;
pub use details::Details;
pub use details::DetailsError;
pub use error::CompactError;
pub use error::ErrorKind;
pub use error::MethodFailure;
pub use events::EndData;
pub use events::EndStatus;
pub use events::StartData;
pub use events::SummaryData;
pub use events::TYPE_COMPACTION_END;
pub use events::TYPE_COMPACTION_START;
pub use events::TYPE_COMPACTION_SUMMARY;
pub use events::UnmatchedStart;
pub use events::summary_of_checkpoint;
pub use events::unmatched_starts;
pub use expansion::CheckpointExpansion;
pub use expansion::Destination;
pub use expansion::ExpansionError;
pub use expansion::SurfaceMessage;
pub use frame::CHECKPOINT_CLOSING;
pub use frame::CHECKPOINT_OPENING;
pub use frame::checkpoint_body;
pub use frame::checkpoint_reference;
pub use frame::frame_checkpoint;
pub use frame::is_checkpoint;
pub use hooks::Before;
pub use hooks::BeforeNavigation;
pub use hooks::CompactionHooks;
pub use hooks::Extra;
pub use hooks::NoHooks;
pub use method::Availability;
pub use method::Checkpoint;
pub use method::CompactionMethod;
pub use method::MethodOutput;
pub use method::Prospect;
pub use method::Rewrite;
pub use plan::CheckpointSource;
pub use plan::Plan;
pub use plan::PlanTokens;
pub use plan::PreviousCheckpoint;
pub use plan::SplitTurn;
pub use planner::fixed_tokens;
pub use planner::plan;
pub use policy::DEFAULT_KEEP_RECENT_TOKENS;
pub use policy::Policy;
pub use run::Target;
pub use run::attempt;
pub use run::compact_session;
pub use run::compact_session_with;
pub use run::plan_for;
pub use service::CompactRequest;
pub use service::CompactService;
pub use service::Outcome;
pub use service::SharedSession;
pub use service::lock_session;
pub use summarizer::FnSummarizer;
pub use summarizer::Summarizer;
pub use summarizer::Summary;
pub use summarizer::SummaryFuture;
pub use summarizer::SummaryRequest;
// Counting is the meter's; the seam re-exports it so that backends and
// hosts name one `TokenCounter` through the crate they already use.
#[doc(inline)]
pub use abridge_meter::EstimateCounter;
#[doc(inline)]
pub use abridge_meter::MeterCounter;
#[doc(inline)]
pub use abridge_meter::TokenCounter;
pub use txn::Ticket;
pub use txn::abort;
pub use txn::begin;
pub use txn::close_stale;
pub use txn::commit;
pub use types::FileAccess;
pub use types::FileOps;
pub use types::Span;
pub use types::Trigger;

/// `docs/writing-a-compaction-method.md`, compiled and run with the crate's
/// doctests so the walkthrough a backend author follows cannot drift from
/// the code.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/writing-a-compaction-method.md")]
pub struct WritingACompactionMethod;
