//! Chat Completions answers: whole bodies and streamed chunks, read into
//! typed structs straight from the bytes.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::Value;

use super::classify;
use super::sse::SseEvent;
use super::stream;
use super::stream::Decoder;
use super::stream::Partial;
use crate::client::Response;
use crate::client::StreamEvent;
use crate::error::LlmError;
use crate::message::Block;
use crate::usage::StopReason;
use crate::usage::Usage;

fn stop_reason(finish: Option<&str>) -> StopReason {
    match finish {
        None | Some("stop") => StopReason::EndTurn,
        Some("length") => StopReason::MaxTokens,
        Some("tool_calls" | "function_call") => StopReason::ToolUse,
        Some("content_filter") => StopReason::Refusal,
        Some(other) => StopReason::Other(other.to_string()),
    }
}

#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Default, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

impl WireUsage {
    /// `prompt_tokens` includes cached ones; our input bucket does not.
    fn to_usage(&self) -> Usage {
        let cached = self
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0)
            .min(self.prompt_tokens);
        Usage {
            input: self.prompt_tokens - cached,
            output: self.completion_tokens,
            cache_read: cached,
            cache_write: 0,
        }
    }
}

#[derive(Debug, Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Debug, Deserialize)]
struct WireToolCall {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Debug, Default, Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<Value>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Debug, Deserialize)]
struct WireChoice {
    #[serde(default, alias = "delta")]
    message: WireMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

/// A whole answer or one streamed chunk (`delta` in place of `message`).
#[derive(Debug, Deserialize)]
pub(crate) struct WireAnswer {
    #[serde(default)]
    model: Option<String>,
    /// Present (and not null) when a stream reports a failure.
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
    #[serde(default)]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

fn content_text(content: Option<Value>) -> String {
    match content {
        Some(Value::String(text)) => text,
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Our answer from a whole (non-streamed) chat completion.
pub(crate) fn answer_to_response(provider: &str, requested: &str, answer: WireAnswer) -> Response {
    let usage = answer
        .usage
        .as_ref()
        .map(WireUsage::to_usage)
        .unwrap_or_default();
    let model = answer.model.unwrap_or_else(|| requested.to_string());
    let Some(choice) = answer.choices.into_iter().next() else {
        return stream::response(
            provider,
            model,
            Vec::new(),
            usage,
            StopReason::EndTurn,
            None,
        );
    };
    let message = choice.message;
    let mut content = Vec::new();
    if let Some(thinking) = message
        .reasoning_content
        .or(message.reasoning)
        .filter(|t| !t.is_empty())
    {
        content.push(Block::Thinking {
            thinking,
            signature: None,
        });
    }
    let text = content_text(message.content);
    if !text.is_empty() {
        content.push(Block::Text { text });
    }
    if let Some(refusal) = message.refusal.filter(|t| !t.is_empty()) {
        content.push(Block::Text { text: refusal });
    }
    for call in message.tool_calls.unwrap_or_default() {
        let function = call.function.unwrap_or(WireFunction {
            name: None,
            arguments: None,
        });
        content.push(Block::ToolCall {
            id: call.id.unwrap_or_default(),
            name: function.name.unwrap_or_default(),
            arguments: stream::tool_arguments(function.arguments.as_deref().unwrap_or("")),
        });
    }
    let stop = stop_reason(choice.finish_reason.as_deref());
    stream::response(provider, model, content, usage, stop, None)
}

/// Stream decoder: `data: {chunk}` lines ending in `data: [DONE]`.
#[derive(Debug)]
pub(crate) struct ChatDecoder {
    provider: String,
    dialect: classify::ErrorDialect,
    model: String,
    parts: Vec<Partial>,
    text_slot: Option<usize>,
    thinking_slot: Option<usize>,
    tool_slots: HashMap<usize, usize>,
    finish: Option<String>,
    usage: Usage,
}

impl ChatDecoder {
    /// A decoder for a stream that asked for `model`.
    pub(crate) fn new(provider: &str, dialect: classify::ErrorDialect, model: String) -> Self {
        ChatDecoder {
            provider: provider.to_string(),
            dialect,
            model,
            parts: Vec::new(),
            text_slot: None,
            thinking_slot: None,
            tool_slots: HashMap::new(),
            finish: None,
            usage: Usage::default(),
        }
    }

    fn push_text(&mut self, delta: &str, thinking: bool) {
        let slot = if thinking {
            &mut self.thinking_slot
        } else {
            &mut self.text_slot
        };
        let index = *slot.get_or_insert_with(|| {
            self.parts.push(if thinking {
                Partial::Thinking {
                    text: String::new(),
                    signature: String::new(),
                }
            } else {
                Partial::Text(String::new())
            });
            self.parts.len() - 1
        });
        match &mut self.parts[index] {
            Partial::Text(text) | Partial::Thinking { text, .. } => text.push_str(delta),
            _ => {}
        }
    }
}

impl Decoder for ChatDecoder {
    fn on_event(
        &mut self,
        event: SseEvent<'_>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<bool, LlmError> {
        if event.data.trim() == "[DONE]" {
            let content = std::mem::take(&mut self.parts)
                .into_iter()
                .filter_map(Partial::finish)
                .collect();
            let response = stream::response(
                &self.provider,
                std::mem::take(&mut self.model),
                content,
                self.usage,
                stop_reason(self.finish.as_deref()),
                None,
            );
            out.push(StreamEvent::Done(Box::new(response)));
            return Ok(true);
        }
        let chunk: WireAnswer = stream::parse_event(&self.provider, event.data)?;
        if chunk.error.is_some() {
            let value = stream::event_json(&self.provider, event.data)?;
            return Err(classify::classify_stream_error(
                &self.provider,
                self.dialect,
                &classify::error_from_value(&value),
            ));
        }
        if let Some(model) = chunk.model.filter(|m| !m.is_empty()) {
            self.model = model;
        }
        if let Some(usage) = &chunk.usage {
            self.usage = usage.to_usage();
        }
        for choice in chunk.choices {
            let delta = choice.message;
            if let Some(thinking) = delta
                .reasoning_content
                .or(delta.reasoning)
                .filter(|t| !t.is_empty())
            {
                self.push_text(&thinking, true);
                out.push(StreamEvent::ThinkingDelta(thinking));
            }
            let text = content_text(delta.content);
            if !text.is_empty() {
                self.push_text(&text, false);
                out.push(StreamEvent::TextDelta(text));
            }
            for call in delta.tool_calls.unwrap_or_default() {
                let key = call.index.unwrap_or(self.tool_slots.len());
                let function = call.function.unwrap_or(WireFunction {
                    name: None,
                    arguments: None,
                });
                let slot = match self.tool_slots.get(&key) {
                    Some(slot) => *slot,
                    None => {
                        let id = call.id.clone().unwrap_or_default();
                        let name = function.name.clone().unwrap_or_default();
                        self.parts.push(Partial::Tool {
                            id: id.clone(),
                            name: name.clone(),
                            arguments: String::new(),
                        });
                        self.tool_slots.insert(key, self.parts.len() - 1);
                        out.push(StreamEvent::ToolCallStart { id, name });
                        self.parts.len() - 1
                    }
                };
                if let Some(arguments) = function.arguments.filter(|a| !a.is_empty()) {
                    if let Partial::Tool {
                        arguments: so_far, ..
                    } = &mut self.parts[slot]
                    {
                        so_far.push_str(&arguments);
                    }
                    out.push(StreamEvent::ToolCallDelta(arguments));
                }
            }
            if let Some(finish) = choice.finish_reason {
                self.finish = Some(finish);
            }
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cached_tokens_leave_the_input_bucket() {
        let usage: WireUsage = serde_json::from_value(json!({
            "prompt_tokens": 1000, "completion_tokens": 50,
            "prompt_tokens_details": {"cached_tokens": 800}
        }))
        .unwrap();
        assert_eq!(
            usage.to_usage(),
            Usage {
                input: 200,
                output: 50,
                cache_read: 800,
                cache_write: 0
            }
        );
    }
}
