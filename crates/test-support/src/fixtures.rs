//! Provider answers in their documented shapes, for wire tests that must
//! agree on one fixture.

use serde_json::Value;
use serde_json::json;

/// The opaque compaction item in [`responses_compact_answer`].
pub const COMPACTION_OPAQUE: &str = "gAAAA-opaque-compaction";

/// An answer of OpenAI's `POST /responses/compact`: the user message it
/// kept plus one opaque `compaction` item, with 5,000 input tokens of
/// which 4,000 were cached, and 300 output.
pub fn responses_compact_answer() -> Value {
    json!({
        "id": "resp_cmp_1",
        "object": "response.compaction",
        "model": "gpt-5-codex",
        "output": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Make the parser accept trailing commas."}]},
            {"type": "compaction", "id": "cmp_1", "encrypted_content": COMPACTION_OPAQUE},
        ],
        "usage": {"input_tokens": 5000, "input_tokens_details": {"cached_tokens": 4000}, "output_tokens": 300},
    })
}
