//! Anthropic Messages streams: the events, read straight from their bytes,
//! and the decoder that assembles them.

use std::borrow::Cow;

use serde::Deserialize;

use crate::common::classify;
use crate::common::sse::SseEvent;
use crate::common::stream;
use crate::common::stream::Decoder;
use crate::common::stream::Partial;
use abridge_llm::LlmError;
use abridge_llm::StopReason;
use abridge_llm::StreamEvent;
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
        }
    }
}

impl Decoder for AnthropicDecoder {
    fn on_event(
        &mut self,
        event: SseEvent<'_>,
        out: &mut stream::Out<'_>,
    ) -> Result<bool, LlmError> {
        let wire: WireEvent<'_> = stream::parse_event(&self.provider, event.data)?;
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
