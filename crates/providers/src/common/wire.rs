//! Small pieces every provider's wire format needs: borrowed views of our
//! blocks that serialize straight to the JSON a provider reads, and the one
//! place a typed body becomes bytes.
//!
//! Encoders build `#[derive(Serialize)]` structs that borrow from the
//! [`Request`] and write them once into a buffer sized up front; nothing on
//! that path builds a `serde_json::Value`. Values the caller already holds
//! as JSON (tool schemas, tool arguments, native items) are serialized in
//! place by reference.

use std::borrow::Cow;
use std::fmt;

use serde::Serialize;
use serde::Serializer;
use serde_json::Value;

use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_llm::LlmError;
use abridge_llm::Request;

/// Sent in place of an image whose bytes are still in a blob file: stores
/// resolve blobs when they load, so this shows a caller skipped that step,
/// without failing the whole call.
pub const IMAGE_NOT_LOADED: &str = "[image not loaded]";

/// An image as a URL (`data:` for inline bytes, the address for URLs),
/// written into the JSON string without an intermediate copy; `None` for an
/// unresolved blob.
pub(crate) fn image_url(source: &ImageSource) -> Option<ImageUrl<'_>> {
    match source {
        ImageSource::Base64 { media_type, data } => Some(ImageUrl::Data { media_type, data }),
        ImageSource::Url { url } => Some(ImageUrl::Address(url)),
        ImageSource::Blob { .. } => None,
    }
}

/// An image's URL as one JSON string.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ImageUrl<'a> {
    /// `data:{media_type};base64,{data}`.
    Data {
        /// IANA media type.
        media_type: &'a str,
        /// Base64 text.
        data: &'a str,
    },
    /// A URL the provider fetches.
    Address(&'a str),
}

impl fmt::Display for ImageUrl<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ImageUrl::Data { media_type, data } => write!(f, "data:{media_type};base64,{data}"),
            ImageUrl::Address(url) => f.write_str(url),
        }
    }
}

impl Serialize for ImageUrl<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ImageUrl::Address(url) => serializer.serialize_str(url),
            data => serializer.collect_str(data),
        }
    }
}

/// The text blocks of `blocks` joined by newlines (empty blocks before the
/// first non-empty one add nothing); borrowed when one block carries it all.
pub(crate) fn joined_text(blocks: &[Block]) -> Cow<'_, str> {
    let mut texts = blocks
        .iter()
        .filter_map(Block::as_text)
        .skip_while(|text| text.is_empty());
    let Some(first) = texts.next() else {
        return Cow::Borrowed("");
    };
    let Some(second) = texts.next() else {
        return Cow::Borrowed(first);
    };
    let mut out = String::with_capacity(first.len() + second.len() + 1);
    out.push_str(first);
    out.push('\n');
    out.push_str(second);
    for text in texts {
        out.push('\n');
        out.push_str(text);
    }
    Cow::Owned(out)
}

/// A tool's argument schema; a missing (null) schema is sent as an empty
/// object schema, which every provider accepts.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schema<'a>(pub(crate) &'a Value);

#[derive(Serialize)]
struct EmptySchema {
    #[serde(rename = "type")]
    kind: &'static str,
    properties: EmptyObject,
}

#[derive(Serialize)]
struct EmptyObject {}

impl Serialize for Schema<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0.is_null() {
            EmptySchema {
                kind: "object",
                properties: EmptyObject {},
            }
            .serialize(serializer)
        } else {
            self.0.serialize(serializer)
        }
    }
}

/// Tool arguments as the JSON text a dialect wants in a string field: a
/// string we kept because it was not JSON goes back verbatim, anything else
/// is written as compact JSON straight into the string.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ArgumentsText<'a>(pub(crate) &'a Value);

impl Serialize for ArgumentsText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::String(raw) => serializer.serialize_str(raw),
            other => serializer.collect_str(other),
        }
    }
}

/// `"ephemeral"`, the one cache-control type.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct Ephemeral {
    #[serde(rename = "type")]
    kind: &'static str,
}

/// `{"type":"ephemeral"}`.
pub(crate) const EPHEMERAL: Ephemeral = Ephemeral { kind: "ephemeral" };

/// The model to ask: the request's, else the client's default.
///
/// # Errors
/// `InvalidConfig` when neither names one.
pub(crate) fn model_for<'a>(
    provider: &str,
    request: &'a Request,
    default_model: Option<&'a str>,
) -> Result<&'a str, LlmError> {
    if !request.model.is_empty() {
        return Ok(&request.model);
    }
    default_model.ok_or_else(|| LlmError::InvalidConfig {
        provider: provider.to_string(),
        message: "the request names no model and the client has no default model".to_string(),
    })
}

fn serialize_error(provider: &str, error: &serde_json::Error) -> LlmError {
    LlmError::InvalidConfig {
        provider: provider.to_string(),
        message: format!("could not serialize the request body: {error}"),
    }
}

/// Serializes a typed body into a buffer of `capacity` bytes to start
/// with, with the caller's extra fields
/// merged over ours when there are any (the rare path goes through a JSON
/// value so a key the caller sets replaces ours instead of repeating it).
///
/// # Errors
/// `InvalidConfig` if serde cannot write it (only non-string map keys in a
/// caller's JSON can cause that).
pub(crate) fn encode<T: Serialize>(
    provider: &str,
    capacity: usize,
    body: &T,
    extra: &serde_json::Map<String, Value>,
) -> Result<Vec<u8>, LlmError> {
    if !extra.is_empty() {
        let value = to_value(provider, body, extra)?;
        return serde_json::to_vec(&value).map_err(|e| serialize_error(provider, &e));
    }
    let mut out = Vec::with_capacity(capacity);
    serde_json::to_writer(&mut out, body).map_err(|e| serialize_error(provider, &e))?;
    Ok(out)
}

/// A typed body as a JSON value with the caller's extra fields merged over
/// ours: what `build_body` returns for tests and callers that edit it.
///
/// # Errors
/// As [`encode`].
pub(crate) fn to_value<T: Serialize>(
    provider: &str,
    body: &T,
    extra: &serde_json::Map<String, Value>,
) -> Result<Value, LlmError> {
    let mut value = serde_json::to_value(body).map_err(|e| serialize_error(provider, &e))?;
    if let Value::Object(map) = &mut value {
        for (key, field) in extra {
            map.insert(key.clone(), field.clone());
        }
    }
    Ok(value)
}

/// The image `detail` an OpenAI request for `model` asks for: the one the
/// catalog bills the model's images at ([`ImageBilling::openai_detail`]),
/// so the count and the bill agree.
///
/// [`ImageBilling::openai_detail`]: abridge_llm::ImageBilling::openai_detail
pub(crate) fn openai_image_detail(model: &str) -> &'static str {
    abridge_llm::Catalog::shared()
        .lookup(model)
        .entry
        .image_billing
        .openai_detail()
}

/// The `"type"` of a JSON object, if it has a string one.
pub(crate) fn type_of(item: &Value) -> Option<&str> {
    item.get("type").and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn joined_text_borrows_a_single_block() {
        let one = vec![Block::text("a")];
        assert!(matches!(joined_text(&one), Cow::Borrowed("a")));
        let two = vec![Block::text("a"), Block::text("b"), Block::text("c")];
        assert_eq!(joined_text(&two), "a\nb\nc");
        assert_eq!(joined_text(&[]), "");
        let gaps = vec![
            Block::text(""),
            Block::text("a"),
            Block::text(""),
            Block::text("b"),
        ];
        assert_eq!(joined_text(&gaps), "a\n\nb");
    }

    #[test]
    fn urls_schemas_and_arguments_write_what_the_value_path_wrote() {
        let data = ImageSource::Base64 {
            media_type: "image/png".into(),
            data: "AAAA".into(),
        };
        assert_eq!(
            serde_json::to_value(image_url(&data)).unwrap(),
            json!("data:image/png;base64,AAAA")
        );
        assert_eq!(
            serde_json::to_value(Schema(&Value::Null)).unwrap(),
            json!({"type": "object", "properties": {}})
        );
        let args = json!({"path": "a \"b\"\n"});
        assert_eq!(
            serde_json::to_value(ArgumentsText(&args)).unwrap(),
            json!(args.to_string())
        );
        assert_eq!(
            serde_json::to_value(ArgumentsText(&json!("not json"))).unwrap(),
            json!("not json")
        );
    }
}
