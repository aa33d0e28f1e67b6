//! Messages API request bodies as borrowed, typed wire structs, with the
//! prompt-cache markers placed on the blocks themselves.

use serde::Serialize;
use serde::Serializer;
use serde::ser::SerializeMap;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::common::fragments;
use crate::common::fragments::Fragment;
use crate::common::fragments::Items;
use crate::common::options::ANTHROPIC;
use crate::common::options::AnthropicOptions;
use crate::common::wire;
use crate::common::wire::EPHEMERAL;
use crate::common::wire::Ephemeral;
use crate::common::wire::Schema;
use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_llm::LlmError;
use abridge_llm::Message;
use abridge_llm::Request;
use abridge_llm::Role;
use abridge_llm::ToolChoice;

/// The whole body of one call.
#[derive(Serialize)]
pub(crate) struct AnthropicBody<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    system: Vec<WireBlock<'a>>,
    messages: Turns<'a>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<TypeTag>,
    /// Widened as the value path widened it, so the bytes mean the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
}

#[derive(Serialize)]
struct TypeTag {
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: Schema<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache_control: Option<Ephemeral>,
}

/// The conversation's turns: every turn's blocks in one buffer, with each
/// turn's role and its range of the buffer. One buffer, not a vector per
/// turn: a history of hundreds of turns would allocate hundreds of times a
/// call, and again each time a tool result merges into the user turn after
/// it.
struct Turns<'a> {
    slots: Vec<Slot<'a>>,
    turns: Vec<Turn>,
}

/// One wire message: its role and where its blocks lie in [`Turns`].
struct Turn {
    role: &'static str,
    blocks: std::ops::Range<usize>,
}

#[derive(Serialize)]
struct WireMessage<'s, 'a> {
    role: &'static str,
    content: &'s [Slot<'a>],
}

impl Serialize for Turns<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.turns.iter().map(|turn| WireMessage {
            role: turn.role,
            content: &self.slots[turn.blocks.clone()],
        }))
    }
}

/// A block serialized once (see `fragments`), remembered by where it came
/// from in case it must be marked; the same block's marked JSON, also
/// kept with the fragment; or one built for this call.
enum Slot<'a> {
    Cached {
        fragment: &'a Fragment,
        message: usize,
        position: usize,
    },
    Marked(&'a RawValue),
    Fresh(WireBlock<'a>),
}

impl Serialize for Slot<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Slot::Cached { fragment, .. } => fragment.json.serialize(serializer),
            Slot::Marked(json) => json.serialize(serializer),
            Slot::Fresh(block) => block.serialize(serializer),
        }
    }
}

impl Slot<'_> {
    fn markable(&self) -> bool {
        match self {
            Slot::Cached { fragment, .. } => fragment.markable,
            // Already marked: another marker would be a second one.
            Slot::Marked(_) => false,
            Slot::Fresh(block) => block.markable(),
        }
    }
}

/// One content block, with or without a cache marker.
pub(crate) struct WireBlock<'a> {
    kind: Kind<'a>,
    cached: bool,
}

enum Kind<'a> {
    Typed(Typed<'a>),
    /// A block this provider wrote, sent back as it came.
    Native(&'a Value),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Typed<'a> {
    Text {
        text: &'a str,
    },
    Image {
        source: Source<'a>,
    },
    Thinking {
        thinking: &'a str,
        signature: &'a str,
    },
    RedactedThinking {
        data: &'a str,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Input<'a>,
    },
    ToolResult {
        tool_use_id: &'a str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        content: Vec<WireBlock<'a>>,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
enum Source<'a> {
    Base64 { media_type: &'a str, data: &'a str },
    Url { url: &'a str },
}

/// Tool input: the arguments when they are an object, else wrapped as
/// `{"arguments": ...}` (the API wants an object).
#[derive(Serialize)]
#[serde(untagged)]
enum Input<'a> {
    Object(&'a Value),
    Wrapped { arguments: &'a Value },
}

#[derive(Serialize)]
struct Marked<'b, 'a> {
    #[serde(flatten)]
    block: &'b Typed<'a>,
    cache_control: Ephemeral,
}

impl Serialize for WireBlock<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match (&self.kind, self.cached) {
            (Kind::Typed(block), false) => block.serialize(serializer),
            (Kind::Typed(block), true) => Marked {
                block,
                cache_control: EPHEMERAL,
            }
            .serialize(serializer),
            (Kind::Native(Value::Object(fields)), cached) => {
                let allowed = input_keys(fields.get("type").and_then(Value::as_str));
                let mut map = serializer.serialize_map(None)?;
                for (key, value) in fields.iter().filter(|(key, _)| {
                    *key != "cache_control"
                        && allowed.is_none_or(|keys| keys.contains(&key.as_str()))
                }) {
                    map.serialize_entry(key, value)?;
                }
                if cached {
                    map.serialize_entry("cache_control", &EPHEMERAL)?;
                }
                map.end()
            }
            // A native item that is not an object has nowhere to carry a
            // marker; it goes as it came.
            (Kind::Native(item), _) => item.serialize(serializer),
        }
    }
}

/// The keys a native block of type `kind` may carry on input, when we
/// know its input shape; `None` sends every key as it came.
///
/// A compaction block comes back with `encrypted_content`, which the
/// Messages API rejects on input ("Extra inputs are not permitted"),
/// although the SDK's request type lists it (anthropic-sdk-python issue
/// 1828): the block goes back with its summary, signature and tool
/// changes only. `cache_control` is ours to add.
fn input_keys(kind: Option<&str>) -> Option<&'static [&'static str]> {
    match kind {
        Some(COMPACTION_BLOCK) => Some(&["type", "content", "signature", "tool_changes"]),
        _ => None,
    }
}

/// The content block type of Anthropic's server-side compaction.
pub(crate) const COMPACTION_BLOCK: &str = "compaction";

/// Whether `message` carries a compaction block of this provider's (a
/// tool message sends only its result, so never one).
fn holds_compaction(message: &Message) -> bool {
    message.role != Role::Tool
        && message.content.iter().any(|block| {
            matches!(block, Block::Native { provider, item }
            if provider == ANTHROPIC && wire::type_of(item) == Some(COMPACTION_BLOCK))
        })
}

/// The `anthropic-beta` flags a request's contents need: a replayed
/// compaction block is read only under the compaction beta.
pub(crate) fn betas(request: &Request) -> Vec<&'static str> {
    let compaction = request.messages.iter().any(|m| holds_compaction(m));
    if compaction {
        vec![crate::common::options::ANTHROPIC_COMPACTION_BETA]
    } else {
        Vec::new()
    }
}

impl<'a> WireBlock<'a> {
    fn typed(block: Typed<'a>) -> Self {
        WireBlock {
            kind: Kind::Typed(block),
            cached: false,
        }
    }

    /// Its `type` on the wire.
    fn type_name(&self) -> Option<&str> {
        match &self.kind {
            Kind::Typed(Typed::Text { .. }) => Some("text"),
            Kind::Typed(Typed::Thinking { .. }) => Some("thinking"),
            Kind::Typed(Typed::RedactedThinking { .. }) => Some("redacted_thinking"),
            Kind::Typed(_) => None,
            Kind::Native(item) => wire::type_of(item),
        }
    }

    /// Cache markers go on any block but reasoning.
    fn markable(&self) -> bool {
        !matches!(self.type_name(), Some("thinking" | "redacted_thinking"))
    }
}

/// Leading system and developer messages become the `system` blocks; every
/// message after them stands alone and can be cached. (Merged turns and
/// cache markers depend on neighbours and are settled for each call.)
pub(crate) fn leading_system(request: &Request) -> usize {
    request
        .messages
        .iter()
        .take_while(|m| matches!(m.role, Role::System | Role::Developer))
        .count()
}

/// One message's blocks, serialized, for a message after the leading
/// system ones.
///
/// # Errors
/// `InvalidConfig` if serde cannot write them.
pub(crate) fn encode_message(provider: &str, message: &Message) -> Result<Vec<Fragment>, LlmError> {
    message_blocks(message)
        .iter()
        .map(|block| fragments::fragment(provider, block, block.markable()))
        .collect()
}

/// The body for `request` to `model` under `options`, with `items` from
/// [`encode_message`] for each message after the leading system ones.
pub(crate) fn body<'a>(
    request: &'a Request,
    model: &'a str,
    options: &AnthropicOptions,
    streaming: bool,
    items: &'a [Option<Items>],
) -> AnthropicBody<'a> {
    let cache = options.prompt_cache;
    let (mut system, mut messages) = split_messages(request, items);
    if cache {
        if let Some(last) = system.last_mut() {
            last.cached = true;
        }
        mark_history(request, &mut messages);
    }
    let mut tools: Vec<WireTool<'a>> = request
        .tools
        .iter()
        .map(|tool| WireTool {
            name: &tool.name,
            description: &tool.description,
            input_schema: Schema(&tool.parameters),
            cache_control: None,
        })
        .collect();
    if let (true, Some(last)) = (cache, tools.last_mut()) {
        last.cache_control = Some(EPHEMERAL);
    }
    let tool_choice = (!request.tools.is_empty()).then_some(TypeTag {
        kind: match request.tool_choice {
            ToolChoice::Auto => "auto",
            ToolChoice::None => "none",
            ToolChoice::Required => "any",
        },
    });
    AnthropicBody {
        model,
        max_tokens: request
            .max_output_tokens
            .unwrap_or(options.default_max_tokens),
        system,
        messages,
        tools,
        tool_choice,
        temperature: request.temperature.map(f64::from),
        stream: streaming,
    }
}

/// Marks the last markable block of the last message and of the last user
/// message before it (at most two markers; with system and tools that is
/// the API's limit of four).
fn mark_history<'a>(request: &'a Request, messages: &mut Turns<'a>) {
    let Turns { slots, turns } = messages;
    let Some((last, before)) = turns.split_last() else {
        return;
    };
    mark_last_block(request, &mut slots[last.blocks.clone()]);
    if let Some(previous) = before.iter().rev().find(|turn| turn.role == "user") {
        mark_last_block(request, &mut slots[previous.blocks.clone()]);
    }
}

/// Marks the last markable block. The marker goes inside the block, so a
/// cached one is built again from its message, once: its marked JSON is
/// kept with its fragment for the calls that resend it marked.
fn mark_last_block<'a>(request: &'a Request, blocks: &mut [Slot<'a>]) {
    let Some(slot) = blocks.iter_mut().rev().find(|b| b.markable()) else {
        return;
    };
    match slot {
        Slot::Fresh(block) => block.cached = true,
        Slot::Marked(_) => {}
        Slot::Cached {
            fragment,
            message,
            position,
        } => {
            let fragment: &'a Fragment = fragment;
            if let Some(json) = fragment.marked.get() {
                *slot = Slot::Marked(json);
                return;
            }
            let rebuilt = request
                .messages
                .get(*message)
                .and_then(|source| message_blocks(source).into_iter().nth(*position));
            let Some(mut block) = rebuilt else {
                return;
            };
            block.cached = true;
            *slot = match serde_json::value::to_raw_value(&block) {
                Ok(json) => Slot::Marked(fragment.marked.get_or_init(|| json)),
                // Left to the body's own serialization, which reports it.
                Err(_) => Slot::Fresh(block),
            };
        }
    }
}

fn media_block(block: &Block) -> Option<WireBlock<'_>> {
    match block {
        Block::Text { text } if !text.is_empty() => Some(WireBlock::typed(Typed::Text { text })),
        Block::Image { source, .. } => Some(WireBlock::typed(match source {
            ImageSource::Base64 { media_type, data } => Typed::Image {
                source: Source::Base64 { media_type, data },
            },
            ImageSource::Url { url } => Typed::Image {
                source: Source::Url { url },
            },
            ImageSource::Blob { .. } => Typed::Text {
                text: wire::IMAGE_NOT_LOADED,
            },
        })),
        // A compaction block this provider wrote, sent back as it came.
        Block::Native { provider, item } if provider == ANTHROPIC => Some(WireBlock {
            kind: Kind::Native(item),
            cached: false,
        }),
        _ => None,
    }
}

fn assistant_block(block: &Block) -> Option<WireBlock<'_>> {
    let typed = match block {
        Block::Thinking {
            thinking,
            signature: Some(signature),
        } => Typed::Thinking {
            thinking,
            signature,
        },
        Block::RedactedThinking { data } => Typed::RedactedThinking { data },
        Block::ToolCall {
            id,
            name,
            arguments,
        } => Typed::ToolUse {
            id,
            name,
            input: if arguments.is_object() {
                Input::Object(arguments)
            } else {
                Input::Wrapped { arguments }
            },
        },
        other => return media_block(other),
    };
    Some(WireBlock::typed(typed))
}

fn tool_result_block(block: &Block) -> Option<WireBlock<'_>> {
    let Block::ToolResult {
        call_id,
        content,
        is_error,
    } = block
    else {
        return None;
    };
    Some(WireBlock::typed(Typed::ToolResult {
        tool_use_id: call_id,
        content: content.iter().filter_map(media_block).collect(),
        is_error: *is_error,
    }))
}

/// A message's wire blocks, for a message after the leading system ones
/// (a later system or developer message is user text, since the API has
/// no system turn mid-conversation).
fn message_blocks(message: &Message) -> Vec<WireBlock<'_>> {
    let block = match message.role {
        Role::System | Role::Developer | Role::User => media_block,
        Role::Assistant => assistant_block,
        Role::Tool => tool_result_block,
    };
    message.content.iter().filter_map(block).collect()
}

/// A message's wire role: the API has only user and assistant turns, so
/// tool results, and system text after the leading system messages, go
/// in user turns.
fn wire_role(role: Role) -> &'static str {
    match role {
        Role::Assistant => "assistant",
        Role::System | Role::Developer | Role::User | Role::Tool => "user",
    }
}

/// System blocks and wire messages, same-role neighbours merged.
fn split_messages<'a>(
    request: &'a Request,
    items: &'a [Option<Items>],
) -> (Vec<WireBlock<'a>>, Turns<'a>) {
    let lead = leading_system(request);
    let system = request.messages[..lead]
        .iter()
        .flat_map(|message| message.content.iter().filter_map(media_block))
        .filter(|b| b.type_name() == Some("text"))
        .collect();
    let blocks = items.iter().flatten().map(|items| items.len()).sum();
    let mut slots: Vec<Slot<'a>> = Vec::with_capacity(blocks);
    let mut turns: Vec<Turn> = Vec::with_capacity(request.messages.len());
    for (index, (message, blocks)) in request.messages.iter().zip(items).enumerate().skip(lead) {
        let Some(blocks) = blocks.as_ref().filter(|b| !b.is_empty()) else {
            continue;
        };
        let role = if holds_compaction(message) {
            // The Messages API reads a compaction block as the
            // assistant's own content, whatever role stored it.
            "assistant"
        } else {
            wire_role(message.role)
        };
        let start = slots.len();
        slots.extend(
            blocks
                .iter()
                .enumerate()
                .map(|(position, fragment)| Slot::Cached {
                    fragment,
                    message: index,
                    position,
                }),
        );
        match turns.last_mut() {
            Some(previous) if previous.role == role => previous.blocks.end = slots.len(),
            _ => turns.push(Turn {
                role,
                blocks: start..slots.len(),
            }),
        }
    }
    (system, Turns { slots, turns })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_marked_native_block_carries_one_marker() {
        let item = json!({"type": "compaction", "content": "x", "cache_control": {"type": "old"}});
        let block = WireBlock {
            kind: Kind::Native(&item),
            cached: true,
        };
        assert_eq!(
            serde_json::to_value(&block).unwrap(),
            json!({"type": "compaction", "content": "x", "cache_control": {"type": "ephemeral"}})
        );
        let text = WireBlock {
            kind: Kind::Typed(Typed::Text { text: "t" }),
            cached: true,
        };
        assert_eq!(
            serde_json::to_value(&text).unwrap(),
            json!({"type": "text", "text": "t", "cache_control": {"type": "ephemeral"}})
        );
    }
}
