//! `remote`: a checkpoint written somewhere else, falling back to the
//! local summary when that fails (feature `remote`).
//!
//! Three kinds of remote, chosen by [`RemoteKind`]:
//!
//! - [`RemoteKind::Endpoint`]: a summary service. `POST URL` with
//!   `{"system_prompt", "prompt", "max_tokens"}`, answered by
//!   `{"summary"}` (optionally `"usage": {"input_tokens",
//!   "output_tokens"}` and `"model"`). It is driven like a model through
//!   [`SummaryEndpoint`], so windows, retries and validation are the
//!   `soft` method's.
//! - [`RemoteKind::ChatCompletions`]: any OpenAI-compatible
//!   `/chat/completions` URL, through abridge-providers' `OpenAiChatClient`
//!   and the `soft` method (cache-aligned when a prefix is given).
//! - [`RemoteKind::ResponsesCompact`]: OpenAI's `POST
//!   {base}/responses/compact` with `{"model", "input": [items]}`. The
//!   answer's `output` (the user messages it kept plus one opaque
//!   `{"type": "compaction", "encrypted_content"}` item) is kept in the
//!   checkpoint's `details.native`, to be replayed only to the same
//!   provider; the checkpoint's text, which every other provider gets, is
//!   the local summary.
//!
//! Whatever fails (HTTP errors after retries, malformed bodies, unusable
//! answers), the local method (`digest` unless configured) writes the
//! checkpoint instead, and `details` says what failed and what was used
//! (`remote_error`; for native compaction also `remote_attempts`, each
//! call with its cost). A native answer without a compaction was billed:
//! it is final, never retried, and its cost counts in the checkpoint's
//! usage.

mod config;
mod endpoint;
mod method;
mod native;

pub use config::REMOTE;
pub use config::RemoteConfig;
pub use config::RemoteKind;
pub use endpoint::endpoint_summarizer;
pub use method::NativeRequest;
pub use method::native_request;
pub use method::remote_method;
