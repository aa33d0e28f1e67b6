//! The compaction seam: what compaction does, not how.
//!
//! This crate is to abridge's compaction backends what `tower-service` is
//! to middleware: a few traits and the transaction they plug into, with no
//! backend code, no HTTP and few dependencies, so a backend or a host can
//! depend on it cheaply and it rarely breaks.
//!
//! # Overview
//!
//! Three doors, one per reader:
//!
//! - [`method`] (also the crate root, and the short list in [`prelude`]):
//!   what a method author needs. [`CompactionMethod`] turns a [`Plan`]
//!   (an owned snapshot of the span to compact) into a [`MethodOutput`]:
//!   a checkpoint, or rewrites of individual tool results; it declares
//!   its [`Capabilities`] and may say up front that it will find nothing
//!   ([`Prospect`]). [`TokenCounter`] is the one figure every step counts
//!   with, carried by the [`Policy`] into every plan. [`compact_session`]
//!   runs a method on a session in a test.
//! - [`host`]: what a host needs (the `abridge` crate's Maintenance, a
//!   store, a face). [`host::plan`] picks the span: head-anchored (a
//!   previous checkpoint is folded into the next), never splitting a tool
//!   call from its result, keeping the newest `keep_recent_tokens` as
//!   whole units, noting when the cut falls inside a turn.
//!   [`host::begin`] / [`host::commit`] / [`host::abort`] are the
//!   transaction that writes it; [`host::attempt`] drives one method
//!   through it (plan afresh, availability, prospect, hooks, commit or
//!   abort, abort on drop). [`host::CompactionHooks`] and
//!   [`host::CompactService`] let a host join in and call compaction as a
//!   service; [`host::CheckpointExpansion`] lets a method that stores more
//!   than text say how its checkpoint is sent. Which method to try next
//!   is decided above the seam, by the `abridge` crate's Maintenance.
//! - [`check`]: what must hold of any session ([`check::check_invariants`])
//!   and the tool-call pairing walker, for tests, `abridge check` and
//!   anyone appending.
//!
//! # Which error belongs where
//!
//! A method fails with a [`MethodError`]: only what its own work can
//! meet (no usable summary, an overflowing or failed model call, not
//! smaller, nothing to compact, unavailable, cancelled, a bad details
//! section, the cost of a failed attempt). The host's transaction and
//! passes fail with a [`host::CompactError`]: busy, the span changed,
//! output that cannot be committed, a failed write, a landing the policy
//! refuses (too little, over the window), every method failed; a
//! method's failure arrives whole as [`host::CompactError::Method`]. One
//! [`ErrorKind`] names both, and wrapping keeps a method's kind and text,
//! so `compaction/end` reads the same whichever side failed.
//!
//! The summarizer contract (`Summarizer`) belongs to the backend that
//! uses it, `abridge-compact-basic`; redaction is `abridge-redact`,
//! applied here to every plan and commit.
//!
//! # Why a three-step transaction
//!
//! A model can take minutes to write a summary. Holding `&mut Session` that
//! long would stop the agent from recording its turns, and writing pieces
//! as they come would leave half a compaction after a crash. So:
//!
//! 1. `begin` appends `compaction/start` and returns a [`host::Ticket`] owning the
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
//! its ticket is gone (see [`host::begin`]): inert, reported by
//! [`host::unmatched_starts`], never blocking the next `begin`.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use abridge_compact::*;
//! use abridge_compact::check::*;
//! use abridge_compact::host::*;
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
pub mod check;
mod contract;
mod details;
mod error;
mod events;
mod expansion;
mod frame;
mod hooks;
mod plan;
mod planner;
mod policy;
mod run;
mod saving;
mod service;
mod txn;
mod types;

/// What a method author needs, and all the crate root exports: the trait,
/// the plan it reads, what it returns, its error, what it declares, and
/// [`compact_session`] to run it in a test. docs/writing-a-compaction-method.md
/// uses nothing else.
pub mod method {
    pub use crate::capabilities::Capabilities;
    pub use crate::capabilities::OutputKind;
    pub use crate::contract::Availability;
    pub use crate::contract::Checkpoint;
    pub use crate::contract::CompactionMethod;
    pub use crate::contract::MethodOutput;
    pub use crate::contract::Prospect;
    pub use crate::contract::Rewrite;
    pub use crate::details::DetailSection;
    pub use crate::details::Details;
    pub use crate::details::DetailsError;
    pub use crate::error::ErrorKind;
    pub use crate::error::MethodError;
    pub use crate::plan::CheckpointSource;
    pub use crate::plan::Plan;
    pub use crate::plan::PlanTokens;
    pub use crate::plan::PreviousCheckpoint;
    pub use crate::plan::SplitTurn;
    pub use crate::policy::DEFAULT_KEEP_RECENT_TOKENS;
    pub use crate::policy::Policy;
    pub use crate::run::compact_session;
    pub use crate::service::Outcome;
    pub use crate::types::FileAccess;
    pub use crate::types::FileOps;
    pub use crate::types::Span;
    pub use crate::types::Trigger;
    // Counting is the meter's; the seam re-exports it so that backends and
    // hosts name one `TokenCounter` through the crate they already use.
    #[doc(inline)]
    pub use abridge_meter::EstimateCounter;
    #[doc(inline)]
    pub use abridge_meter::TokenCounter;
}

pub use method::*;

/// What a host needs (the `abridge` crate's Maintenance, a store, a face):
/// the transaction, one attempt driven through it, hooks, the compaction
/// service, the log's compaction events, checkpoint framing and send-time
/// expansion, redaction, the host's error and the failures of a pass.
pub mod host {
    pub use crate::error::CompactError;
    pub use crate::error::ErrorKind;
    pub use crate::error::MethodFailure;
    pub use crate::events::EndData;
    pub use crate::events::EndStatus;
    pub use crate::events::StartData;
    pub use crate::events::SummaryData;
    pub use crate::events::TYPE_COMPACTION_END;
    pub use crate::events::TYPE_COMPACTION_START;
    pub use crate::events::TYPE_COMPACTION_SUMMARY;
    pub use crate::events::UnmatchedStart;
    pub use crate::events::summary_of_checkpoint;
    pub use crate::events::unmatched_starts;
    pub use crate::expansion::CheckpointExpansion;
    pub use crate::expansion::Destination;
    pub use crate::expansion::ExpansionError;
    pub use crate::expansion::SurfaceMessage;
    pub use crate::frame::CHECKPOINT_CLOSING;
    pub use crate::frame::CHECKPOINT_OPENING;
    pub use crate::frame::checkpoint_body;
    pub use crate::frame::checkpoint_reference;
    pub use crate::frame::frame_checkpoint;
    pub use crate::frame::is_checkpoint;
    pub use crate::hooks::Before;
    pub use crate::hooks::BeforeNavigation;
    pub use crate::hooks::CompactionHooks;
    pub use crate::hooks::Extra;
    pub use crate::hooks::NoHooks;
    pub use crate::planner::fixed_tokens;
    pub use crate::planner::plan;
    pub use crate::run::Target;
    pub use crate::run::attempt;
    pub use crate::run::compact_session_with;
    pub use crate::run::plan_for;
    pub use crate::service::CompactRequest;
    pub use crate::service::CompactService;
    pub use crate::service::SharedSession;
    pub use crate::service::lock_session;
    pub use crate::txn::Ticket;
    pub use crate::txn::abort;
    pub use crate::txn::begin;
    pub use crate::txn::close_stale;
    pub use crate::txn::commit;
    #[doc(inline)]
    pub use abridge_meter::MeterCounter;
    #[doc(inline)]
    pub use abridge_redact::REDACTION_OPENING;
    #[doc(inline)]
    pub use abridge_redact::RedactError;
    #[doc(inline)]
    pub use abridge_redact::Redactor;
    #[doc(inline)]
    pub use abridge_redact::SecretKind;
    #[doc(inline)]
    pub use abridge_redact::redact_with;
}

/// The names a method's file starts with: `use abridge_compact::prelude::*;`.
pub mod prelude {
    pub use crate::method::Capabilities;
    pub use crate::method::Checkpoint;
    pub use crate::method::CompactionMethod;
    pub use crate::method::MethodError;
    pub use crate::method::MethodOutput;
    pub use crate::method::Plan;
    pub use crate::method::Rewrite;
    pub use crate::method::Trigger;
    pub use async_trait::async_trait;
}

/// `docs/writing-a-compaction-method.md`, compiled and run with the crate's
/// doctests so the walkthrough a backend author follows cannot drift from
/// the code.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/writing-a-compaction-method.md")]
pub struct WritingACompactionMethod;
