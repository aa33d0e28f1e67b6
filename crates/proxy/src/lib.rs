//! abridge in front of a model endpoint, for agents nobody here wrote:
//! point an agent's base URL at the proxy and its long sessions are
//! logged and compacted in flight.
//!
//! - Speaks OpenAI Chat Completions (`/v1/chat/completions`), OpenAI
//!   Responses (`/v1/responses`) and Anthropic Messages (`/v1/messages`);
//!   every other path (`/v1/messages/count_tokens`, `/v1/models`, ...) is
//!   forwarded untouched.
//! - Knows a conversation without an id, by a rolling hash of its prefix
//!   (head, then each item): the agent resends its whole history each
//!   turn, and what follows the known prefix is appended to the session.
//! - Until abridge compacts, the agent's request goes upstream byte for
//!   byte. After, the history sent is the session's surface: the
//!   checkpoint (encoded by abridge-llm) and the agent's own items for
//!   everything kept, the same bytes every turn.
//! - Replies go back as they arrive, streamed or not, and are logged with
//!   the provider's usage. Keys pass through and are never stored or
//!   logged. The accept loop, body limit and error bodies are serve's.
//! - With a summarizer ([`ProxyConfig::sources`]), LLM checkpoints are
//!   written in the background after a reply and land on a later
//!   request; the agent never waits on a model call (`upkeep`).
//!
//! docs/proxy.md shows how to point Claude Code, Codex CLI, opencode and
//! aider at it.

mod conversation;
mod decode;
mod dialect;
mod encode;
mod error;
mod forward;
mod identity;
mod measure;
mod outline;
mod pins;
mod proxy;
mod registry;
mod reply;
mod upkeep;

pub use conversation::TYPE_PROXY_BRANCH;
pub use dialect::Dialect;
pub use error::ProxyError;
pub use measure::request_tokens;
pub use proxy::PROXY_TENANT;
pub use proxy::Proxy;
pub use proxy::ProxyConfig;
pub use proxy::SYNC_EVERY;
pub use proxy::Upstreams;
pub use proxy::check_listen;
pub use proxy::open_stores;
pub use upkeep::DEFAULT_SPECULATIVE_PERCENT;
