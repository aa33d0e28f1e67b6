//! Chat Completions request bodies as borrowed, typed wire structs.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::value::RawValue;

use crate::common::fragments;
use crate::common::fragments::Fragment;
use crate::common::fragments::Items;
use crate::common::options::ChatOptions;
use crate::common::options::MaxTokensField;
use crate::common::options::TOOL_IMAGES_INTRO;
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
pub(crate) struct ChatBody<'a> {
    model: &'a str,
    messages: Vec<Slot<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ChatTool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    /// Widened as the value path widened it, so the bytes mean the same.
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

#[derive(Serialize)]
struct ChatTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: ChatFunction<'a>,
}

#[derive(Serialize)]
struct ChatFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: Schema<'a>,
}

/// A message serialized once (see `fragments`), or one built for this call.
#[derive(Serialize)]
#[serde(untagged)]
enum Slot<'a> {
    Cached(&'a RawValue),
    Fresh(ChatMessage<'a>),
}

#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum ChatMessage<'a> {
    System {
        content: Cow<'a, str>,
    },
    Developer {
        content: Cow<'a, str>,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        /// `null` when the message is only tool calls.
        content: Option<Cow<'a, str>>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ChatCall<'a>>,
    },
    Tool {
        tool_call_id: &'a str,
        content: Cow<'a, str>,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<ChatPart<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum ChatPart<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: UrlField<'a> },
}

#[derive(Serialize)]
struct UrlField<'a> {
    url: ImageUrl<'a>,
    /// Sent only when it is not the API's default (`auto`): many
    /// compatible servers know no other value.
    #[serde(skip_serializing_if = "Option::is_none")]
    detail: Option<&'static str>,
}

/// The `detail` a Chat image part carries for `model`: none for `auto`.
pub(crate) fn chat_image_detail(model: &str) -> Option<&'static str> {
    Some(wire::openai_image_detail(model)).filter(|detail| *detail != "auto")
}

#[derive(Serialize)]
struct ChatCall<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: CallFunction<'a>,
}

#[derive(Serialize)]
struct CallFunction<'a> {
    name: &'a str,
    arguments: ArgumentsText<'a>,
}

/// The body for `request` to `model` under `options`, with `items` from
/// [`encode_message`] for each of its messages.
pub(crate) fn body<'a>(
    request: &'a Request,
    model: &'a str,
    options: &ChatOptions,
    streaming: bool,
    items: &'a [Option<Items>],
) -> ChatBody<'a> {
    let has_tools = !request.tools.is_empty();
    let tools = request
        .tools
        .iter()
        .map(|tool| ChatTool {
            kind: "function",
            function: ChatFunction {
                name: &tool.name,
                description: &tool.description,
                parameters: Schema(&tool.parameters),
            },
        })
        .collect();
    let tool_choice = has_tools.then_some(match request.tool_choice {
        ToolChoice::Auto => "auto",
        ToolChoice::None => "none",
        ToolChoice::Required => "required",
    });
    let (max_tokens, max_completion_tokens) = match options.max_tokens_field {
        MaxTokensField::MaxTokens => (request.max_output_tokens, None),
        MaxTokensField::MaxCompletionTokens => (None, request.max_output_tokens),
    };
    ChatBody {
        model,
        messages: messages(request, items, chat_image_detail(model)),
        tools,
        tool_choice,
        max_tokens,
        max_completion_tokens,
        temperature: request.temperature.map(f64::from),
        stream: streaming,
        stream_options: (streaming && options.stream_usage).then_some(StreamOptions {
            include_usage: true,
        }),
    }
}

/// Every message's own items stand alone: each can be cached. (The user
/// message that carries a run's tool images depends on its neighbours and
/// is built for each call.)
pub(crate) fn cacheable(_index: usize, _message: &Message) -> bool {
    true
}

/// One message's own wire messages, serialized.
///
/// # Errors
/// `InvalidConfig` if serde cannot write them.
pub(crate) fn encode_message(
    provider: &str,
    message: &Message,
    options: &ChatOptions,
    detail: Option<&'static str>,
) -> Result<Vec<Fragment>, LlmError> {
    own_messages(message, options, detail)
        .iter()
        .map(|item| fragments::fragment(provider, item, false))
        .collect()
}

fn own_messages<'a>(
    message: &'a Message,
    options: &ChatOptions,
    detail: Option<&'static str>,
) -> Vec<ChatMessage<'a>> {
    match message.role {
        Role::System | Role::Developer => {
            let content = wire::joined_text(&message.content);
            vec![
                if message.role == Role::Developer && options.developer_role {
                    ChatMessage::Developer { content }
                } else {
                    ChatMessage::System { content }
                },
            ]
        }
        Role::User => vec![ChatMessage::User {
            content: user_content(&message.content, detail),
        }],
        Role::Assistant => vec![assistant_message(&message.content)],
        Role::Tool => message
            .content
            .iter()
            .filter_map(|block| match block {
                Block::ToolResult {
                    call_id, content, ..
                } => Some(ChatMessage::Tool {
                    tool_call_id: call_id,
                    content: wire::joined_text(content),
                }),
                _ => None,
            })
            .collect(),
    }
}

fn messages<'a>(
    request: &'a Request,
    items: &'a [Option<Items>],
    detail: Option<&'static str>,
) -> Vec<Slot<'a>> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    let mut tool_images: Vec<ChatPart<'a>> = Vec::new();
    for (index, (message, own)) in request.messages.iter().zip(items).enumerate() {
        out.extend(
            own.iter()
                .flat_map(|own| own.iter().map(|f| Slot::Cached(&f.json))),
        );
        if message.role != Role::Tool {
            continue;
        }
        for block in &message.content {
            if let Block::ToolResult { content, .. } = block {
                tool_images.extend(content.iter().filter_map(|b| image_part(b, detail)));
            }
        }
        let next_is_tool = request
            .messages
            .get(index + 1)
            .is_some_and(|next| next.role == Role::Tool);
        if !next_is_tool && !tool_images.is_empty() {
            let mut parts = Vec::with_capacity(tool_images.len() + 1);
            parts.push(ChatPart::Text {
                text: Cow::Borrowed(TOOL_IMAGES_INTRO),
            });
            parts.append(&mut tool_images);
            out.push(Slot::Fresh(ChatMessage::User {
                content: UserContent::Parts(parts),
            }));
        }
    }
    out
}

fn image_part<'a>(block: &'a Block, detail: Option<&'static str>) -> Option<ChatPart<'a>> {
    match block {
        Block::Image { source, .. } => Some(match wire::image_url(source) {
            Some(url) => ChatPart::ImageUrl {
                image_url: UrlField { url, detail },
            },
            None => ChatPart::Text {
                text: Cow::Borrowed(wire::IMAGE_NOT_LOADED),
            },
        }),
        _ => None,
    }
}

/// A user message's content: one string when it holds only text (a
/// checkpoint is several text blocks; many OpenAI-compatible servers,
/// llama.cpp's Python server among them, render chat templates that
/// concatenate `content` as a string and fail on a list of parts), else
/// a list of parts.
fn user_content<'a>(blocks: &'a [Block], detail: Option<&'static str>) -> UserContent<'a> {
    if blocks.iter().all(|b| matches!(b, Block::Text { .. })) {
        return UserContent::Text(wire::joined_text(blocks));
    }
    let parts = blocks
        .iter()
        .filter_map(|block| match block {
            Block::Text { text } => Some(ChatPart::Text {
                text: Cow::Borrowed(text),
            }),
            Block::Image { .. } => image_part(block, detail),
            Block::ToolResult { content, .. } => Some(ChatPart::Text {
                text: wire::joined_text(content),
            }),
            _ => None,
        })
        .collect();
    UserContent::Parts(parts)
}

fn assistant_message(blocks: &[Block]) -> ChatMessage<'_> {
    let text = wire::joined_text(blocks);
    let tool_calls: Vec<ChatCall<'_>> = blocks
        .iter()
        .filter_map(|block| match block {
            Block::ToolCall {
                id,
                name,
                arguments,
            } => Some(ChatCall {
                id,
                kind: "function",
                function: CallFunction {
                    name,
                    arguments: ArgumentsText(arguments),
                },
            }),
            _ => None,
        })
        .collect();
    let content = (!text.is_empty() || tool_calls.is_empty()).then_some(text);
    ChatMessage::Assistant {
        content,
        tool_calls,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_user_message_of_text_blocks_is_one_string() {
        let blocks = vec![
            Block::text("opening"),
            Block::text("body"),
            Block::text("closing"),
        ];
        assert_eq!(
            serde_json::to_value(user_content(&blocks, None)).unwrap(),
            json!("opening\nbody\nclosing")
        );
    }
}
