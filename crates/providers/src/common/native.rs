//! What every provider's native compaction answers, and the call each
//! one makes: a body the provider's encoder prepared, posted once, read
//! into the opaque items that a later request to the same provider
//! replays.

use std::fmt;

use abridge_llm::LlmError;
use abridge_llm::Usage;
use async_trait::async_trait;
use serde_json::Value;

use super::config::ApiKey;
use super::config::ProviderConfig;

/// Output item type of OpenAI's opaque compaction, and content block type
/// of Anthropic's compaction.
pub const COMPACTION_ITEM: &str = "compaction";

/// What a provider's native compaction returned.
#[derive(Debug, Clone, PartialEq)]
pub struct NativeCompaction {
    /// A readable summary, when the provider writes one (Anthropic does;
    /// OpenAI's output is opaque).
    pub text: Option<String>,
    /// The answer's `output` items, in order, verbatim.
    pub output: Vec<Value>,
    /// What the call cost.
    pub usage: Usage,
    /// The model that answered.
    pub model: String,
}

/// What a provider answered to a native compaction request.
#[derive(Debug, Clone, PartialEq)]
pub enum NativeAnswer {
    /// The compaction, with what it cost.
    Compacted(NativeCompaction),
    /// A success answer (billed) without a usable compaction.
    Missing {
        /// What the answer lacks.
        reason: String,
        /// What the call cost.
        usage: Usage,
        /// The model that answered.
        model: String,
    },
}

/// A provider's native compaction endpoint: posts a prepared body and
/// reads the answer into a [`NativeCompaction`].
///
/// Implementors send exactly one request per `post` (retries are the
/// caller's) and report a billed answer without a compaction as
/// [`NativeAnswer::Missing`], never as an error, so nobody pays twice.
#[async_trait]
pub trait NativeCompactor: Send + Sync + fmt::Debug {
    /// Provider name for errors, attempts and the stored item's provider.
    fn name(&self) -> &str;
    /// The address posted to.
    fn url(&self) -> &str;
    /// The endpoint and credentials posted with ([`Http::account`]): the
    /// output is replayed only to a client of the same account.
    ///
    /// [`Http::account`]: crate::Http::account
    fn account(&self) -> &str;
    /// The model asked.
    fn model(&self) -> &str;
    /// Posts `body` and reads the answer.
    async fn post(&self, body: &Value) -> Result<NativeAnswer, LlmError>;
}

/// The configuration of a compaction endpoint at `base` (without the
/// endpoint path) with the caller's key and extra headers.
pub(crate) fn remote_config(
    base: &str,
    key: Option<ApiKey>,
    headers: &[(String, String)],
) -> ProviderConfig {
    let mut config = ProviderConfig::new(base);
    config.api_key = key;
    config.headers = headers.to_vec();
    config
}
