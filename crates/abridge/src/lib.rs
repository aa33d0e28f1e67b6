//! abridge keeps long LLM agent sessions usable: an append-only session
//! log, a token meter, and compaction methods that replace old history with
//! something smaller without ever losing it.
//!
//! This crate is the facade: it re-exports the parts under short names, so
//! an agent framework can depend on one crate. Depend on the parts directly
//! to keep your build small (the vocabulary alone costs only serde).
//!
//! | module | crate | what it is |
//! |---|---|---|
//! | [`llm`] | abridge-llm | messages, the `LlmClient` contract, provider clients, the model catalog |
//! | [`session`] | abridge-session | the event log, the surface, branches, stores, importers |
//! | [`meter`] | abridge-meter | tokenizers, message and image cost, the incremental meter |
//! | [`compact`] | abridge-compact | the seam: plan, begin/commit, method and service traits, invariants |
//! | [`basic`] | abridge-compact-basic | `digest`, `soft`, `remote`, `handoff`, branch summaries |
//! | [`prune`] | abridge-prune | `prune`, `shake`, `trim` and the artifact store |
//! | [`snapcompact`] | abridge-snapcompact | history printed onto PNG frames for vision models |
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use abridge::compact::{compact_session, CompactionMethod, Policy, Trigger};
//! use abridge::llm::Message;
//! use abridge::session::Session;
//!
//! let mut session = Session::in_memory("demo");
//! for i in 0..40 {
//!     session.append_message(Message::user(format!("step {i}: {}", "details ".repeat(60))))?;
//!     session.append_message(Message::assistant(format!("did step {i}")))?;
//! }
//! let methods: Vec<Arc<dyn CompactionMethod>> = vec![Arc::new(abridge::basic::DigestMethod)];
//! let policy = Policy::default().with_keep_recent_tokens(500);
//! let outcome = futures::executor::block_on(compact_session(&mut session, &methods, &policy, Trigger::Manual))?;
//! assert!(outcome.tokens_after < outcome.tokens_before);
//! assert_eq!(session.events().len(), 80 + 4); // originals kept, compaction appended
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[doc(inline)]
pub use abridge_compact as compact;
#[doc(inline)]
pub use abridge_compact_basic as basic;
#[doc(inline)]
pub use abridge_llm as llm;
#[doc(inline)]
pub use abridge_meter as meter;
#[doc(inline)]
pub use abridge_prune as prune;
#[doc(inline)]
pub use abridge_session as session;
#[doc(inline)]
pub use abridge_snapcompact as snapcompact;
