//! Anthropic Messages streams: the events, read straight from their bytes
//! (text deltas by the quick reader), and the decoder that assembles them.

use std::borrow::Cow;

use serde::Deserialize;

use crate::common::classify;
use crate::common::scan::QuickRead;
use crate::common::scan::Refill;
use crate::common::scan::Repeat;
use crate::common::scan::Scanner;
use crate::common::scan::lent;
use crate::common::scan::lent_or_text;
use crate::common::scan::nullable;
use crate::common::scan::once;
use crate::common::scan::owned;
use crate::common::sse::SseEvent;
use crate::common::stream;
use crate::common::stream::Decoder;
use crate::common::stream::Partial;
use abridge_llm::StreamEvent;
use abridge_llm::LlmError;
use abridge_llm::StopReason;
use abridge_llm::Usage;

/// Stream decoder: `message_start`, content block start/delta/stop,
/// `message_delta`, ending in `message_stop`.
#[derive(Debug)]
pub(crate) struct AnthropicDecoder {
    provider: String,
    dialect: classify::ErrorDialect,
    model: String,
    parts: Vec<Partial>,
    /// Each started block's wire index and its place in `parts`, newest
    /// last: a message has a handful of blocks and deltas go to the newest,
    /// so a search from the end beats hashing every delta's index.
    slots: Vec<(u64, usize)>,
    stop: Option<String>,
    usage: Usage,
    /// The last delta, to rebuild the next one of the same shape.
    repeat: Repeat<WireEvent<'static>>,
}

/// One streamed event, read straight from its bytes; text pieces are
/// borrowed unless they hold escapes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
struct WireEvent<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default)]
    delta: Option<WireDelta<'a>>,
    #[serde(default)]
    content_block: Option<WireBlockStart>,
    #[serde(default)]
    message: Option<WireMessageStart>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
struct WireDelta<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    thinking: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    signature: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    partial_json: Option<Cow<'a, str>>,
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
struct WireBlockStart {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    text: String,
    #[serde(default)]
    thinking: String,
    #[serde(default)]
    signature: String,
    #[serde(default)]
    data: String,
    #[serde(default)]
    id: String,
    #[serde(default)]
    name: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
struct WireMessageStart {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

/// Anthropic's buckets are already disjoint: `input_tokens` excludes both
/// cache buckets. Each field present replaces what was known.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(crate) struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl WireUsage {
    pub(crate) fn apply(&self, usage: &mut Usage) {
        let pairs = [
            (self.input_tokens, &mut usage.input),
            (self.output_tokens, &mut usage.output),
            (self.cache_read_input_tokens, &mut usage.cache_read),
            (self.cache_creation_input_tokens, &mut usage.cache_write),
        ];
        for (value, slot) in pairs {
            if let Some(n) = value {
                *slot = n;
            }
        }
    }
}

impl<'a> QuickRead<'a> for WireEvent<'a> {
    /// Content block deltas (text, thinking, signature, tool arguments),
    /// hundreds per answer; the few events that carry a block, a message
    /// or usage are left to serde.
    fn read(scanner: &mut Scanner<'a>) -> Option<Self> {
        let (mut kind, mut index, mut delta) = (None, None, None);
        scanner.object(|s, key| match key {
            "type" => once(&mut kind, s.optional_string()?),
            "index" => once(&mut index, s.optional_u64()?),
            "delta" => once(&mut delta, nullable(s, WireDelta::quick)?),
            "content_block" | "message" | "usage" => None,
            _ => s.skip(),
        })?;
        Some(WireEvent {
            kind: kind.flatten(),
            index: index.flatten(),
            delta: delta.flatten(),
            content_block: None,
            message: None,
            usage: None,
        })
    }
}

impl<'a> Refill<'a> for WireEvent<'a> {
    type Kept = WireEvent<'static>;

    fn keep(&self) -> Self::Kept {
        WireEvent {
            kind: owned(&self.kind),
            index: self.index,
            delta: self.delta.as_ref().map(|d| WireDelta {
                kind: owned(&d.kind),
                text: owned(&d.text),
                thinking: owned(&d.thinking),
                signature: owned(&d.signature),
                partial_json: owned(&d.partial_json),
                stop_reason: d.stop_reason.clone(),
            }),
            content_block: None,
            message: None,
            usage: None,
        }
    }

    fn refill(kept: &'a Self::Kept, text: Cow<'a, str>) -> Self {
        let mut text = Some(text);
        WireEvent {
            kind: lent(&kept.kind),
            index: kept.index,
            delta: kept.delta.as_ref().map(|d| WireDelta {
                kind: lent(&d.kind),
                text: lent_or_text(&d.text, &mut text),
                thinking: lent_or_text(&d.thinking, &mut text),
                signature: lent_or_text(&d.signature, &mut text),
                partial_json: lent_or_text(&d.partial_json, &mut text),
                stop_reason: d.stop_reason.clone(),
            }),
            content_block: None,
            message: None,
            usage: None,
        }
    }
}

impl<'a> WireDelta<'a> {
    fn quick(s: &mut Scanner<'a>) -> Option<Self> {
        let mut fields: [Option<Option<Cow<'a, str>>>; 6] = Default::default();
        s.members(|s, key| {
            let slot = match key {
                "type" => 0,
                "text" => 1,
                "thinking" => 2,
                "signature" => 3,
                "partial_json" => 4,
                "stop_reason" => 5,
                _ => return s.skip(),
            };
            // The four delta texts are the holes a repeated shape refills.
            let value = if (1..=4).contains(&slot) {
                s.text_hole()?
            } else {
                s.optional_string()?
            };
            once(&mut fields[slot], value)
        })?;
        let [kind, text, thinking, signature, partial_json, stop_reason] =
            fields.map(Option::flatten);
        Some(WireDelta {
            kind,
            text,
            thinking,
            signature,
            partial_json,
            stop_reason: stop_reason.map(Cow::into_owned),
        })
    }
}

/// Our stop reason for Anthropic's `stop_reason`, streamed or whole.
pub(crate) fn stop_reason(reason: Option<&str>) -> StopReason {
    match reason {
        None | Some("end_turn") => StopReason::EndTurn,
        Some("max_tokens") => StopReason::MaxTokens,
        Some("tool_use") => StopReason::ToolUse,
        Some("stop_sequence") => StopReason::StopSequence,
        Some("refusal") => StopReason::Refusal,
        Some(other) => StopReason::Other(other.to_string()),
    }
}

fn piece(text: Option<Cow<'_, str>>) -> String {
    text.map(Cow::into_owned).unwrap_or_default()
}

impl AnthropicDecoder {
    /// A decoder for one answer to a request for `model`.
    pub(crate) fn new(provider: &str, dialect: classify::ErrorDialect, model: String) -> Self {
        AnthropicDecoder {
            provider: provider.to_string(),
            dialect,
            model,
            parts: Vec::new(),
            slots: Vec::new(),
            stop: None,
            usage: Usage::default(),
            repeat: Repeat::default(),
        }
    }
}

impl Decoder for AnthropicDecoder {
    fn on_event(
        &mut self,
        event: SseEvent<'_>,
        out: &mut stream::Out<'_>,
    ) -> Result<bool, LlmError> {
        let wire: WireEvent<'_> = stream::read_event(&self.provider, event.data, &mut self.repeat)?;
        let kind = wire.kind.as_deref().or(event.event).unwrap_or("");
        match kind {
            "message_start" => {
                if let Some(message) = wire.message {
                    if let Some(model) = message.model {
                        self.model = model;
                    }
                    if let Some(usage) = message.usage {
                        usage.apply(&mut self.usage);
                    }
                }
            }
            "content_block_start" => {
                let index = wire.index.unwrap_or(self.slots.len() as u64);
                let block = wire.content_block.unwrap_or_default();
                let partial = match block.kind.as_deref() {
                    Some("thinking") => Partial::Thinking {
                        text: block.thinking,
                        signature: block.signature,
                    },
                    Some("redacted_thinking") => Partial::Redacted(block.data),
                    Some("tool_use") => {
                        out.push(StreamEvent::ToolCallStart {
                            id: block.id.clone(),
                            name: block.name.clone(),
                        });
                        Partial::Tool {
                            id: block.id,
                            name: block.name,
                            arguments: String::new(),
                        }
                    }
                    _ => Partial::Text(block.text),
                };
                self.parts.push(partial);
                self.slots.push((index, self.parts.len() - 1));
            }
            "content_block_delta" => {
                let index = wire.index.unwrap_or(0);
                let Some(part) = self
                    .slots
                    .iter()
                    .rev()
                    .find(|(started, _)| *started == index)
                    .and_then(|(_, slot)| self.parts.get_mut(*slot))
                else {
                    return Err(LlmError::Transport {
                        provider: self.provider.clone(),
                        message: format!("stream delta for block {index}, which never started"),
                    });
                };
                let Some(delta) = wire.delta else {
                    return Ok(false);
                };
                match (delta.kind.as_deref(), part) {
                    (Some("text_delta"), Partial::Text(text)) => {
                        let piece = piece(delta.text);
                        text.push_str(&piece);
                        out.push(StreamEvent::TextDelta(piece));
                    }
                    (Some("thinking_delta"), Partial::Thinking { text, .. }) => {
                        let piece = piece(delta.thinking);
                        text.push_str(&piece);
                        out.push(StreamEvent::ThinkingDelta(piece));
                    }
                    (Some("signature_delta"), Partial::Thinking { signature, .. }) => {
                        signature.push_str(delta.signature.as_deref().unwrap_or(""));
                    }
                    (Some("input_json_delta"), Partial::Tool { arguments, .. }) => {
                        let piece = piece(delta.partial_json);
                        arguments.push_str(&piece);
                        out.push(StreamEvent::ToolCallDelta(piece));
                    }
                    _ => {}
                }
            }
            "message_delta" => {
                if let Some(reason) = wire.delta.and_then(|d| d.stop_reason) {
                    self.stop = Some(reason);
                }
                if let Some(usage) = wire.usage {
                    usage.apply(&mut self.usage);
                }
            }
            "message_stop" => {
                out.push(stream::done(
                    &self.provider,
                    &mut self.model,
                    &mut self.parts,
                    self.usage,
                    stop_reason(self.stop.as_deref()),
                ));
                return Ok(true);
            }
            "error" => {
                return Err(stream::reported_error(
                    &self.provider,
                    self.dialect,
                    event.data,
                ));
            }
            _ => {}
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::common::scan::testing;
    use crate::common::scan::testing::pick;

    fn delta() -> BoxedStrategy<String> {
        let kinds = [
            "\"text_delta\"",
            "\"thinking_delta\"",
            "\"signature_delta\"",
            "\"input_json_delta\"",
            "\"text_delta\"",
            "null",
            "7",
        ];
        let fields = [
            "text",
            "thinking",
            "signature",
            "partial_json",
            "stop_reason",
        ]
        .map(|key| (key, testing::text_value().boxed()));
        let mut known = vec![("type", pick(&kinds))];
        known.extend(fields);
        testing::members(known)
            .prop_map(|m| testing::object(m, ""))
            .boxed()
    }

    fn event() -> impl Strategy<Value = String> {
        let kinds = [
            "\"content_block_delta\"",
            "\"message_delta\"",
            "\"ping\"",
            "null",
        ];
        let members = testing::members(vec![
            ("type", pick(&kinds)),
            ("index", pick(&["0", "3", "0", "1", "null", "1.5", "-1"])),
            (
                "delta",
                prop_oneof![4 => delta(), 1 => Just("null".to_string())].boxed(),
            ),
            ("usage", pick(&["{\"output_tokens\":5}", "null", "null"])),
        ]);
        testing::event_text(members)
    }

    /// The quick reader and serde read every generated event alike.
    #[test]
    fn quick_reads_agree_with_serde() {
        testing::agree_on(event(), 128, |text| testing::agrees::<WireEvent<'_>>(text));
    }

    /// A delta as Anthropic streams it: one piece of text, thinking,
    /// signature or argument JSON, among unknown members.
    fn streamed_delta() -> impl Strategy<Value = String> {
        let delta = pick(&[
            "{\"type\":\"text_delta\",\"text\":\"word \"}",
            "{\"type\":\"thinking_delta\",\"thinking\":\"word \"}",
            "{\"type\":\"signature_delta\",\"signature\":\"word \"}",
            "{\"type\": \"input_json_delta\", \"partial_json\": \"word \"}",
        ]);
        testing::event_text(testing::members_kept(
            vec![
                ("type", pick(&["\"content_block_delta\""])),
                ("index", pick(&["0", "1"])),
                ("delta", delta),
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
            testing::pairs(prop_oneof![3 => streamed_delta(), 1 => event().boxed()]),
            128,
            |(first, second)| {
                testing::repeats_agree::<WireEvent<'_>>(
                    first,
                    second,
                    &mut Repeat::default(),
                    &mut Repeat::default(),
                )
            },
        );
    }

    /// The deltas Anthropic documents for streaming, compact and spaced,
    /// take the quick path (so the fast path is the one that runs).
    #[test]
    fn documented_deltas_take_the_quick_path() {
        let deltas = [
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#,
            r#"{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ing\n\"quoted\""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me think"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"San Fra"}}"#,
        ];
        let start =
            r#"{"type":"message_start","message":{"model":"m","usage":{"input_tokens":3}}}"#;
        testing::assert_paths(&deltas, &[start], |text| {
            testing::agrees::<WireEvent<'_>>(text)
        });
    }
}
