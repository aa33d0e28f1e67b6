//! What compact-basic's methods record about a compaction, as typed
//! detail sections (see [`abridge_compact::Details`]).
//!
//! Each section names its key and version once, here; the methods write
//! them and the readers (the next digest, native replay, reports) read
//! them back typed.

use abridge_compact::DetailSection;
use abridge_compact::Details;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

use crate::attempts::Attempt;

/// The `soft` method's record: which summarizer wrote it, how many model
/// calls, and how often the input window was halved after an overflow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SoftRecord {
    /// The summarizer's name ([`Summarizer::name`](abridge_compact::Summarizer::name)):
    /// with several configured (a chain, a per-session choice), which one
    /// wrote this checkpoint. Absent in records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarizer: Option<String>,
    /// Model calls made (windows folded plus the split-turn summary).
    pub calls: u32,
    /// Times the input window halved after an overflow.
    pub halvings: u32,
}

impl DetailSection for SoftRecord {
    const KEY: &'static str = "soft";
    const VERSION: u32 = 1;
}

/// The `remote` method's record: which remote it was, and when the local
/// method wrote the checkpoint instead, why.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RemoteRecord {
    /// The remote kind (`endpoint`, `chat_completions`, `responses_compact`,
    /// `anthropic_compact`).
    pub kind: String,
    /// The method that wrote the checkpoint's text, when not the remote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_by: Option<String>,
    /// Why the remote failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The remote's calls before it failed, with their cost.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempts: Vec<Attempt>,
}

impl DetailSection for RemoteRecord {
    const KEY: &'static str = "remote";
    const VERSION: u32 = 1;
}

/// A provider's own compaction output, replayed to that provider in place
/// of the checkpoint's text (see [`native_replay`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NativeRecord {
    /// The provider name the output belongs to.
    pub provider: String,
    /// Where it was produced.
    pub endpoint: String,
    /// The model that produced it.
    pub model: String,
    /// The provider's items, opaque to us.
    pub output: Value,
}

impl DetailSection for NativeRecord {
    const KEY: &'static str = "native";
    const VERSION: u32 = 1;
}

/// The `handoff` method's record: where the document was saved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandoffRecord {
    /// The file the handoff document is written to after commit.
    pub save_to: String,
}

impl DetailSection for HandoffRecord {
    const KEY: &'static str = "handoff";
    const VERSION: u32 = 1;
}

/// The opaque items to send instead of a checkpoint's text, when the
/// checkpoint was written by native compaction at `provider` and the next
/// request goes there too; `None` otherwise (every other provider gets the
/// text, and so does a record that does not read back).
pub fn native_replay(details: &Details, provider: &str) -> Option<Vec<Value>> {
    let native = match details.get::<NativeRecord>() {
        Ok(native) => native?,
        Err(error) => {
            tracing::warn!(%error, "native compaction record unreadable; sending the text");
            return None;
        }
    };
    match native.output {
        Value::Array(items) if native.provider == provider => Some(items),
        _ => None,
    }
}
