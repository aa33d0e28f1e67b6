//! The parts of a request body the proxy reads on every request (model,
//! head, history items), borrowed from the agent's bytes without
//! building a JSON tree.
//!
//! Why: below the threshold the proxy forwards the agent's bytes as they
//! came, so all it needs from a 400 kB body is where each history item
//! starts and ends. Parsing the whole body into a `Value` (and dropping
//! it) was a third of the proxy's time per request (`cargo xtask bench
//! proxy`, BENCHMARKS.md). Only the items after the known prefix are
//! parsed, to be logged; the whole tree is built only when a compacted
//! history has to be written into the body.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::dialect::Dialect;

/// The fields of the three dialects' bodies the proxy reads; every other
/// field is skipped unread. `messages` is split into items while the
/// body is scanned, so the history is read once: a body whose `messages`
/// is not an array is not one the proxy reads (it is forwarded as it
/// came). Responses' `input` may be a string, so it is split after.
#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(borrow, default)]
    model: Option<&'a RawValue>,
    #[serde(borrow, default)]
    system: Option<&'a RawValue>,
    #[serde(borrow, default)]
    instructions: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tools: Option<&'a RawValue>,
    #[serde(borrow, default)]
    messages: Option<Vec<&'a RawValue>>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
}

/// A request body as the proxy reads it.
#[derive(Debug)]
pub(crate) struct Outline<'a> {
    /// The body's `model`, `unknown` when it names none.
    pub(crate) model: String,
    /// The system prompt kept outside the history (`None` for Chat, whose
    /// system prompt is a history item).
    pub(crate) system: Option<&'a RawValue>,
    /// The tool definitions.
    pub(crate) tools: Option<&'a RawValue>,
    /// Each history item's text as the agent wrote it.
    pub(crate) items: Vec<Cow<'a, RawValue>>,
}

impl<'a> Outline<'a> {
    /// Reads `bytes` as a body of `dialect`; `None` when it is not JSON
    /// or has no history the proxy reads. A Responses `input` given as
    /// one string is one user item.
    pub(crate) fn read(dialect: Dialect, bytes: &'a [u8]) -> Option<Self> {
        let fields: Fields<'a> = serde_json::from_slice(bytes).ok()?;
        let (system, items) = match dialect {
            Dialect::Chat => (None, fields.messages?),
            Dialect::Anthropic => (fields.system, fields.messages?),
            Dialect::Responses => (fields.instructions, split_input(fields.input?)?),
        };
        let mut items: Vec<Cow<'a, RawValue>> = items.into_iter().map(Cow::Borrowed).collect();
        if items.is_empty()
            && dialect == Dialect::Responses
            && let Some(text) = fields
                .input
                .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
        {
            let item = serde_json::json!({"role": "user", "content": text});
            items.push(Cow::Owned(serde_json::value::to_raw_value(&item).ok()?));
        }
        let model = fields
            .model
            .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
            .unwrap_or_else(|| "unknown".to_string());
        Some(Outline {
            model,
            system,
            tools: fields.tools,
            items,
        })
    }

    /// The head as a JSON value, `[system, tools]`: what a new session's
    /// window is measured against, and what [`crate::identity`] hashes.
    pub(crate) fn head(&self) -> Value {
        let parse = |raw: Option<&RawValue>| {
            raw.and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok())
                .unwrap_or(Value::Null)
        };
        serde_json::json!([parse(self.system), parse(self.tools)])
    }

    /// The items from `from` on, parsed: what is new in this request.
    ///
    /// # Errors
    /// Never in practice (each item was read as JSON already); a parse
    /// error is passed on rather than hidden.
    pub(crate) fn parsed(&self, from: usize) -> Result<Vec<Value>, serde_json::Error> {
        self.items
            .get(from..)
            .unwrap_or_default()
            .iter()
            .map(|raw| serde_json::from_str(raw.get()))
            .collect()
    }
}

/// Responses' `input` as items: an array's items; a string is read by
/// the caller as one user item (here: none).
fn split_input(input: &RawValue) -> Option<Vec<&RawValue>> {
    if input.get().starts_with('"') {
        return Some(Vec::new());
    }
    serde_json::from_str(input.get()).ok()
}

#[cfg(test)]
mod tests;
