//! Small conversions every provider's wire format needs.

use serde_json::Value;
use serde_json::json;

use crate::client::Request;
use crate::error::LlmError;
use crate::message::Block;
use crate::message::ImageSource;

/// Sent in place of an image whose bytes are still in a blob file: stores
/// resolve blobs when they load, so this shows a caller skipped that step,
/// without failing the whole call.
pub const IMAGE_NOT_LOADED: &str = "[image not loaded]";

/// An image as a URL: `data:` for inline bytes, the address for URLs,
/// `None` for an unresolved blob.
pub(crate) fn image_url(source: &ImageSource) -> Option<String> {
    match source {
        ImageSource::Base64 { media_type, data } => {
            Some(format!("data:{media_type};base64,{data}"))
        }
        ImageSource::Url { url } => Some(url.clone()),
        ImageSource::Blob { .. } => None,
    }
}

/// The text blocks of `blocks` joined by newlines.
pub(crate) fn joined_text(blocks: &[Block]) -> String {
    let mut out = String::new();
    for text in blocks.iter().filter_map(Block::as_text) {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(text);
    }
    out
}

/// A tool's argument schema; a missing schema becomes an empty object
/// schema, which every provider accepts.
pub(crate) fn schema(parameters: &Value) -> Value {
    if parameters.is_null() {
        json!({"type": "object", "properties": {}})
    } else {
        parameters.clone()
    }
}

/// Merges the caller's extra body fields over ours.
pub(crate) fn merge_extra(body: &mut Value, extra: &serde_json::Map<String, Value>) {
    if let Value::Object(map) = body {
        for (key, value) in extra {
            map.insert(key.clone(), value.clone());
        }
    }
}

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

/// Serializes a body built as a JSON value.
///
/// # Errors
/// `InvalidConfig` if serde cannot write it (only non-string map keys can
/// cause that, which our builders never produce).
pub(crate) fn to_bytes(provider: &str, body: &Value) -> Result<Vec<u8>, LlmError> {
    serde_json::to_vec(body).map_err(|e| LlmError::InvalidConfig {
        provider: provider.to_string(),
        message: format!("could not serialize the request body: {e}"),
    })
}
