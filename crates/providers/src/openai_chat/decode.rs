//! Chat Completions answers: whole bodies and streamed chunks, read into
//! typed structs straight from the bytes.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use serde::Deserialize;
use serde::Deserializer;
use serde::de::SeqAccess;
use serde::de::Visitor;
use serde_json::Value;

use crate::common::classify;
use crate::common::sse::SseEvent;
use crate::common::stream;
use crate::common::stream::Decoder;
use crate::common::stream::Partial;
use abridge_llm::Block;
use abridge_llm::LlmError;
use abridge_llm::Response;
use abridge_llm::StopReason;
use abridge_llm::StreamEvent;
use abridge_llm::Usage;

fn stop_reason(finish: Option<&str>) -> StopReason {
    match finish {
        None | Some("stop") => StopReason::EndTurn,
        Some("length") => StopReason::MaxTokens,
        Some("tool_calls" | "function_call") => StopReason::ToolUse,
        Some("content_filter") => StopReason::Refusal,
        Some(other) => StopReason::Other(other.to_string()),
    }
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
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

#[derive(Debug, Clone, PartialEq, Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
struct WireToolCall {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

/// A message or a streamed delta. Text is borrowed from the event's bytes
/// unless it holds escapes, so a chunk costs no allocation before its
/// text becomes a [`StreamEvent`].
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
struct WireMessage<'a> {
    #[serde(borrow, default)]
    content: Option<WireContent<'a>>,
    #[serde(borrow, default)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    refusal: Option<Cow<'a, str>>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

/// `content`: text, or an array of parts whose `text` fields are joined
/// (servers that send parts in a chat answer).
#[derive(Debug, Clone, Default, PartialEq)]
struct WireContent<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for WireContent<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ContentVisitor;
        impl<'de> Visitor<'de> for ContentVisitor {
            type Value = WireContent<'de>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("text or an array of content parts")
            }

            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(WireContent(Cow::Borrowed(text)))
            }

            fn visit_str<E>(self, text: &str) -> Result<Self::Value, E> {
                Ok(WireContent(Cow::Owned(text.to_string())))
            }

            fn visit_string<E>(self, text: String) -> Result<Self::Value, E> {
                Ok(WireContent(Cow::Owned(text)))
            }

            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(WireContent::default())
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut parts: A) -> Result<Self::Value, A::Error> {
                let mut text = String::new();
                while let Some(part) = parts.next_element::<Value>()? {
                    if let Some(piece) = part.get("text").and_then(Value::as_str) {
                        text.push_str(piece);
                    }
                }
                Ok(WireContent(Cow::Owned(text)))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                // Any other object carries no text we can show.
                while map
                    .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(WireContent::default())
            }
        }
        deserializer.deserialize_any(ContentVisitor)
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
struct WireChoice<'a> {
    #[serde(borrow, default, alias = "delta")]
    message: WireMessage<'a>,
    #[serde(borrow, default)]
    finish_reason: Option<Cow<'a, str>>,
}

/// A whole answer or one streamed chunk (`delta` in place of `message`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct WireAnswer<'a> {
    #[serde(borrow, default)]
    model: Option<Cow<'a, str>>,
    /// Present (and not null) when a stream reports a failure.
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
    #[serde(borrow, default)]
    choices: Vec<WireChoice<'a>>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

fn content_text<'a>(content: Option<WireContent<'a>>) -> Cow<'a, str> {
    content.map(|c| c.0).unwrap_or_default()
}

/// Non-empty text, owned.
fn owned_text(text: Option<Cow<'_, str>>) -> Option<String> {
    text.filter(|t| !t.is_empty()).map(Cow::into_owned)
}

/// Our answer from a whole (non-streamed) chat completion.
pub(crate) fn answer_to_response(
    provider: &str,
    requested: &str,
    answer: WireAnswer<'_>,
) -> Response {
    let usage = answer
        .usage
        .as_ref()
        .map(WireUsage::to_usage)
        .unwrap_or_default();
    let model = answer
        .model
        .map_or_else(|| requested.to_string(), Cow::into_owned);
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
    if let Some(thinking) = owned_text(message.reasoning_content.or(message.reasoning)) {
        content.push(Block::Thinking {
            thinking,
            signature: None,
        });
    }
    if let Some(text) = owned_text(message.content.map(|c| c.0)) {
        content.push(Block::Text { text });
    }
    if let Some(refusal) = owned_text(message.refusal) {
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
}

/// Appends a delta to the answer's text (or reasoning) part, opening the
/// part at its first delta. A free function over the two fields it
/// touches, so it runs while the event being read still borrows the
/// decoder's last delta.
fn push_text(parts: &mut Vec<Partial>, slot: &mut Option<usize>, delta: &str, thinking: bool) {
    let index = *slot.get_or_insert_with(|| {
        parts.push(if thinking {
            Partial::Thinking {
                text: String::new(),
                signature: String::new(),
            }
        } else {
            Partial::Text(String::new())
        });
        parts.len() - 1
    });
    match &mut parts[index] {
        Partial::Text(text) | Partial::Thinking { text, .. } => text.push_str(delta),
        _ => {}
    }
}

impl Decoder for ChatDecoder {
    fn on_event(
        &mut self,
        event: SseEvent<'_>,
        out: &mut stream::Out<'_>,
    ) -> Result<bool, LlmError> {
        if event.data.trim() == "[DONE]" {
            out.push(stream::done(
                &self.provider,
                &mut self.model,
                &mut self.parts,
                self.usage,
                stop_reason(self.finish.as_deref()),
            ));
            return Ok(true);
        }
        let chunk: WireAnswer<'_> = stream::parse_event(&self.provider, event.data)?;
        if chunk.error.is_some() {
            return Err(stream::reported_error(
                &self.provider,
                self.dialect,
                event.data,
            ));
        }
        // Every chunk names the model; copy it only when it changes.
        if let Some(model) = chunk.model.filter(|m| !m.is_empty() && **m != *self.model) {
            self.model = model.into_owned();
        }
        if let Some(usage) = &chunk.usage {
            self.usage = usage.to_usage();
        }
        for choice in chunk.choices {
            let delta = choice.message;
            if let Some(thinking) = owned_text(delta.reasoning_content.or(delta.reasoning)) {
                push_text(&mut self.parts, &mut self.thinking_slot, &thinking, true);
                out.push(StreamEvent::ThinkingDelta(thinking));
            }
            let text = content_text(delta.content);
            if !text.is_empty() {
                push_text(&mut self.parts, &mut self.text_slot, &text, false);
                out.push(StreamEvent::TextDelta(text.into_owned()));
            }
            // A refusal streams in its own field; it is the answer's
            // text, as in a whole answer.
            if let Some(refusal) = owned_text(delta.refusal) {
                push_text(&mut self.parts, &mut self.text_slot, &refusal, false);
                out.push(StreamEvent::TextDelta(refusal));
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
                self.finish = Some(finish.into_owned());
            }
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Content as text (plain or escaped), as parts, or null, read from
    /// a chunk's bytes and from a parsed value alike.
    #[test]
    fn content_reads_text_parts_and_null_from_bytes_and_values() {
        let cases = [
            (r#"{"choices":[{"delta":{"content":"plain"}}]}"#, "plain"),
            (
                r#"{"choices":[{"delta":{"content":"a\"b\u00e9"}}]}"#,
                "a\"bé",
            ),
            (
                r#"{"choices":[{"message":{"content":[{"type":"text","text":"x"},{"type":"text","text":"y"}]}}]}"#,
                "xy",
            ),
            (r#"{"choices":[{"delta":{"content":null}}]}"#, ""),
            (r#"{"choices":[{"delta":{}}]}"#, ""),
        ];
        for (json, want) in cases {
            let from_bytes: WireAnswer<'_> = serde_json::from_str(json).unwrap();
            let text = content_text(
                from_bytes
                    .choices
                    .into_iter()
                    .next()
                    .unwrap()
                    .message
                    .content,
            );
            assert_eq!(text, want, "{json}");
            let value: Value = serde_json::from_str(json).unwrap();
            let from_value = WireAnswer::deserialize(value).unwrap();
            let text = content_text(
                from_value
                    .choices
                    .into_iter()
                    .next()
                    .unwrap()
                    .message
                    .content,
            );
            assert_eq!(text, want, "{json} via a value");
        }
    }

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
