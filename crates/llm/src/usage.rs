//! Token usage and stop reasons as providers report them.

use serde::Deserialize;
use serde::Serialize;

/// Tokens a provider billed for one call.
///
/// The buckets are disjoint: `input` excludes cached tokens, and reasoning
/// tokens are already inside `output`. The prompt's full size is therefore
/// `input + cache_read + cache_write`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens read neither from nor into the cache.
    #[serde(default)]
    pub input: u64,
    /// Generated tokens, reasoning included.
    #[serde(default)]
    pub output: u64,
    /// Prompt tokens served from the provider's cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_read: u64,
    /// Prompt tokens written into the provider's cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

impl Usage {
    /// Everything the prompt cost: uncached input plus both cache buckets.
    pub fn prompt_tokens(&self) -> u64 {
        self.input + self.cache_read + self.cache_write
    }

    /// Prompt plus output: the context the conversation occupied after the
    /// call.
    pub fn total(&self) -> u64 {
        self.prompt_tokens() + self.output
    }

    /// True when the provider reported nothing, which callers treat as "no
    /// report" rather than "empty context".
    pub fn is_zero(&self) -> bool {
        self.total() == 0
    }

    /// Adds another call's usage, bucket by bucket.
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
    }
}

/// Why the model stopped writing.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// It finished its turn.
    EndTurn,
    /// It hit the output limit: the text is cut.
    MaxTokens,
    /// It asked for tools.
    ToolUse,
    /// A stop sequence matched.
    StopSequence,
    /// It refused or was filtered.
    Refusal,
    /// The turn was aborted or failed.
    Error,
    /// A reason this vocabulary does not name, kept as the provider said it.
    #[serde(untagged)]
    Other(String),
}
