//! The upstream's answer, read back into one assistant message for the
//! log while its bytes go to the agent unchanged: whole JSON bodies and
//! server-sent event streams of each dialect. Usage is the provider's,
//! split into abridge's disjoint buckets.

use std::collections::BTreeMap;

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_llm::StopReason;
use abridge_llm::Usage;
use serde_json::Value;

use crate::dialect::Dialect;

/// The reply in `body` (an event stream when `streamed`), or `None` when
/// it holds no assistant message (an error body, an empty stream).
pub(crate) fn reply_message(dialect: Dialect, streamed: bool, body: &[u8]) -> Option<Message> {
    let mut reply = if streamed {
        let events = sse_data(body);
        match dialect {
            Dialect::Chat => chat_stream(&events),
            Dialect::Anthropic => anthropic_stream(&events),
            Dialect::Responses => events
                .iter()
                .rev()
                .find(|e| e.get("type").and_then(Value::as_str) == Some("response.completed"))
                .and_then(|e| e.get("response"))
                .and_then(responses_whole),
        }
    } else {
        let value: Value = serde_json::from_slice(body).ok()?;
        match dialect {
            Dialect::Chat => chat_whole(&value),
            Dialect::Anthropic => anthropic_whole(&value),
            Dialect::Responses => responses_whole(&value),
        }
    }?;
    if reply.content.is_empty() {
        return None;
    }
    reply.meta.origin = Some(Origin::Model {
        provider: dialect.provider().to_string(),
        model: reply_model(dialect, streamed, body).unwrap_or_default(),
    });
    Some(reply)
}

/// The JSON of every `data:` line of an event stream (`[DONE]` and lines
/// that are not JSON are skipped).
fn sse_data(body: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(body)
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

fn reply_model(dialect: Dialect, streamed: bool, body: &[u8]) -> Option<String> {
    let first = if streamed {
        sse_data(body).into_iter().next()?
    } else {
        serde_json::from_slice(body).ok()?
    };
    let holder = match dialect {
        Dialect::Anthropic if streamed => first.get("message")?.clone(),
        Dialect::Responses if streamed => first.get("response")?.clone(),
        _ => first,
    };
    holder.get("model")?.as_str().map(str::to_string)
}

fn number(value: &Value, path: &[&str]) -> u64 {
    let mut at = value;
    for key in path {
        match at.get(key) {
            Some(next) => at = next,
            None => return 0,
        }
    }
    at.as_u64().unwrap_or(0)
}

fn assistant(content: Vec<Block>, usage: Usage, stop: Option<StopReason>) -> Message {
    Message {
        role: Role::Assistant,
        content,
        meta: Meta {
            usage: Some(usage),
            stop_reason: stop,
            ..Meta::default()
        },
    }
}

fn stop_reason(reason: Option<&str>) -> Option<StopReason> {
    Some(match reason? {
        "stop" | "end_turn" | "completed" => StopReason::EndTurn,
        "length" | "max_tokens" | "max_output_tokens" => StopReason::MaxTokens,
        "tool_calls" | "tool_use" | "function_call" => StopReason::ToolUse,
        "stop_sequence" => StopReason::StopSequence,
        "refusal" | "content_filter" => StopReason::Refusal,
        other => StopReason::Other(other.to_string()),
    })
}

fn arguments(raw: &str) -> Value {
    if raw.trim().is_empty() {
        return Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}

fn openai_usage(usage: &Value, input: &str, output: &str, details: &str) -> Usage {
    let cached = number(usage, &[details, "cached_tokens"]);
    Usage {
        input: number(usage, &[input]).saturating_sub(cached),
        output: number(usage, &[output]),
        cache_read: cached,
        cache_write: 0,
    }
}

fn chat_usage(usage: &Value) -> Usage {
    openai_usage(
        usage,
        "prompt_tokens",
        "completion_tokens",
        "prompt_tokens_details",
    )
}

fn anthropic_usage(usage: &Value, into: &mut Usage) {
    if let Some(n) = usage.get("input_tokens").and_then(Value::as_u64) {
        into.input = n;
    }
    if let Some(n) = usage.get("output_tokens").and_then(Value::as_u64) {
        into.output = n;
    }
    if let Some(n) = usage.get("cache_read_input_tokens").and_then(Value::as_u64) {
        into.cache_read = n;
    }
    if let Some(n) = usage
        .get("cache_creation_input_tokens")
        .and_then(Value::as_u64)
    {
        into.cache_write = n;
    }
}

fn chat_whole(value: &Value) -> Option<Message> {
    let choice = value.get("choices")?.get(0)?;
    let message = choice.get("message")?;
    let mut content = Vec::new();
    if let Some(text) = message.get("content").and_then(Value::as_str)
        && !text.is_empty()
    {
        content.push(Block::text(text));
    }
    for call in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let function = call.get("function").unwrap_or(&Value::Null);
        content.push(Block::ToolCall {
            id: text_of(call, "id"),
            name: text_of(function, "name"),
            arguments: arguments(
                function
                    .get("arguments")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            ),
        });
    }
    let usage = value.get("usage").map(chat_usage).unwrap_or_default();
    let stop = stop_reason(choice.get("finish_reason").and_then(Value::as_str));
    Some(assistant(content, usage, stop))
}

fn text_of(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// A tool call assembled from stream deltas.
#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

fn chat_stream(events: &[Value]) -> Option<Message> {
    let mut text = String::new();
    let mut calls: BTreeMap<u64, PartialCall> = BTreeMap::new();
    let mut usage = Usage::default();
    let mut stop = None;
    for event in events {
        if let Some(reported) = event.get("usage").filter(|u| u.is_object()) {
            usage = chat_usage(reported);
        }
        let Some(choice) = event.get("choices").and_then(|c| c.get(0)) else {
            continue;
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            stop = stop_reason(Some(reason));
        }
        let Some(delta) = choice.get("delta") else {
            continue;
        };
        if let Some(piece) = delta.get("content").and_then(Value::as_str) {
            text.push_str(piece);
        }
        for call in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
            let slot = calls.entry(index).or_default();
            if let Some(id) = call.get("id").and_then(Value::as_str) {
                slot.id = id.to_string();
            }
            let function = call.get("function").unwrap_or(&Value::Null);
            if let Some(name) = function.get("name").and_then(Value::as_str) {
                slot.name.push_str(name);
            }
            if let Some(piece) = function.get("arguments").and_then(Value::as_str) {
                slot.arguments.push_str(piece);
            }
        }
    }
    let mut content = Vec::new();
    if !text.is_empty() {
        content.push(Block::text(text));
    }
    content.extend(calls.into_values().map(|call| Block::ToolCall {
        id: call.id,
        name: call.name,
        arguments: arguments(&call.arguments),
    }));
    Some(assistant(content, usage, stop))
}

fn anthropic_block(block: &Value) -> Option<Block> {
    Some(match block.get("type").and_then(Value::as_str)? {
        "text" => Block::text(text_of(block, "text")),
        "tool_use" | "server_tool_use" => Block::ToolCall {
            id: text_of(block, "id"),
            name: text_of(block, "name"),
            arguments: block.get("input").cloned().unwrap_or(Value::Null),
        },
        "thinking" => Block::Thinking {
            thinking: text_of(block, "thinking"),
            signature: block
                .get("signature")
                .and_then(Value::as_str)
                .map(str::to_string),
        },
        "redacted_thinking" => Block::RedactedThinking {
            data: text_of(block, "data"),
        },
        _ => Block::Native {
            provider: Dialect::Anthropic.provider().to_string(),
            item: block.clone(),
        },
    })
}

fn anthropic_whole(value: &Value) -> Option<Message> {
    let blocks = value.get("content")?.as_array()?;
    let content = blocks.iter().filter_map(anthropic_block).collect();
    let mut usage = Usage::default();
    if let Some(reported) = value.get("usage") {
        anthropic_usage(reported, &mut usage);
    }
    let stop = stop_reason(value.get("stop_reason").and_then(Value::as_str));
    Some(assistant(content, usage, stop))
}

fn anthropic_stream(events: &[Value]) -> Option<Message> {
    let mut blocks: BTreeMap<u64, (Value, String)> = BTreeMap::new();
    let mut usage = Usage::default();
    let mut stop = None;
    for event in events {
        let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
        match event.get("type").and_then(Value::as_str) {
            Some("message_start") => {
                if let Some(reported) = event.get("message").and_then(|m| m.get("usage")) {
                    anthropic_usage(reported, &mut usage);
                }
            }
            Some("content_block_start") => {
                let block = event.get("content_block").cloned().unwrap_or(Value::Null);
                blocks.insert(index, (block, String::new()));
            }
            Some("content_block_delta") => {
                let (Some((block, json)), Some(delta)) =
                    (blocks.get_mut(&index), event.get("delta"))
                else {
                    continue;
                };
                apply_delta(block, json, delta);
            }
            Some("message_delta") => {
                if let Some(reported) = event.get("usage") {
                    anthropic_usage(reported, &mut usage);
                }
                if let Some(reason) = event.get("delta").and_then(|d| d.get("stop_reason")) {
                    stop = stop_reason(reason.as_str());
                }
            }
            _ => {}
        }
    }
    let content = blocks
        .into_values()
        .filter_map(|(mut block, json)| {
            if !json.is_empty() {
                block["input"] = arguments(&json);
            }
            anthropic_block(&block)
        })
        .collect();
    Some(assistant(content, usage, stop))
}

/// Adds one `content_block_delta` to the block it extends; tool input
/// arrives as JSON text pieces, joined in `json`.
fn apply_delta(block: &mut Value, json: &mut String, delta: &Value) {
    let append = |block: &mut Value, key: &str, piece: Option<&str>| {
        let piece = piece.unwrap_or_default();
        let now = block.get(key).and_then(Value::as_str).unwrap_or_default();
        block[key] = Value::String(format!("{now}{piece}"));
    };
    match delta.get("type").and_then(Value::as_str) {
        Some("text_delta") => append(block, "text", delta.get("text").and_then(Value::as_str)),
        Some("thinking_delta") => append(
            block,
            "thinking",
            delta.get("thinking").and_then(Value::as_str),
        ),
        Some("signature_delta") => {
            append(
                block,
                "signature",
                delta.get("signature").and_then(Value::as_str),
            );
        }
        Some("input_json_delta") => {
            json.push_str(
                delta
                    .get("partial_json")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            );
        }
        _ => {}
    }
}

fn responses_whole(value: &Value) -> Option<Message> {
    let output = value.get("output")?.as_array()?;
    let mut content = Vec::new();
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(text) = part.get("text").and_then(Value::as_str) {
                        content.push(Block::text(text));
                    }
                }
            }
            Some("function_call") => content.push(Block::ToolCall {
                id: text_of(item, "call_id"),
                name: text_of(item, "name"),
                arguments: arguments(item.get("arguments").and_then(Value::as_str).unwrap_or("")),
            }),
            _ => content.push(Block::Native {
                provider: Dialect::Responses.provider().to_string(),
                item: item.clone(),
            }),
        }
    }
    let usage = value
        .get("usage")
        .map(|u| openai_usage(u, "input_tokens", "output_tokens", "input_tokens_details"))
        .unwrap_or_default();
    let stop = stop_reason(value.get("status").and_then(Value::as_str));
    Some(assistant(content, usage, stop))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn an_anthropic_stream_is_assembled_with_its_tool_input_and_usage() {
        let stream = concat!(
            "event: message_start\n",
            "data: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\",\"usage\":{\"input_tokens\":90,\"cache_read_input_tokens\":10}}}\n\n",
            "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Read\"}}\n\n",
            "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ing.\"}}\n\n",
            "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t1\",\"name\":\"read\",\"input\":{}}}\n\n",
            "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\":\"}}\n\n",
            "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"a.rs\\\"}\"}}\n\n",
            "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":7}}\n\n",
        );
        let message = reply_message(Dialect::Anthropic, true, stream.as_bytes()).unwrap();
        assert_eq!(
            message.content,
            vec![
                Block::text("Reading."),
                Block::ToolCall {
                    id: "t1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a.rs"})
                }
            ]
        );
        let usage = message.meta.usage.unwrap();
        assert_eq!((usage.input, usage.cache_read, usage.output), (90, 10, 7));
        assert_eq!(message.meta.stop_reason, Some(StopReason::ToolUse));
    }

    #[test]
    fn a_chat_stream_joins_text_and_tool_call_pieces() {
        let stream = concat!(
            "data: {\"model\":\"m\",\"choices\":[{\"delta\":{\"content\":\"He\"}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"ls\",\"arguments\":\"{\\\"a\\\"\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\":1}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":50,\"completion_tokens\":5,\"prompt_tokens_details\":{\"cached_tokens\":20}}}\n\n",
            "data: [DONE]\n\n",
        );
        let message = reply_message(Dialect::Chat, true, stream.as_bytes()).unwrap();
        assert_eq!(message.content[0], Block::text("He"));
        assert_eq!(
            message.content[1],
            Block::ToolCall {
                id: "c".into(),
                name: "ls".into(),
                arguments: json!({"a": 1})
            }
        );
        let usage = message.meta.usage.unwrap();
        assert_eq!((usage.input, usage.cache_read, usage.output), (30, 20, 5));
    }

    #[test]
    fn an_error_body_records_nothing() {
        let body = br#"{"error":{"message":"overloaded"}}"#;
        for dialect in [Dialect::Chat, Dialect::Responses, Dialect::Anthropic] {
            assert!(reply_message(dialect, false, body).is_none(), "{dialect:?}");
        }
    }
}
