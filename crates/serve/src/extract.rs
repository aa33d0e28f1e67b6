//! A JSON body that loses nothing the client sent.
//!
//! serde drops fields a type does not know unless the type says
//! `deny_unknown_fields`, and abridge's message vocabulary does not (its
//! logs must read what a newer version wrote). So a message block with a
//! misspelt field was accepted and the field silently dropped, while an
//! unknown field at the top of a body was refused. [`Strict`] reads the
//! body, then compares it with what the typed value writes back: a field
//! the client set to something (not null, false, zero or empty) that does
//! not come back was not understood, and the request is refused with its
//! path. Nothing the client said is lost without a word.

use axum::Json;
use axum::extract::FromRequest;
use axum::extract::Request;
use axum::response::IntoResponse;
use axum::response::Response;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::ApiError;

/// A JSON body of type `T`, refused (400, naming the path) when a field
/// the client set would be dropped.
#[derive(Debug)]
pub(crate) struct Strict<T>(pub(crate) T);

impl<S, T> FromRequest<S> for Strict<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Serialize,
{
    type Rejection = Response;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let Json(sent) = Json::<Value>::from_request(request, state)
            .await
            .map_err(IntoResponse::into_response)?;
        let typed: T = serde_path_to_error::deserialize(&sent).map_err(|error| {
            let path = error.path().to_string();
            let text = if path == "." {
                error.inner().to_string()
            } else {
                format!("{path}: {}", error.inner())
            };
            ApiError::BadRequest(text).into_response()
        })?;
        let kept = serde_json::to_value(&typed)
            .map_err(|e| ApiError::Internal(format!("a body read back: {e}")).into_response())?;
        if let Some(path) = dropped(&sent, &kept, "") {
            return Err(ApiError::BadRequest(format!(
                "{path}: unknown field; nothing was written"
            ))
            .into_response());
        }
        Ok(Strict(typed))
    }
}

/// The path of the first field of `sent` that carries a value and is
/// missing from `kept`, if any. Arrays are compared item by item.
fn dropped(sent: &Value, kept: &Value, path: &str) -> Option<String> {
    match (sent, kept) {
        (Value::Object(sent), Value::Object(kept)) => sent.iter().find_map(|(key, value)| {
            let here = if path.is_empty() {
                key.clone()
            } else {
                format!("{path}.{key}")
            };
            match kept.get(key) {
                Some(back) => dropped(value, back, &here),
                None if is_empty(value) => None,
                None => Some(here),
            }
        }),
        (Value::Array(sent), Value::Array(kept)) => sent
            .iter()
            .zip(kept)
            .enumerate()
            .find_map(|(index, (value, back))| dropped(value, back, &format!("{path}[{index}]"))),
        _ => None,
    }
}

/// True for a value a type may leave out when writing itself back (its
/// default): null, false, zero, an empty string, array or object, or an
/// object of only such values.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.values().all(is_empty),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(sent: &Value) -> Option<String> {
        let messages: Vec<abridge_llm::Message> =
            serde_json::from_value(sent.clone()).expect("messages");
        let kept = serde_json::to_value(messages).expect("back");
        dropped(sent, &kept, "messages")
    }

    // Issue 28: unknown fields inside a message were dropped silently.
    #[test]
    fn a_field_the_vocabulary_does_not_know_is_named() {
        let sent = json!([
            {"role": "user", "content": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "ok", "cache_control": {"type": "ephemeral"}}
            ]}
        ]);
        assert_eq!(
            check(&sent).as_deref(),
            Some("messages[1].content[0].cache_control")
        );
        let sent = json!([{"role": "user", "content": [], "metadata": {"a": 1}}]);
        assert_eq!(check(&sent).as_deref(), Some("messages[0].metadata"));
    }

    #[test]
    fn defaults_written_out_are_not_unknown() {
        let sent = json!([
            {"role": "tool", "content": [{"type": "tool_result", "call_id": "c", "is_error": false,
              "content": [{"type": "text", "text": "x"}]}],
             "meta": {"origin": null, "useless": false, "usage": {"input": 1, "output": 2, "cache_read": 0}}}
        ]);
        assert_eq!(check(&sent), None);
    }
}
