//! The basic compaction backend: checkpoints written by a model (`soft`)
//! or from the history itself (`digest`), handoff documents, remote
//! summarizers and branch summaries. When to compact, and which method to
//! try next, is decided by the `abridge` crate's Maintenance.
//!
//! Everything here plugs into the seam in [`abridge_compact`]: the methods
//! implement [`CompactionMethod`](abridge_compact::CompactionMethod), the
//! LLM summarizer implements [`Summarizer`],
//! and the `abridge` crate's Maintenance walks them in order.
//!
//! # Example: compact offline with `digest`
//!
//! ```
//! use abridge_compact::{Policy, Trigger, compact_session};
//! use abridge_compact_basic::DigestMethod;
//! use abridge_llm::Message;
//! use abridge_session::Session;
//!
//! let mut session = Session::in_memory("demo");
//! for i in 0..40 {
//!     session.append_message(Message::user(format!("step {i}: please continue with the parser work")))?;
//!     session.append_message(Message::assistant(format!("Done with step {i}. {}", "details ".repeat(60))))?;
//! }
//! let policy = Policy::default().with_keep_recent_tokens(500);
//! let outcome = futures::executor::block_on(compact_session(&mut session, &DigestMethod, &policy, Trigger::Manual))?;
//! assert!(outcome.tokens_after < outcome.tokens_before / 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod attempts;
mod branch;
mod cache_aligned;
mod candidates;
mod digest;
mod files;
mod goal;
mod handoff;
mod llm;
mod names;
mod native_expansion;
pub mod prompts;
mod record;
#[cfg(feature = "remote")]
mod remote;
mod sections;
mod soft;
mod summarizer;
mod transcript;
mod transcript_request;
mod work;

pub use attempts::Attempt;
pub use attempts::AttemptOutcome;
pub use attempts::AttemptsRecord;
pub use branch::BranchConfig;
pub use branch::abandoned_messages;
pub use branch::branch_message;
pub use branch::navigate_with_summary;
pub use branch::summarize_branch;
pub use cache_aligned::ConversationPrefix;
pub use candidates::Candidate;
pub use candidates::SoftSetup;
pub use candidates::soft_method;
pub use digest::DIGEST;
pub use digest::DigestMethod;
pub use files::output_failed;
pub use files::read_path;
pub use files::written_paths;
pub use handoff::HANDOFF;
pub use handoff::HandoffConfig;
pub use handoff::handoff_method;
pub use llm::LlmSummarizer;
pub use native_expansion::NativeReplay;
pub use record::HandoffRecord;
pub use record::NativeRecord;
pub use record::RemoteRecord;
pub use record::SoftRecord;
pub use record::native_replay;
pub use record::replayed_checkpoint;
#[cfg(feature = "remote")]
pub use remote::NativeRequest;
#[cfg(feature = "remote")]
pub use remote::REMOTE;
#[cfg(feature = "remote")]
pub use remote::RemoteConfig;
#[cfg(feature = "remote")]
pub use remote::RemoteKind;
#[cfg(feature = "remote")]
pub use remote::endpoint_summarizer;
#[cfg(feature = "remote")]
pub use remote::native_request;
#[cfg(feature = "remote")]
pub use remote::remote_method;
pub use soft::SOFT;
pub use soft::SoftConfig;
pub use soft::SoftMethod;
pub use summarizer::FnSummarizer;
pub use summarizer::Summarizer;
pub use summarizer::Summary;
pub use summarizer::SummaryFuture;
pub use summarizer::SummaryRequest;
pub use work::is_build_or_test;
pub use work::is_rule;
pub use work::plan_items;
pub use work::sentences;
