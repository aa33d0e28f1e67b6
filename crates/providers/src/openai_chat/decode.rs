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
use crate::common::scan::QuickRead;
use crate::common::scan::Refill;
use crate::common::scan::Repeat;
use crate::common::scan::Scanner;
use crate::common::scan::lent;
use crate::common::scan::lent_or_text;
use crate::common::scan::once;
use crate::common::scan::owned;
use crate::common::sse::SseEvent;
use crate::common::stream;
use crate::common::stream::Decoder;
use crate::common::stream::Partial;
use abridge_llm::Response;
use abridge_llm::StreamEvent;
use abridge_llm::LlmError;
use abridge_llm::Block;
use abridge_llm::StopReason;
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

impl<'a> QuickRead<'a> for WireAnswer<'a> {
    /// Chunks whose choices carry text or reasoning deltas (and the
    /// finish reason); a chunk with usage, an error or tool calls is left
    /// to serde.
    fn read(scanner: &mut Scanner<'a>) -> Option<Self> {
        let (mut model, mut error, mut choices, mut usage) = (None, None, None, None);
        scanner.object(|s, key| match key {
            "model" => once(&mut model, s.optional_string()?),
            "error" => once(&mut error, s.null().then_some(())?),
            "usage" => once(&mut usage, s.null().then_some(())?),
            "choices" => {
                let mut list = Vec::new();
                s.elements(|s| {
                    list.push(WireChoice::quick(s)?);
                    Some(())
                })?;
                once(&mut choices, list)
            }
            _ => s.skip(),
        })?;
        Some(WireAnswer {
            model: model.flatten(),
            error: None,
            choices: choices.unwrap_or_default(),
            usage: None,
        })
    }
}

impl<'a> Refill<'a> for WireAnswer<'a> {
    type Kept = WireAnswer<'static>;

    fn keep(&self) -> Self::Kept {
        WireAnswer {
            model: owned(&self.model),
            error: None,
            choices: self
                .choices
                .iter()
                .map(|choice| WireChoice {
                    message: WireMessage {
                        content: choice
                            .message
                            .content
                            .as_ref()
                            .map(|c| WireContent(Cow::Owned(c.0.to_string()))),
                        reasoning_content: owned(&choice.message.reasoning_content),
                        reasoning: owned(&choice.message.reasoning),
                        refusal: owned(&choice.message.refusal),
                        tool_calls: None,
                    },
                    finish_reason: owned(&choice.finish_reason),
                })
                .collect(),
            usage: None,
        }
    }

    fn refill(kept: &'a Self::Kept, text: Cow<'a, str>) -> Self {
        let mut text = Some(text);
        let choices = kept
            .choices
            .iter()
            .map(|choice| {
                let message = &choice.message;
                // The text goes into the first slot that held one, as in
                // the kept event; every other string is lent from it.
                let content = match &message.content {
                    Some(_) if text.is_some() => text.take().map(WireContent),
                    content => content.as_ref().map(|c| WireContent(Cow::Borrowed(&c.0))),
                };
                WireChoice {
                    message: WireMessage {
                        content,
                        reasoning_content: lent_or_text(&message.reasoning_content, &mut text),
                        reasoning: lent_or_text(&message.reasoning, &mut text),
                        refusal: lent_or_text(&message.refusal, &mut text),
                        tool_calls: None,
                    },
                    finish_reason: lent(&choice.finish_reason),
                }
            })
            .collect();
        WireAnswer {
            model: lent(&kept.model),
            error: None,
            choices,
            usage: None,
        }
    }
}

impl<'a> WireChoice<'a> {
    fn quick(s: &mut Scanner<'a>) -> Option<Self> {
        let (mut message, mut finish_reason) = (None, None);
        s.members(|s, key| match key {
            "message" | "delta" => once(&mut message, WireMessage::quick(s)?),
            "finish_reason" => once(&mut finish_reason, s.optional_string()?),
            _ => s.skip(),
        })?;
        Some(WireChoice {
            message: message.unwrap_or_default(),
            finish_reason: finish_reason.flatten(),
        })
    }
}

impl<'a> WireMessage<'a> {
    fn quick(s: &mut Scanner<'a>) -> Option<Self> {
        let mut texts: [Option<Option<Cow<'a, str>>>; 4] = Default::default();
        let mut tool_calls = None;
        s.members(|s, key| {
            let slot = match key {
                "content" => 0,
                "reasoning_content" => 1,
                "reasoning" => 2,
                "refusal" => 3,
                "tool_calls" => return once(&mut tool_calls, s.null().then_some(())?),
                _ => return s.skip(),
            };
            once(&mut texts[slot], s.text_hole()?)
        })?;
        let [content, reasoning_content, reasoning, refusal] = texts.map(Option::flatten);
        Some(WireMessage {
            content: content.map(WireContent),
            reasoning_content,
            reasoning,
            refusal,
            tool_calls: None,
        })
    }
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
    /// The last delta, to rebuild the next one of the same shape.
    repeat: Repeat<WireAnswer<'static>>,
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
            repeat: Repeat::default(),
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
        let chunk: WireAnswer<'_> =
            stream::read_event(&self.provider, event.data, &mut self.repeat)?;
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
    use crate::common::scan::testing;
    use crate::common::scan::testing::pick;
    use proptest::prelude::*;
    use serde_json::json;

    fn message() -> BoxedStrategy<String> {
        let mut known = vec![
            ("role", pick(&["\"assistant\"", "null"])),
            (
                "content",
                prop_oneof![6 => testing::text_value(), 1 => Just("[{\"type\":\"text\",\"text\":\"a\"}]".to_string()), 1 => Just("{}".to_string())]
                    .boxed(),
            ),
            (
                "tool_calls",
                pick(&["null", "null", "[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]"]),
            ),
        ];
        known.extend(
            ["reasoning_content", "reasoning", "refusal"]
                .map(|key| (key, testing::text_value().boxed())),
        );
        testing::members(known)
            .prop_map(|m| testing::object(m, ""))
            .boxed()
    }

    fn choice() -> BoxedStrategy<String> {
        testing::members(vec![
            ("index", pick(&["0", "1"])),
            (
                "delta",
                prop_oneof![6 => message(), 1 => Just("null".to_string())].boxed(),
            ),
            ("message", message()),
            (
                "finish_reason",
                pick(&["null", "null", "\"stop\"", "\"length\"", "3"]),
            ),
            ("logprobs", pick(&["null"])),
        ])
        .prop_map(|m| testing::object(m, ""))
        .boxed()
    }

    fn chunk() -> impl Strategy<Value = String> {
        let choices =
            prop::collection::vec(choice(), 0..3).prop_map(|c| format!("[{}]", c.join(",")));
        let members = testing::members(vec![
            ("model", testing::text_value().boxed()),
            ("error", pick(&["null", "null", "{\"message\":\"boom\"}"])),
            (
                "usage",
                pick(&[
                    "null",
                    "null",
                    "{\"prompt_tokens\":5,\"completion_tokens\":1}",
                ]),
            ),
            (
                "choices",
                prop_oneof![8 => choices, 1 => Just("null".to_string())].boxed(),
            ),
        ]);
        testing::event_text(members)
    }

    /// The quick reader and serde read every generated chunk alike.
    #[test]
    fn quick_reads_agree_with_serde() {
        testing::agree_on(chunk(), 128, |text| testing::agrees::<WireAnswer<'_>>(text));
    }

    /// A chunk as OpenAI-compatible servers stream it: one choice with a
    /// piece of text or reasoning, among ids, counters and unknown
    /// members.
    fn streamed_chunk() -> impl Strategy<Value = String> {
        let choice = pick(&[
            "[{\"index\":0,\"delta\":{\"content\":\"word \"},\"logprobs\":null,\"finish_reason\":null}]",
            "[{\"index\":0,\"delta\":{\"reasoning_content\":\"word \"},\"finish_reason\":null}]",
            "[{\"delta\": {\"role\": \"assistant\", \"content\": \"word \"}, \"index\": 0}]",
        ]);
        testing::event_text(testing::members_kept(
            vec![
                ("id", pick(&["\"chatcmpl-1\"", "\"chatcmpl-2\""])),
                ("object", pick(&["\"chat.completion.chunk\""])),
                ("created", pick(&["1731", "1764633600"])),
                ("model", pick(&["\"gpt-4o-mini\"", "\"smollm2\""])),
                ("choices", choice),
            ],
            1.0,
        ))
    }

    /// A delta rebuilt from the last one's shape equals serde's reading
    /// of it, and events that differ where the shape may not are read
    /// afresh.
    #[test]
    fn repeated_shapes_agree_with_serde() {
        testing::agree_on(
            testing::pairs(prop_oneof![3 => streamed_chunk().boxed(), 1 => chunk().boxed()]),
            128,
            |(first, second)| {
                testing::repeats_agree::<WireAnswer<'_>>(
                    first,
                    second,
                    &mut Repeat::default(),
                    &mut Repeat::default(),
                )
            },
        );
    }

    /// Text chunks as OpenAI, llama.cpp and vLLM stream them take the
    /// quick path; a chunk with usage or tool calls goes to serde.
    #[test]
    fn common_text_chunks_take_the_quick_path() {
        let quick = [
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1731,"model":"gpt-4o-mini","system_fingerprint":"fp_1","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}"#,
            r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1731,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":" line\nnext"},"logprobs":null,"finish_reason":null}],"obfuscation":"x1"}"#,
            r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"content":"Hi"}}],"created":1731,"id":"chatcmpl-2","model":"smollm2","object":"chat.completion.chunk"}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"think"}}],"model":"deepseek-reasoner"}"#,
            r#"{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}"#,
        ];
        let slow = [
            r#"{"id":"c","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2}}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"f","arguments":""}}]}}]}"#,
        ];
        testing::assert_paths(&quick, &slow, |text| {
            testing::agrees::<WireAnswer<'_>>(text)
        });
    }

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
