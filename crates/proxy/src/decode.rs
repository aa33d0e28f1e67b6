//! The agent's history items, read into abridge messages for the log and
//! the meter. Reading is lenient: a part this proxy does not know keeps
//! its JSON as text, so its size still counts and nothing is dropped.
//! What goes upstream is never built from these messages while the
//! item is on the surface: the agent's own item is sent instead.

use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Role;
use serde_json::Value;

use crate::dialect::Dialect;

/// The messages one history item stands for, in order; never empty.
pub(crate) fn item_messages(dialect: Dialect, item: &Value) -> Vec<Message> {
    let mut out = match dialect {
        Dialect::Chat => chat_item(item),
        Dialect::Anthropic => anthropic_item(item),
        Dialect::Responses => responses_item(item),
    };
    if out.is_empty() {
        out.push(plain(role_of(item), vec![Block::text("")]));
    }
    out
}

fn role_of(item: &Value) -> Role {
    match item.get("role").and_then(Value::as_str) {
        Some("system") => Role::System,
        Some("developer") => Role::Developer,
        Some("assistant") => Role::Assistant,
        Some("tool") => Role::Tool,
        _ => Role::User,
    }
}

fn plain(role: Role, content: Vec<Block>) -> Message {
    Message {
        role,
        content,
        meta: Meta::default(),
    }
}

fn tool_result(call_id: &str, content: Vec<Block>, is_error: bool) -> Message {
    plain(
        Role::Tool,
        vec![Block::ToolResult {
            call_id: call_id.to_string(),
            content,
            is_error,
        }],
    )
}

/// A string's text, a part list's blocks, anything else as JSON text.
fn content_blocks(content: Option<&Value>) -> Vec<Block> {
    match content {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(text)) => vec![Block::text(text.clone())],
        Some(Value::Array(parts)) => parts.iter().filter_map(part_block).collect(),
        Some(other) => vec![Block::text(other.to_string())],
    }
}

/// One content part of any dialect: text, an image, or its JSON as text.
fn part_block(part: &Value) -> Option<Block> {
    if let Some(text) = part.as_str() {
        return Some(Block::text(text));
    }
    let kind = part.get("type").and_then(Value::as_str).unwrap_or_default();
    match kind {
        "text" | "input_text" | "output_text" => {
            let text = part.get("text").and_then(Value::as_str).unwrap_or_default();
            Some(Block::text(text))
        }
        "image_url" | "input_image" | "image" => Some(image_block(part)),
        _ => Some(Block::text(part.to_string())),
    }
}

fn image_block(part: &Value) -> Block {
    let url = part
        .get("image_url")
        .and_then(|u| u.get("url").or(Some(u)))
        .and_then(Value::as_str);
    let source = part.get("source");
    let source = match (url, source) {
        (Some(url), _) => ImageSource::Url {
            url: url.to_string(),
        },
        (None, Some(source)) if source.get("type").and_then(Value::as_str) == Some("base64") => {
            ImageSource::Base64 {
                media_type: str_field(source, "media_type").to_string(),
                data: str_field(source, "data").to_string(),
            }
        }
        (None, Some(source)) => ImageSource::Url {
            url: str_field(source, "url").to_string(),
        },
        (None, None) => ImageSource::Url { url: String::new() },
    };
    Block::Image {
        source,
        width: None,
        height: None,
    }
}

fn str_field<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// Arguments sent as a JSON string (OpenAI) are parsed when they parse.
fn arguments(raw: Option<&Value>) -> Value {
    match raw {
        Some(Value::String(text)) => {
            serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
        }
        Some(other) => other.clone(),
        None => Value::Object(serde_json::Map::new()),
    }
}

fn chat_item(item: &Value) -> Vec<Message> {
    let role = role_of(item);
    let mut blocks = content_blocks(item.get("content"));
    if role == Role::Tool {
        let call_id = str_field(item, "tool_call_id");
        return vec![tool_result(call_id, blocks, false)];
    }
    for call in item
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let function = call.get("function").unwrap_or(&Value::Null);
        blocks.push(Block::ToolCall {
            id: str_field(call, "id").to_string(),
            name: str_field(function, "name").to_string(),
            arguments: arguments(function.get("arguments")),
        });
    }
    vec![plain(role, blocks)]
}

/// An Anthropic message: each `tool_result` block becomes its own tool
/// message (abridge's tool message answers one call); the blocks between
/// them stay together in their role's message.
fn anthropic_item(item: &Value) -> Vec<Message> {
    let role = role_of(item);
    let parts = match item.get("content") {
        Some(Value::Array(parts)) => parts.clone(),
        other => return vec![plain(role, content_blocks(other))],
    };
    let mut out = Vec::new();
    let mut pending = Vec::new();
    for part in &parts {
        let kind = part.get("type").and_then(Value::as_str).unwrap_or_default();
        let block = match kind {
            "tool_result" => {
                if !pending.is_empty() {
                    out.push(plain(role, std::mem::take(&mut pending)));
                }
                let is_error = part.get("is_error").and_then(Value::as_bool) == Some(true);
                let content = content_blocks(part.get("content"));
                out.push(tool_result(
                    str_field(part, "tool_use_id"),
                    content,
                    is_error,
                ));
                continue;
            }
            "tool_use" | "server_tool_use" => Block::ToolCall {
                id: str_field(part, "id").to_string(),
                name: str_field(part, "name").to_string(),
                arguments: part.get("input").cloned().unwrap_or(Value::Null),
            },
            "thinking" => Block::Thinking {
                thinking: str_field(part, "thinking").to_string(),
                signature: part
                    .get("signature")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            },
            "redacted_thinking" => Block::RedactedThinking {
                data: str_field(part, "data").to_string(),
            },
            _ => match part_block(part) {
                Some(block) => block,
                None => continue,
            },
        };
        pending.push(block);
    }
    if !pending.is_empty() || out.is_empty() {
        out.push(plain(role, pending));
    }
    out
}

fn responses_item(item: &Value) -> Vec<Message> {
    match item.get("type").and_then(Value::as_str) {
        Some("function_call" | "custom_tool_call") => vec![plain(
            Role::Assistant,
            vec![Block::ToolCall {
                id: str_field(item, "call_id").to_string(),
                name: str_field(item, "name").to_string(),
                arguments: arguments(item.get("arguments").or_else(|| item.get("input"))),
            }],
        )],
        Some("function_call_output" | "custom_tool_call_output") => {
            let content = content_blocks(item.get("output"));
            vec![tool_result(str_field(item, "call_id"), content, false)]
        }
        Some("message") | None => vec![plain(role_of(item), content_blocks(item.get("content")))],
        Some(_) => vec![plain(
            Role::Assistant,
            vec![Block::Native {
                provider: Dialect::Responses.provider().to_string(),
                item: item.clone(),
            }],
        )],
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn anthropic_tool_results_become_one_tool_message_each() {
        let item = json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": "one"},
            {"type": "tool_result", "tool_use_id": "b", "content": [{"type": "text", "text": "two"}], "is_error": true},
            {"type": "text", "text": "and go on"}
        ]});
        let messages = item_messages(Dialect::Anthropic, &item);
        assert_eq!(messages.len(), 3);
        assert_eq!(
            messages[0],
            tool_result("a", vec![Block::text("one")], false)
        );
        assert_eq!(
            messages[1],
            tool_result("b", vec![Block::text("two")], true)
        );
        assert_eq!(messages[2], Message::user("and go on"));
    }

    #[test]
    fn chat_tool_calls_keep_their_parsed_arguments() {
        let item = json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a.rs\"}"}}
        ]});
        let messages = item_messages(Dialect::Chat, &item);
        assert_eq!(
            messages,
            vec![Message::tool_call("c1", "read", json!({"path": "a.rs"}))]
        );
    }

    #[test]
    fn an_empty_item_still_stands_for_one_message() {
        let messages = item_messages(Dialect::Anthropic, &json!({"role": "user", "content": []}));
        assert_eq!(messages.len(), 1);
    }
}
