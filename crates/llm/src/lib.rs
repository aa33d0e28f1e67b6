//! The language abridge speaks: messages, usage, and the contract of a model
//! endpoint.
//!
//! # Overview
//!
//! - [`Message`] and [`Block`]: the vocabulary every other crate stores,
//!   measures and sends. It carries no HTTP type, so depending on it costs
//!   only serde.
//! - [`Usage`] and [`StopReason`]: what a provider reports about a call.
//! - [`thinking_readable_by`] and [`same_model`]: which reasoning may be
//!   sent back to which model (a signature is bound to its model).
//! - [`LlmClient`]: one call to a model, whole or streamed, with errors
//!   ([`LlmError`]) classified by what the caller does next.
//! - The provider clients (OpenAI Chat, OpenAI Responses, Anthropic) live
//!   in their own crate, `abridge-providers`, so the vocabulary every
//!   crate builds on does not rebuild when a decoder changes.
//! - Feature `retry`: `RetryingClient` (backoff,
//!   Retry-After, per-call timeout, early give-up) around any
//!   `Arc<dyn LlmClient>`, on any executor: under tokio its waits use
//!   tokio's clock (feature `tokio`), elsewhere a background timer thread.
//!   Trying a second provider when the first fails
//!   is the summarizer's business (abridge-compact-basic's candidates),
//!   which can also move on from an unusable answer.
//! - `testing` (feature `testing`): a scripted `LlmClient` for tests.
//!
//! # Example
//!
//! ```
//! use abridge_llm::{Message, Role};
//! let message = Message::user("fix the failing test");
//! let wire = serde_json::to_string(&message)?;
//! assert_eq!(wire, r#"{"role":"user","content":[{"type":"text","text":"fix the failing test"}]}"#);
//! let back: Message = serde_json::from_str(&wire)?;
//! assert_eq!(back.role, Role::User);
//! # Ok::<(), serde_json::Error>(())
//! ```

mod catalog;
mod client;
mod continuation;
mod error;
mod image;
mod message;
mod replay;
#[cfg(feature = "retry")]
mod retry;
#[cfg(feature = "testing")]
pub mod testing;
#[cfg(feature = "retry")]
mod timer;
mod usage;

pub use catalog::Catalog;
pub use catalog::ImageBilling;
pub use catalog::ImageLimits;
pub use catalog::Lookup;
pub use catalog::Match;
pub use catalog::ModelEntry;
pub use catalog::TokenizerFamily;
pub use client::LlmClient;
pub use client::Purpose;
pub use client::Request;
pub use client::Response;
pub use client::ResponseStream;
pub use client::StreamEvent;
pub use client::ToolChoice;
pub use client::ToolSpec;
pub use continuation::CONTINUATIONS;
pub use continuation::Continuation;
pub use continuation::continuation;
pub use continuation::continued_summary;
pub use error::LlmError;
pub use image::DEFAULT_MAX_IMAGE_PIXELS;
pub use image::ImageTooLarge;
pub use image::check_image_pixels;
pub use image::png_header_base64;
pub use image::sniff_size;
pub use message::Block;
pub use message::ImageSource;
pub use message::Message;
pub use message::Meta;
pub use message::Origin;
pub use message::Role;
pub use message::SharedMessage;
pub use replay::ThinkingReader;
pub use replay::is_thinking;
pub use replay::keep_readable_thinking;
pub use replay::same_model;
pub use replay::thinking_readable_by;
pub use usage::StopReason;
pub use usage::Usage;

#[cfg(feature = "retry")]
pub use retry::RetryEvent;
#[cfg(feature = "retry")]
pub use retry::RetryObserver;
#[cfg(feature = "retry")]
pub use retry::RetryPolicy;
#[cfg(feature = "retry")]
pub use retry::RetryingClient;
