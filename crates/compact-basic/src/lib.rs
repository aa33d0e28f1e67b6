//! The basic compaction backend: checkpoints written by a model (`soft`)
//! or from the history itself (`digest`), handoff documents, remote
//! summarizers and branch summaries. When to compact, and which method to
//! try next, is decided by the `abridge` crate's Maintenance.
//!
//! Everything here plugs into the seam in [`abridge_compact`]: the methods
//! implement [`CompactionMethod`](abridge_compact::CompactionMethod), the
//! LLM summarizer implements [`Summarizer`](abridge_compact::Summarizer),
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

mod branch;
mod cache_aligned;
mod candidates;
mod digest;
mod files;
mod handoff;
mod llm;
mod prompts;
mod record;
#[cfg(feature = "remote")]
mod remote;
mod soft;
mod transcript;

pub use branch::BranchConfig;
pub use branch::abandoned_messages;
pub use branch::branch_message;
pub use branch::navigate_with_summary;
pub use branch::summarize_branch;
pub use cache_aligned::AlignedPrefix;
pub use cache_aligned::CACHE_ALIGNED_NOTICE;
pub use cache_aligned::ConversationPrefix;
pub use cache_aligned::SUMMARIZE_UPDATE_ALIGNED;
pub use cache_aligned::build_cache_aligned_request;
pub use candidates::AttemptLog;
pub use candidates::CandidateSoftMethod;
pub use candidates::CandidateSummarizer;
pub use candidates::SoftSetup;
pub use candidates::SummarizerCandidates;
pub use candidates::soft_method;
pub use digest::COMMANDS_LISTED;
pub use digest::CommandRecord;
pub use digest::DIGEST;
pub use digest::DigestMethod;
pub use digest::DigestState;
pub use digest::FAILURES_LISTED;
pub use digest::PROGRESS_CHARS;
pub use digest::REQUEST_CHARS;
pub use digest::REQUESTS_HEAD;
pub use digest::REQUESTS_TAIL;
pub use digest::SUBSTANTIAL_CHARS;
pub use digest::output_failed;
pub use files::MAX_FILES_LISTED;
pub use files::clean_path;
pub use files::collect_file_ops;
pub use files::command_text;
pub use files::patch_files;
pub use files::render_files;
pub use handoff::HANDOFF;
pub use handoff::HANDOFF_PROMPT;
pub use handoff::HandoffConfig;
pub use handoff::HandoffMethod;
pub use handoff::build_handoff_request;
pub use handoff::handoff_method;
pub use llm::LlmSummarizer;
pub use llm::RequestMode;
pub use llm::build_summary_request;
pub use llm::split_short;
pub use prompts::BRANCH_OPENING;
pub use prompts::BRANCH_SUMMARY;
pub use prompts::SHORT_HEADING;
pub use prompts::SUMMARIZE_INITIAL;
pub use prompts::SUMMARIZE_SYSTEM;
pub use prompts::SUMMARIZE_TURN_PREFIX;
pub use prompts::SUMMARIZE_UPDATE;
pub use prompts::TURN_PREFIX_HEADING;
pub use record::Attempt;
pub use record::AttemptOutcome;
pub use record::AttemptsRecord;
pub use record::HandoffRecord;
pub use record::NativeRecord;
pub use record::RemoteRecord;
pub use record::SoftRecord;
pub use record::native_replay;
#[cfg(feature = "remote")]
pub use remote::{
    ANTHROPIC_COMPACTION_BETA, ANTHROPIC_COMPACTION_EDIT, ANTHROPIC_MIN_TRIGGER, AnthropicCompact,
    COMPACTION_ITEM, NativeCompaction, REMOTE, RESPONSES_COMPACT_PATH, RemoteConfig, RemoteKind,
    RemoteMethod, ResponsesCompact, SUMMARY_ENDPOINT, SummaryEndpoint, endpoint_summarizer,
    remote_method,
};
pub use soft::SOFT;
pub use soft::SoftConfig;
pub use soft::SoftMethod;
pub use transcript::TOOL_ARGUMENT_CHARS;
pub use transcript::TOOL_RESULT_CHARS;
pub use transcript::render_transcript;

/// See [`CHECKPOINT_OPENING`].
pub use abridge_compact::CHECKPOINT_CLOSING;
/// The checkpoint framing, re-exported from the seam: every committed
/// checkpoint opens with this.
pub use abridge_compact::CHECKPOINT_OPENING;
