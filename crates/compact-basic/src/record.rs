//! What compact-basic's methods record about a compaction, as typed
//! detail sections (see [`abridge_compact::Details`]).
//!
//! Each section names its key and version once, here; the methods write
//! them and the readers (the next digest, native replay, reports) read
//! them back typed.

use abridge_compact::DetailSection;
use abridge_compact::Details;
use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Origin;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

use crate::attempts::Attempt;

/// The `soft` method's record: which summarizer wrote it, how many model
/// calls, and how often the input window was halved after an overflow.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SoftRecord {
    /// The summarizer's name ([`Summarizer::name`](crate::summarizer::Summarizer::name)):
    /// with several configured (a chain, a per-session choice), which one
    /// wrote this checkpoint. Absent in records written before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarizer: Option<String>,
    /// Model calls made (windows folded plus the split-turn summary).
    pub calls: u32,
    /// Times the input window halved after an overflow.
    pub halvings: u32,
    /// The sections the model's summary lacked, filled from digest's
    /// model-free reading of the same span (see `prompts/summarize_initial.md`
    /// for the sections asked for). Empty when it held them all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filled: Vec<String>,
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
    /// The wire dialect the output belongs to
    /// ([`LlmClient::native_dialect`](abridge_llm::LlmClient::native_dialect)).
    pub provider: String,
    /// Where it was produced.
    pub endpoint: String,
    /// The endpoint and credentials that produced it
    /// ([`LlmClient::native_account`](abridge_llm::LlmClient::native_account)):
    /// encrypted output is readable only by that account and backend.
    /// Absent in records written before it was kept, which are never
    /// replayed (the text is sent instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<String>,
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
/// checkpoint was written by native compaction in `dialect` under
/// `account` and the next request goes to the same dialect and account;
/// `None` otherwise (every other provider, and another organization or
/// backend of the same provider, gets the text, and so does a record that
/// does not read back or names no account).
///
/// Of the output, the compaction item and the user and assistant messages
/// go back; developer and system messages, which repeat the instructions
/// the live request already carries (stale copies of them after a
/// change), and any other item are left out, as codex-rs does with the
/// same endpoint's output.
pub fn native_replay(details: &Details, dialect: &str, account: &str) -> Option<Vec<Value>> {
    let native = match details.get::<NativeRecord>() {
        Ok(native) => native?,
        Err(error) => {
            tracing::warn!(%error, "native compaction record unreadable; sending the text");
            return None;
        }
    };
    if native.provider != dialect || native.account.as_deref() != Some(account) {
        return None;
    }
    match native.output {
        Value::Array(items) => Some(items.into_iter().filter(replayable).collect()),
        _ => None,
    }
}

/// Whether an item of a native compaction's output goes back (see
/// [`native_replay`]).
fn replayable(item: &Value) -> bool {
    let field = |key: &str| item.get(key).and_then(Value::as_str);
    match field("type") {
        Some("compaction") => true,
        Some("message") => matches!(field("role"), Some("user" | "assistant")),
        _ => false,
    }
}

/// The checkpoint `message` as `dialect` at `account` should receive it:
/// its native compaction output (see [`native_replay`]) as
/// [`Block::Native`] items in place of its text, role and metadata kept;
/// `None` when the checkpoint has no output for them.
pub fn replayed_checkpoint(
    message: &Message,
    details: &Details,
    dialect: &str,
    account: &str,
) -> Option<Message> {
    if !matches!(message.meta.origin, Some(Origin::Checkpoint { .. })) {
        return None;
    }
    let items = native_replay(details, dialect, account)?;
    if items.is_empty() {
        return None;
    }
    let mut replayed = message.clone();
    replayed.content = items
        .into_iter()
        .map(|item| Block::Native {
            provider: dialect.to_string(),
            item,
        })
        .collect();
    Some(replayed)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn details(account: Option<&str>, output: Value) -> Details {
        Details::new()
            .with(&NativeRecord {
                provider: "openai-responses".into(),
                endpoint: "https://api.openai.com/v1/responses/compact".into(),
                account: account.map(str::to_string),
                model: "gpt-5".into(),
                output,
            })
            .unwrap()
    }

    /// Issue 29, item 10: the compact endpoint's output repeats the
    /// developer instructions the live request already carries; those
    /// copies (and any item that is not a message or the compaction) stay
    /// out, the user's messages and the compaction go back.
    #[test]
    fn replay_leaves_out_instruction_copies_from_compact_output() {
        let user = json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]});
        let compaction = json!({"type": "compaction", "id": "cmp_1", "encrypted_content": "zz"});
        let output = json!([
            {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "old instructions"}]},
            {"type": "message", "role": "system", "content": [{"type": "input_text", "text": "old system"}]},
            user,
            {"type": "reasoning", "id": "rs_9", "summary": []},
            compaction,
        ]);
        let details = details(Some("acct"), output);
        assert_eq!(
            native_replay(&details, "openai-responses", "acct"),
            Some(vec![user, compaction])
        );
    }

    /// Issue 29, item 7: a record written before the account was kept
    /// names none and is never replayed.
    #[test]
    fn a_record_without_an_account_is_not_replayed() {
        let details = details(
            None,
            json!([{"type": "compaction", "encrypted_content": "zz"}]),
        );
        assert_eq!(native_replay(&details, "openai-responses", "acct"), None);
    }
}
