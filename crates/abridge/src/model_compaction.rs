//! `compact_context`: the model asks for a compaction itself.
//!
//! A model that knows it is about to start a new phase of work (or that
//! its context is full of output it no longer needs) can call this tool.
//! Nothing happens inside the turn: the request is kept, and the next
//! [`Harness::after_turn`](crate::Harness::after_turn) runs a manual
//! Maintenance pass with the model's focus as the checkpoint's
//! instructions, whatever the context's size. Compacting in the middle of
//! the turn would pull the history out from under the tool loop that is
//! still using it.

use std::sync::Mutex;
use std::sync::PoisonError;

use abridge_llm::ToolSpec;

/// The tool's name.
pub const TOOL_NAME: &str = "compact_context";

/// What the model is told the tool does.
pub const TOOL_DESCRIPTION: &str = include_str!("../prompts/compact_context_tool_description.txt");

/// What the tool answers when the request is taken.
pub const ACCEPTED: &str = include_str!("../prompts/compact_context_accepted.txt");

/// What the tool answers to a second request in the same turn.
pub const ALREADY: &str = include_str!("../prompts/compact_context_already.txt");

/// What the tool answers to arguments it cannot read.
pub const BAD_ARGUMENTS: &str = include_str!("../prompts/compact_context_bad_arguments.txt");

/// The tool as offered to a model.
pub fn tool_spec() -> ToolSpec {
    ToolSpec {
        name: TOOL_NAME.to_string(),
        description: TOOL_DESCRIPTION.to_string(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "focus": {
                    "type": "string",
                    "description": "What the summary must keep (a decision, a file, an open problem)."
                }
            },
            "additionalProperties": false
        }),
    }
}

/// A request the model made in the current turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Requested {
    /// The model's focus, if it gave one.
    pub focus: Option<String>,
}

/// The pending request, taken by the next `after_turn`.
#[derive(Debug, Default)]
pub(crate) struct Pending(Mutex<Option<Requested>>);

impl Pending {
    /// Answers one call with `arguments`, keeping the request.
    pub(crate) fn call(&self, arguments: &serde_json::Value) -> String {
        let focus = match arguments {
            serde_json::Value::Null => None,
            serde_json::Value::Object(fields) => match fields.get("focus") {
                None | Some(serde_json::Value::Null) => None,
                Some(serde_json::Value::String(text)) if text.trim().is_empty() => None,
                Some(serde_json::Value::String(text)) => Some(text.trim().to_string()),
                Some(_) => return BAD_ARGUMENTS.to_string(),
            },
            _ => return BAD_ARGUMENTS.to_string(),
        };
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let again = slot.is_some();
        *slot = Some(Requested { focus });
        if again { ALREADY } else { ACCEPTED }.to_string()
    }

    /// The request, if one is pending; it is cleared.
    pub(crate) fn take(&self) -> Option<Requested> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_request_is_kept_until_taken_and_bad_arguments_request_nothing() {
        let pending = Pending::default();
        assert_eq!(pending.call(&json!({"focus": 3})), BAD_ARGUMENTS);
        assert_eq!(pending.call(&json!("now")), BAD_ARGUMENTS);
        assert_eq!(pending.take(), None);
        assert_eq!(pending.call(&json!({})), ACCEPTED);
        assert_eq!(pending.call(&json!({"focus": " the parser fix "})), ALREADY);
        assert_eq!(
            pending.take(),
            Some(Requested {
                focus: Some("the parser fix".to_string())
            })
        );
        assert_eq!(pending.take(), None);
    }
}
