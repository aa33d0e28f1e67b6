//! abridge keeps long LLM agent sessions usable: an append-only session
//! log, a token meter, and compaction methods that replace old history with
//! something smaller without ever losing it.
//!
//! This crate is the composition room, where *when* and *with what* to
//! compact is decided, and the facade over the parts:
//!
//! - [`Settings`]: every knob with its documented default, from TOML or
//!   JSON, checked with errors that name the key and line.
//! - [`Harness`]: what an agent loop calls: `append`, `request`, `record`,
//!   `after_turn`, `mid_turn`, `tick` (idle, from the host's timer),
//!   `on_error`, `on_length_stop`, `compact`.
//! - [`Maintenance`]: the one state machine for every trigger: it walks the
//!   method order, plans afresh per attempt, requires real progress and
//!   stops after repeated failures.
//! - [`recall`]: the model's way back to what compaction hid: the `recall`
//!   tool ([`Harness::tools`], [`Harness::call_tool`]), its index and reads
//!   by reference.
//!
//! The parts are re-exported under short names.
//!
//! # Features
//!
//! With `default-features = false` this crate is the composition room
//! alone (Settings, Harness, Maintenance, recall, the model-free methods
//! and `soft` over any client) with no HTTP, TLS, async runtime, image or
//! importer dependency. Each feature below is on by default:
//!
//! - `providers`: the provider clients under [`llm`] (reqwest, rustls).
//! - `remote`: summary endpoints and provider-native compaction.
//! - `snapcompact`: [`snapcompact`], and drawing its frames into requests.
//! - `import`: [`import`], other agents' session files.
//! - `tokio`: speculative compaction on the host's tokio runtime.
//!
//! and `testing` (off) adds `abridge::testing`, a scripted client.
//!
//! # What needs a runtime
//!
//! Nothing but speculation. The model-backed methods' retry waits and
//! timeouts run on tokio's timer inside a tokio runtime (which must have
//! its timer enabled) and on a background timer thread under any other
//! executor (`futures::executor::block_on`, smol, a GUI loop). Speculation
//! spawns a tokio task: with no tokio runtime on the thread, or without
//! the `tokio` feature, it is off, and Maintenance says so once
//! ([`MaintenanceEvent::SpeculationUnavailable`]). docs/adopting.md walks
//! through a framework built on the minimal set.
//!
//! | module | crate | what it is |
//! |---|---|---|
//! | [`llm`] | abridge-llm, abridge-providers | messages, the `LlmClient` contract, the model catalog; the provider clients (feature `providers`) |
//! | [`session`] | abridge-session | the event log, the surface, branches, stores |
//! | [`import`] | abridge-import | other agents' session files (pi, Claude Code, Codex, SWE-agent, aider, OpenHands) to logs |
//! | [`meter`] | abridge-meter | tokenizers, message and image cost, the incremental meter |
//! | [`compact`] | abridge-compact | the seam: plan, begin/commit, method and service traits, invariants |
//! | [`basic`] | abridge-compact-basic | `digest`, `soft`, `remote`, `handoff`, branch summaries |
//! | [`prune`] | abridge-prune | `prune`, `mask`, `shake`, `trim` and the artifact store (for older `artifact://` references) |
//! | [`snapcompact`] | abridge-snapcompact | history printed onto PNG frames for vision models |
//!
//! # Example: an agent loop's side
//!
//! ```
//! use abridge::{Harness, PassStatus, Settings};
//! use abridge::llm::Message;
//! use abridge::session::Session;
//!
//! let settings = Settings::from_toml("method_order = [\"prune\", \"digest\"]\n", "abridge.toml")?;
//! let harness = Harness::builder(Session::in_memory("demo"), "gpt-4o")
//!     .settings(settings)
//!     .window(24_000)
//!     .build()?;
//! # futures::executor::block_on(async {
//! for i in 0..60 {
//!     harness.append(Message::user(format!("step {i}: {}", "details ".repeat(60))))?;
//!     harness.append(Message::assistant(format!("did step {i}")))?;
//!     let pass = harness.after_turn().await?;
//!     assert_ne!(pass.status, PassStatus::Failed);
//!     assert!(harness.tokens() <= harness.limits().threshold);
//! }
//! # Ok::<(), abridge::HarnessError>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// An unused import in an example is a mistake a reader copies.
#![doc(test(attr(deny(unused_imports))))]

/// The README's agent loop, compiled and run as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

mod counting;
mod error;
mod harness;
mod maintenance;
mod methods;
pub mod model_compaction;
mod pass;
pub mod recall;
mod registry;
mod request;
mod settings;
mod speculation;

/// The attribute both extension traits ([`compact::CompactionMethod`],
/// [`llm::LlmClient`]) are implemented with, re-exported so an
/// implementation needs no dependency of its own: `#[abridge::async_trait]`.
pub use async_trait::async_trait;

pub use abridge_compact::host::MethodFailure;
pub use counting::CountCache;
pub use counting::CountEndpoint;
pub use counting::CountPrimer;
pub use counting::MAX_COUNT_CALLS_PER_PRIME;
pub use counting::PrimeReport;
pub use error::HarnessError;
pub use harness::Harness;
pub use harness::HarnessBuilder;
pub use harness::Recovery;
pub use harness::USER_PIN;
pub use maintenance::Maintenance;
pub use methods::BuildResult;
pub use methods::MethodContext;
pub use methods::MethodSources;
pub use methods::SummarizerModel;
pub use pass::MaintenanceEvent;
pub use pass::Observer;
pub use pass::Pass;
pub use pass::PassStatus;
pub use registry::KNOWN_METHODS;
pub use registry::MethodRegistry;
pub use registry::MethodSet;
pub use registry::RegistryError;
pub use registry::UnknownMethod;
pub use registry::build_methods;
pub use request::RequestTarget;
pub use request::build_request;
pub use request::build_request_with;
pub use request::expand_frames;
pub use request::hidden_pins;
pub use settings::DEFAULT_BREAKER_FAILURES;
pub use settings::DEFAULT_KEEP_RECENT_TOKENS;
pub use settings::DEFAULT_METHOD_ORDER;
pub use settings::DEFAULT_MIN_RECLAIM_PERCENT;
pub use settings::DEFAULT_RESERVE_PERCENT;
pub use settings::DEFAULT_TARGET_PERCENT;
pub use settings::Limits;
pub use settings::MIN_DEFAULT_RESERVE;
pub use settings::MIN_WINDOW;
pub use settings::Percent;
pub use settings::Settings;
pub use settings::SettingsError;
pub use settings::Threshold;

/// A scripted [`llm::LlmClient`] for a framework's own tests (feature
/// `testing`): answers, failures and hangs from a list, every request
/// kept.
#[cfg(feature = "testing")]
#[doc(inline)]
pub use abridge_llm::testing;

#[doc(inline)]
pub use abridge_compact as compact;
#[doc(inline)]
pub use abridge_compact_basic as basic;
#[cfg(feature = "import")]
#[doc(inline)]
pub use abridge_import as import;
/// The message vocabulary, the `LlmClient` contract and the model catalog
/// (abridge-llm), with the provider clients (abridge-providers, feature
/// `providers`) beside them, so one path names both.
pub mod llm {
    #[doc(inline)]
    pub use abridge_llm::*;
    #[cfg(feature = "providers")]
    #[doc(inline)]
    pub use abridge_providers::*;
}
#[doc(inline)]
pub use abridge_meter as meter;
#[doc(inline)]
pub use abridge_prune as prune;
#[doc(inline)]
pub use abridge_session as session;
#[cfg(feature = "snapcompact")]
#[doc(inline)]
pub use abridge_snapcompact as snapcompact;
