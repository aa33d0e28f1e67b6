//! The model response OpenHands records in an action's
//! `tool_call_metadata`: its id, its message and text, the arguments it
//! gave a call, and its usage in our buckets.

use abridge_llm::Usage;
use serde_json::Value;

/// The id of the model response that made an event's tool call; a call
/// whose response is not recorded stands alone.
pub(super) fn response_id(meta: &Value) -> String {
    meta.get("model_response")
        .and_then(|r| r.get("id"))
        .and_then(Value::as_str)
        .map_or_else(
            || {
                let call = meta.get("tool_call_id").and_then(Value::as_str);
                format!("call:{}", call.unwrap_or_default())
            },
            str::to_string,
        )
}

/// An event's `tool_call_metadata`, when it has one.
pub(super) fn metadata(event: &Value) -> Option<&Value> {
    event.get("tool_call_metadata").filter(|m| m.is_object())
}

/// The model response that made an action's tool call.
pub(super) fn response_of(event: &Value) -> Option<&Value> {
    metadata(event)?.get("model_response")
}

/// The message of a model response (`choices[0].message`).
fn response_message(response: &Value) -> Option<&Value> {
    response.get("choices")?.get(0)?.get("message")
}

/// What the model said in a response besides its calls.
pub(super) fn said(response: &Value) -> String {
    response_message(response)
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The arguments the response gave the call `id`: its JSON string parsed,
/// or kept as a string when it is not JSON.
pub(super) fn call_arguments(response: &Value, id: &str) -> Option<Value> {
    let calls = response_message(response)?.get("tool_calls")?.as_array()?;
    let call = calls
        .iter()
        .find(|c| c.get("id").and_then(Value::as_str) == Some(id))?;
    let arguments = call.get("function")?.get("arguments")?;
    Some(match arguments {
        Value::String(text) => {
            serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
        }
        other => other.clone(),
    })
}

/// A response's usage in our disjoint buckets. LiteLLM reports
/// `prompt_tokens` with cached and cache-written tokens inside it, and the
/// cached ones in `prompt_tokens_details.cached_tokens` (or Anthropic's
/// `cache_read_input_tokens`), the written ones in
/// `cache_creation_input_tokens`.
pub(super) fn usage_of(response: &Value) -> Option<Usage> {
    let usage = response.get("usage").filter(|u| u.is_object())?;
    let count = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let cache_read = count(
        usage
            .get("prompt_tokens_details")
            .and_then(|d| d.get("cached_tokens"))
            .or_else(|| usage.get("cache_read_input_tokens")),
    );
    let cache_write = count(usage.get("cache_creation_input_tokens"));
    let prompt = count(usage.get("prompt_tokens"));
    Some(Usage {
        input: prompt.saturating_sub(cache_read + cache_write),
        output: count(usage.get("completion_tokens")),
        cache_read,
        cache_write,
    })
}
