//! Responses API request bodies as borrowed, typed wire structs.

use std::borrow::Cow;

use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::common::fragments;
use crate::common::fragments::Fragment;
use crate::common::fragments::Items;
use crate::common::options::OPENAI_RESPONSES;
use crate::common::options::ResponsesOptions;
use crate::common::wire;
use crate::common::wire::ArgumentsText;
use crate::common::wire::ImageUrl;
use crate::common::wire::Schema;
use abridge_llm::Block;
use abridge_llm::LlmError;
use abridge_llm::Message;
use abridge_llm::Request;
use abridge_llm::Role;
use abridge_llm::ToolChoice;

/// The whole body of one call.
#[derive(Serialize)]
pub(crate) struct ResponsesBody<'a> {
    model: &'a str,
    /// Every message's items, each serialized once (see `fragments`).
    input: Vec<&'a RawValue>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<FunctionTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    /// Widened as the value path widened it, so the bytes mean the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    store: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    include: Option<[&'static str; 1]>,
    stream: bool,
}

#[derive(Serialize)]
struct FunctionTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'a str,
    description: &'a str,
    parameters: Schema<'a>,
    strict: bool,
}

/// One input item: ours, or a provider item replayed verbatim.
#[derive(Serialize)]
#[serde(untagged)]
enum Item<'a> {
    Typed(TypedItem<'a>),
    Native(&'a Value),
    Raw(&'a RawValue),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum TypedItem<'a> {
    Message {
        role: &'static str,
        content: Vec<Part<'a>>,
    },
    FunctionCall {
        call_id: &'a str,
        name: &'a str,
        arguments: ArgumentsText<'a>,
    },
    FunctionCallOutput {
        call_id: &'a str,
        output: Output<'a>,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum Output<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<Part<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part<'a> {
    InputText {
        text: &'a str,
    },
    InputImage {
        image_url: ImageUrl<'a>,
        detail: &'static str,
    },
    OutputText {
        text: &'a str,
        annotations: [(); 0],
    },
}

/// The body for `request` to `model` under `options`, with `items` from
/// [`encode_message`] for each of its messages.
pub(crate) fn body<'a>(
    request: &'a Request,
    model: &'a str,
    options: &ResponsesOptions,
    streaming: bool,
    items: &'a [Option<Items>],
) -> ResponsesBody<'a> {
    let tools = request
        .tools
        .iter()
        .map(|tool| FunctionTool {
            kind: "function",
            name: &tool.name,
            description: &tool.description,
            parameters: Schema(&tool.parameters),
            strict: false,
        })
        .collect();
    let tool_choice = (!request.tools.is_empty()).then_some(match request.tool_choice {
        ToolChoice::Auto => "auto",
        ToolChoice::None => "none",
        ToolChoice::Required => "required",
    });
    ResponsesBody {
        model,
        input: items
            .iter()
            .flatten()
            .flat_map(|items| items.iter().map(|f| &*f.json))
            .collect(),
        tools,
        tool_choice,
        max_output_tokens: request.max_output_tokens,
        temperature: request.temperature.map(f64::from),
        store: options.store,
        include: options
            .includes_encrypted_reasoning(model)
            .then_some(["reasoning.encrypted_content"]),
        stream: streaming,
    }
}

fn input_part<'a>(block: &'a Block, detail: &'static str) -> Option<Part<'a>> {
    match block {
        Block::Text { text } => Some(Part::InputText { text }),
        Block::Image { source, .. } => Some(match wire::image_url(source) {
            Some(image_url) => Part::InputImage { image_url, detail },
            None => Part::InputText {
                text: wire::IMAGE_NOT_LOADED,
            },
        }),
        _ => None,
    }
}

/// A native item addressed to this provider, verbatim; items for other
/// providers are left out.
fn own_native_item(block: &Block) -> Option<Item<'_>> {
    match block {
        Block::Native { provider, item } if provider == OPENAI_RESPONSES => {
            Some(Item::Native(item))
        }
        _ => None,
    }
}

/// The `type` of a JSON object, and its `encrypted_content` if any.
#[derive(Deserialize)]
struct ReasoningHead<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    encrypted_content: Option<Cow<'a, str>>,
}

/// A reasoning item this client stored as a thinking signature, sent as
/// the JSON text it was stored as.
///
/// Under `store: false` (`stored` false) only an item carrying its
/// `encrypted_content` goes back: without it the API looks the item up by
/// id among stored responses, finds none and fails the whole request
/// ("Item with id 'rs_...' not found"). That happens when the reasoning
/// came from a model the catalog did not know to ask encrypted content
/// for.
fn reasoning_item(signature: Option<&String>, stored: bool) -> Option<Item<'_>> {
    let raw: &RawValue = serde_json::from_str(signature?).ok()?;
    if !raw.get().starts_with('{') {
        return None;
    }
    let head: ReasoningHead<'_> = serde_json::from_str(raw.get()).ok()?;
    let readable = stored || head.encrypted_content.is_some_and(|c| !c.is_empty());
    (head.kind.as_deref() == Some("reasoning") && readable).then_some(Item::Raw(raw))
}

/// Every message of the dialect stands alone: each can be cached.
pub(crate) fn cacheable(_index: usize, _message: &Message) -> bool {
    true
}

/// One message's input items under `options`, images at `detail` (see
/// [`wire::openai_image_detail`]), serialized.
///
/// # Errors
/// `InvalidConfig` if serde cannot write them.
pub(crate) fn encode_message(
    provider: &str,
    message: &Message,
    options: &ResponsesOptions,
    detail: &'static str,
) -> Result<Vec<Fragment>, LlmError> {
    message_items(message, options.store, detail)
        .iter()
        .map(|item| fragments::fragment(provider, item, false))
        .collect()
}

fn message_items<'a>(message: &'a Message, stored: bool, detail: &'static str) -> Vec<Item<'a>> {
    let mut items = Vec::new();
    match message.role {
        Role::System | Role::Developer | Role::User => {
            // A replayed native compaction stands in the input as the
            // provider's own items, before whatever text is left.
            items.extend(message.content.iter().filter_map(own_native_item));
            let content: Vec<Part<'_>> = message
                .content
                .iter()
                .filter_map(|b| input_part(b, detail))
                .collect();
            let only_native = content.is_empty()
                && message
                    .content
                    .iter()
                    .any(|b| matches!(b, Block::Native { .. }));
            if !only_native {
                items.push(Item::Typed(TypedItem::Message {
                    role: message.role.as_str(),
                    content,
                }));
            }
        }
        Role::Assistant => assistant_items(&message.content, stored, &mut items),
        Role::Tool => {
            for block in &message.content {
                if let Block::ToolResult {
                    call_id, content, ..
                } = block
                {
                    let has_image = content.iter().any(|b| matches!(b, Block::Image { .. }));
                    let output = if has_image {
                        Output::Parts(
                            content
                                .iter()
                                .filter_map(|b| input_part(b, detail))
                                .collect(),
                        )
                    } else {
                        Output::Text(wire::joined_text(content))
                    };
                    items.push(Item::Typed(TypedItem::FunctionCallOutput {
                        call_id,
                        output,
                    }));
                }
            }
        }
    }
    items
}

/// An assistant message's items: runs of text as `message` items, with
/// reasoning, native items and calls between them in order.
fn assistant_items<'a>(blocks: &'a [Block], stored: bool, items: &mut Vec<Item<'a>>) {
    let mut texts: Vec<Part<'a>> = Vec::new();
    let flush = |texts: &mut Vec<Part<'a>>, items: &mut Vec<Item<'a>>| {
        if !texts.is_empty() {
            items.push(Item::Typed(TypedItem::Message {
                role: "assistant",
                content: std::mem::take(texts),
            }));
        }
    };
    for block in blocks {
        let standalone = match block {
            Block::Text { text } => {
                texts.push(Part::OutputText {
                    text,
                    annotations: [],
                });
                None
            }
            Block::Thinking { signature, .. } => reasoning_item(signature.as_ref(), stored),
            Block::Native { .. } => own_native_item(block),
            Block::ToolCall {
                id,
                name,
                arguments,
            } => Some(Item::Typed(TypedItem::FunctionCall {
                call_id: id,
                name,
                arguments: ArgumentsText(arguments),
            })),
            _ => None,
        };
        if let Some(item) = standalone {
            flush(&mut texts, items);
            items.push(item);
        }
    }
    flush(&mut texts, items);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn items_json(request: &Request) -> Vec<Value> {
        request
            .messages
            .iter()
            .flat_map(|message| message_items(message, false, "auto"))
            .map(|item| serde_json::to_value(&item).unwrap())
            .collect()
    }

    #[test]
    fn reasoning_round_trips_through_the_signature() {
        let item = json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "plan"}], "encrypted_content": "gAAA"});
        let mut message = abridge_llm::Message::assistant("");
        message.content = vec![Block::Thinking {
            thinking: "plan".into(),
            signature: Some(item.to_string()),
        }];
        let request = Request::new("m", vec![message], abridge_llm::Purpose::Turn);
        assert_eq!(items_json(&request), vec![item]);
    }

    #[test]
    fn a_signature_that_is_not_a_reasoning_object_is_not_sent() {
        for signature in [
            "[\"reasoning\"]",
            "not json",
            "{\"type\":\"other\"}",
            "\"x\"",
        ] {
            assert!(
                reasoning_item(Some(&signature.to_string()), true).is_none(),
                "{signature}"
            );
        }
    }

    #[test]
    fn native_items_go_out_verbatim_only_to_their_own_provider() {
        let kept = json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix the parser"}]});
        let compaction = json!({"type": "compaction", "id": "cmp_1", "encrypted_content": "zzz"});
        let native = |provider: &str, item: &Value| Block::Native {
            provider: provider.to_string(),
            item: item.clone(),
        };
        let mut checkpoint = abridge_llm::Message::user("");
        checkpoint.content = vec![
            native(OPENAI_RESPONSES, &kept),
            native(OPENAI_RESPONSES, &compaction),
            native("anthropic", &json!({"type": "compaction", "content": "x"})),
        ];
        let request = Request::new(
            "m",
            vec![checkpoint, abridge_llm::Message::user("go on")],
            abridge_llm::Purpose::Turn,
        );
        let items = items_json(&request);
        assert_eq!(items.len(), 3, "{items:#?}");
        assert_eq!(items[0], kept);
        assert_eq!(items[1], compaction);
        assert_eq!(items[2]["content"][0]["text"], "go on");
    }
}
