//! The encoders as they were before typed wire structs: each request body
//! built as a `serde_json::Value`. Kept only for tests, as the reference the
//! typed encoders must agree with; the clients are asked through their
//! public `build_body` (the value path) and `encode_body` (the bytes sent,
//! through the client's fragment cache).
// Helpers outside `#[test]` functions are test code too; clippy.toml's
// test allowance does not reach them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_llm::Request;
use abridge_llm::Role;
use abridge_llm::ToolChoice;
use abridge_providers::AnthropicClient;
use abridge_providers::AnthropicOptions;
use abridge_providers::ChatOptions;
use abridge_providers::IMAGE_NOT_LOADED;
use abridge_providers::MaxTokensField;
use abridge_providers::OpenAiResponsesClient;
use abridge_providers::ResponsesOptions;
use abridge_providers::TOOL_IMAGES_INTRO;
use serde_json::Value;
use serde_json::json;

fn image_url(source: &ImageSource) -> Option<String> {
    match source {
        ImageSource::Base64 { media_type, data } => {
            Some(format!("data:{media_type};base64,{data}"))
        }
        ImageSource::Url { url } => Some(url.clone()),
        ImageSource::Blob { .. } => None,
    }
}

fn joined_text(blocks: &[Block]) -> String {
    let mut out = String::new();
    for text in blocks.iter().filter_map(Block::as_text) {
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(text);
    }
    out
}

fn schema(parameters: &Value) -> Value {
    if parameters.is_null() {
        json!({"type": "object", "properties": {}})
    } else {
        parameters.clone()
    }
}

fn merge_extra(body: &mut Value, extra: &serde_json::Map<String, Value>) {
    if let Value::Object(map) = body {
        for (key, value) in extra {
            map.insert(key.clone(), value.clone());
        }
    }
}

fn chat(
    request: &Request,
    model: &str,
    options: &ChatOptions,
    extra_body: &serde_json::Map<String, Value>,
    streaming: bool,
) -> Value {
    let mut body = json!({
        "model": model,
        "messages": chat_messages(request, options),
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": schema(&tool.parameters),
                }})
            })
            .collect();
        body["tools"] = Value::Array(tools);
        body["tool_choice"] = json!(match request.tool_choice {
            ToolChoice::Auto => "auto",
            ToolChoice::None => "none",
            ToolChoice::Required => "required",
        });
    }
    if let Some(max) = request.max_output_tokens {
        let field = match options.max_tokens_field {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        };
        body[field] = json!(max);
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(temperature);
    }
    body["stream"] = json!(streaming);
    if streaming && options.stream_usage {
        body["stream_options"] = json!({"include_usage": true});
    }
    merge_extra(&mut body, extra_body);
    body
}

fn chat_messages(request: &Request, options: &ChatOptions) -> Vec<Value> {
    let mut out = Vec::with_capacity(request.messages.len() + 1);
    let mut tool_images: Vec<Value> = Vec::new();
    for (index, message) in request.messages.iter().enumerate() {
        match message.role {
            Role::System | Role::Developer => {
                let role = if message.role == Role::Developer && options.developer_role {
                    "developer"
                } else {
                    "system"
                };
                out.push(json!({"role": role, "content": joined_text(&message.content)}));
            }
            Role::User => {
                out.push(json!({"role": "user", "content": user_content(&message.content)}))
            }
            Role::Assistant => out.push(assistant_message(&message.content)),
            Role::Tool => {
                for block in &message.content {
                    if let Block::ToolResult {
                        call_id, content, ..
                    } = block
                    {
                        out.push(json!({
                            "role": "tool",
                            "tool_call_id": call_id,
                            "content": joined_text(content),
                        }));
                        tool_images.extend(content.iter().filter_map(image_part));
                    }
                }
                let next_is_tool = request
                    .messages
                    .get(index + 1)
                    .is_some_and(|next| next.role == Role::Tool);
                if !next_is_tool && !tool_images.is_empty() {
                    let mut parts = vec![json!({"type": "text", "text": TOOL_IMAGES_INTRO})];
                    parts.append(&mut tool_images);
                    out.push(json!({"role": "user", "content": parts}));
                }
            }
        }
    }
    out
}

fn image_part(block: &Block) -> Option<Value> {
    match block {
        Block::Image { source, .. } => Some(match image_url(source) {
            Some(url) => json!({"type": "image_url", "image_url": {"url": url}}),
            None => json!({"type": "text", "text": IMAGE_NOT_LOADED}),
        }),
        _ => None,
    }
}

/// A user message's content: one string when it holds only text (a
/// checkpoint is several text blocks; many OpenAI-compatible servers,
/// llama.cpp's Python server among them, render chat templates that
/// concatenate `content` as a string and fail on a list of parts), else
/// a list of parts.
fn user_content(blocks: &[Block]) -> Value {
    if blocks.iter().all(|b| matches!(b, Block::Text { .. })) {
        return json!(joined_text(blocks));
    }
    let parts: Vec<Value> = blocks
        .iter()
        .filter_map(|block| match block {
            Block::Text { text } => Some(json!({"type": "text", "text": text})),
            Block::Image { .. } => image_part(block),
            Block::ToolResult { content, .. } => {
                Some(json!({"type": "text", "text": joined_text(content)}))
            }
            _ => None,
        })
        .collect();
    Value::Array(parts)
}

fn assistant_message(blocks: &[Block]) -> Value {
    let text = joined_text(blocks);
    let calls: Vec<Value> = blocks
        .iter()
        .filter_map(|block| match block {
            Block::ToolCall {
                id,
                name,
                arguments,
            } => Some(json!({
                "id": id,
                "type": "function",
                "function": {"name": name, "arguments": arguments_text(arguments)},
            })),
            _ => None,
        })
        .collect();
    let mut message = json!({"role": "assistant"});
    message["content"] = if text.is_empty() && !calls.is_empty() {
        Value::Null
    } else {
        json!(text)
    };
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    message
}

/// Arguments as the JSON text the dialect wants; a string we kept because
/// it was not JSON goes back verbatim.
fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

fn anthropic(
    request: &Request,
    model: &str,
    options: &AnthropicOptions,
    extra_body: &serde_json::Map<String, Value>,
    streaming: bool,
) -> Value {
    let cache = options.prompt_cache;
    let (mut system, mut messages) = split_messages(request);
    if cache {
        if let Some(last) = system.last_mut() {
            last["cache_control"] = ephemeral();
        }
        mark_history(&mut messages);
    }
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_output_tokens.unwrap_or(options.default_max_tokens),
    });
    if !system.is_empty() {
        body["system"] = Value::Array(system);
    }
    body["messages"] = Value::Array(messages);
    if !request.tools.is_empty() {
        let mut tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "name": tool.name,
                    "description": tool.description,
                    "input_schema": schema(&tool.parameters),
                })
            })
            .collect();
        if let (true, Some(last)) = (cache, tools.last_mut()) {
            last["cache_control"] = ephemeral();
        }
        body["tools"] = Value::Array(tools);
        body["tool_choice"] = json!({"type": match request.tool_choice {
            ToolChoice::Auto => "auto",
            ToolChoice::None => "none",
            ToolChoice::Required => "any",
        }});
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(temperature);
    }
    if streaming {
        body["stream"] = json!(true);
    }
    merge_extra(&mut body, extra_body);
    body
}

fn ephemeral() -> Value {
    json!({"type": "ephemeral"})
}

/// Marks the last markable block of the last message and of the last user
/// message before it (at most two markers; with system and tools that is
/// the API's limit of four).
fn mark_history(messages: &mut [Value]) {
    let Some(last) = messages.len().checked_sub(1) else {
        return;
    };
    mark_last_block(&mut messages[last]);
    if let Some(previous) = (0..last).rev().find(|&i| messages[i]["role"] == "user") {
        mark_last_block(&mut messages[previous]);
    }
}

fn mark_last_block(message: &mut Value) {
    if let Some(blocks) = message.get_mut("content").and_then(Value::as_array_mut) {
        let markable = blocks.iter_mut().rev().find(|block| {
            !matches!(
                block.get("type").and_then(Value::as_str),
                Some("thinking" | "redacted_thinking")
            )
        });
        if let Some(block) = markable {
            block["cache_control"] = ephemeral();
        }
    }
}

fn media_block(block: &Block) -> Option<Value> {
    match block {
        Block::Text { text } if !text.is_empty() => Some(json!({"type": "text", "text": text})),
        Block::Image { source, .. } => Some(match source {
            ImageSource::Base64 { media_type, data } => {
                json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}})
            }
            ImageSource::Url { url } => {
                json!({"type": "image", "source": {"type": "url", "url": url}})
            }
            ImageSource::Blob { .. } => json!({"type": "text", "text": IMAGE_NOT_LOADED}),
        }),
        // A compaction block this provider wrote, sent back as it came.
        Block::Native { provider, item } if provider == AnthropicClient::NAME => {
            let mut item = item.clone();
            let compaction = item.get("type").and_then(Value::as_str) == Some("compaction");
            if let Value::Object(fields) = &mut item {
                fields.remove("cache_control");
                if compaction {
                    fields.retain(|key, _| {
                        ["type", "content", "signature", "tool_changes"].contains(&key.as_str())
                    });
                }
            }
            Some(item)
        }
        _ => None,
    }
}

fn assistant_block(block: &Block) -> Option<Value> {
    match block {
        Block::Thinking {
            thinking,
            signature: Some(signature),
        } => Some(json!({"type": "thinking", "thinking": thinking, "signature": signature})),
        Block::RedactedThinking { data } => {
            Some(json!({"type": "redacted_thinking", "data": data}))
        }
        Block::ToolCall {
            id,
            name,
            arguments,
        } => {
            let input = if arguments.is_object() {
                arguments.clone()
            } else {
                json!({"arguments": arguments})
            };
            Some(json!({"type": "tool_use", "id": id, "name": name, "input": input}))
        }
        other => media_block(other),
    }
}

fn tool_result_block(block: &Block) -> Option<Value> {
    let Block::ToolResult {
        call_id,
        content,
        is_error,
    } = block
    else {
        return None;
    };
    let mut result = json!({"type": "tool_result", "tool_use_id": call_id});
    let parts: Vec<Value> = content.iter().filter_map(media_block).collect();
    if !parts.is_empty() {
        result["content"] = Value::Array(parts);
    }
    if *is_error {
        result["is_error"] = json!(true);
    }
    Some(result)
}

/// System blocks and wire messages, same-role neighbours merged.
fn split_messages(request: &Request) -> (Vec<Value>, Vec<Value>) {
    let mut system = Vec::new();
    let mut messages: Vec<Value> = Vec::with_capacity(request.messages.len());
    let mut leading = true;
    for message in &request.messages {
        let (role, blocks): (&str, Vec<Value>) = match message.role {
            Role::System | Role::Developer if leading => {
                system.extend(
                    message
                        .content
                        .iter()
                        .filter_map(media_block)
                        .filter(|b| b["type"] == "text"),
                );
                continue;
            }
            Role::System | Role::Developer | Role::User => (
                "user",
                message.content.iter().filter_map(media_block).collect(),
            ),
            Role::Assistant => (
                "assistant",
                message.content.iter().filter_map(assistant_block).collect(),
            ),
            Role::Tool => (
                "user",
                message
                    .content
                    .iter()
                    .filter_map(tool_result_block)
                    .collect(),
            ),
        };
        leading = false;
        if blocks.is_empty() {
            continue;
        }
        let role = if blocks.iter().any(|b| b["type"] == "compaction") {
            "assistant"
        } else {
            role
        };
        match messages.last_mut() {
            Some(previous) if previous["role"] == role => {
                if let Some(content) = previous["content"].as_array_mut() {
                    content.extend(blocks);
                }
            }
            _ => messages.push(json!({"role": role, "content": blocks})),
        }
    }
    (system, messages)
}

fn responses(
    request: &Request,
    model: &str,
    options: &ResponsesOptions,
    extra_body: &serde_json::Map<String, Value>,
    streaming: bool,
) -> Value {
    let mut body = json!({
        "model": model,
        "input": input_items(request, options.store),
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                json!({
                    "type": "function",
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": schema(&tool.parameters),
                    "strict": false,
                })
            })
            .collect();
        body["tools"] = Value::Array(tools);
        body["tool_choice"] = json!(match request.tool_choice {
            ToolChoice::Auto => "auto",
            ToolChoice::None => "none",
            ToolChoice::Required => "required",
        });
    }
    if let Some(max) = request.max_output_tokens {
        body["max_output_tokens"] = json!(max);
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(temperature);
    }
    body["store"] = json!(options.store);
    if options.includes_encrypted_reasoning(model) {
        body["include"] = json!(["reasoning.encrypted_content"]);
    }
    body["stream"] = json!(streaming);
    merge_extra(&mut body, extra_body);
    body
}

fn input_part(block: &Block) -> Option<Value> {
    match block {
        Block::Text { text } => Some(json!({"type": "input_text", "text": text})),
        Block::Image { source, .. } => Some(match image_url(source) {
            Some(url) => json!({"type": "input_image", "image_url": url, "detail": "auto"}),
            None => json!({"type": "input_text", "text": IMAGE_NOT_LOADED}),
        }),
        _ => None,
    }
}

/// A native item addressed to this provider, verbatim; items for other
/// providers are left out.
fn own_native_item(block: &Block) -> Option<Value> {
    match block {
        Block::Native { provider, item } if provider == OpenAiResponsesClient::NAME => {
            Some(item.clone())
        }
        _ => None,
    }
}

/// A reasoning item this client stored as a thinking signature; without
/// `store`, only one that carries its encrypted content.
fn reasoning_item(signature: Option<&String>, store: bool) -> Option<Value> {
    let value: Value = serde_json::from_str(signature?).ok()?;
    let encrypted = value
        .get("encrypted_content")
        .and_then(Value::as_str)
        .is_some_and(|c| !c.is_empty());
    (value.get("type").and_then(Value::as_str) == Some("reasoning") && (store || encrypted))
        .then_some(value)
}

fn input_items(request: &Request, store: bool) -> Vec<Value> {
    let mut items = Vec::with_capacity(request.messages.len() + 1);
    for message in &request.messages {
        match message.role {
            Role::System | Role::Developer | Role::User => {
                // A replayed native compaction stands in the input as the
                // provider's own items, before whatever text is left.
                items.extend(message.content.iter().filter_map(own_native_item));
                let parts: Vec<Value> = message.content.iter().filter_map(input_part).collect();
                let only_native = parts.is_empty()
                    && message
                        .content
                        .iter()
                        .any(|b| matches!(b, Block::Native { .. }));
                if !only_native {
                    items.push(
                        json!({"type": "message", "role": message.role.as_str(), "content": parts}),
                    );
                }
            }
            Role::Assistant => {
                let mut texts: Vec<Value> = Vec::new();
                let flush = |texts: &mut Vec<Value>, items: &mut Vec<Value>| {
                    if !texts.is_empty() {
                        items.push(json!({"type": "message", "role": "assistant", "content": std::mem::take(texts)}));
                    }
                };
                for block in &message.content {
                    match block {
                        Block::Text { text } => texts
                            .push(json!({"type": "output_text", "text": text, "annotations": []})),
                        Block::Thinking { signature, .. } => {
                            if let Some(item) = reasoning_item(signature.as_ref(), store) {
                                flush(&mut texts, &mut items);
                                items.push(item);
                            }
                        }
                        Block::Native { .. } => {
                            if let Some(item) = own_native_item(block) {
                                flush(&mut texts, &mut items);
                                items.push(item);
                            }
                        }
                        Block::ToolCall {
                            id,
                            name,
                            arguments,
                        } => {
                            flush(&mut texts, &mut items);
                            items.push(json!({
                                "type": "function_call",
                                "call_id": id,
                                "name": name,
                                "arguments": arguments_text(arguments),
                            }));
                        }
                        _ => {}
                    }
                }
                flush(&mut texts, &mut items);
            }
            Role::Tool => {
                for block in &message.content {
                    if let Block::ToolResult {
                        call_id, content, ..
                    } = block
                    {
                        let has_image = content.iter().any(|b| matches!(b, Block::Image { .. }));
                        let output = if has_image {
                            Value::Array(content.iter().filter_map(input_part).collect())
                        } else {
                            json!(joined_text(content))
                        };
                        items.push(json!({"type": "function_call_output", "call_id": call_id, "output": output}));
                    }
                }
            }
        }
    }
    items
}

mod agreement {
    //! The typed encoders and the value reference agree on every request.

    use proptest::prelude::*;
    use serde_json::Value;
    use serde_json::json;

    use std::sync::Arc;

    use abridge_llm::Block;
    use abridge_llm::ImageSource;
    use abridge_llm::Message;
    use abridge_llm::Meta;
    use abridge_llm::Purpose;
    use abridge_llm::Request;
    use abridge_llm::Role;
    use abridge_llm::ToolChoice;
    use abridge_llm::ToolSpec;
    use abridge_providers::AnthropicClient;
    use abridge_providers::AnthropicOptions;
    use abridge_providers::ChatOptions;
    use abridge_providers::MaxTokensField;
    use abridge_providers::OpenAiChatClient;
    use abridge_providers::OpenAiResponsesClient;
    use abridge_providers::ProviderConfig;
    use abridge_providers::ResponsesOptions;

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            "[a-z ]{1,12}",
            Just("quote \" back \\ tab\t nl\n ctl\u{1} é 🦀".to_string()),
        ]
    }

    fn json_value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(json!({"path": "src/a.rs", "n": 3})),
            Just(json!({})),
            Just(json!("{\"broken\": ")),
            Just(json!([1, "two"])),
            Just(json!(7)),
            Just(Value::Null),
        ]
    }

    fn image() -> impl Strategy<Value = Block> {
        prop_oneof![
            Just(ImageSource::Base64 {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into()
            }),
            Just(ImageSource::Url {
                url: "https://example.com/a.png".into()
            }),
            Just(ImageSource::Blob {
                media_type: "image/png".into(),
                sha256: "ab".repeat(32),
                len: 12,
            }),
        ]
        .prop_map(|source| Block::Image {
            source,
            width: None,
            height: None,
        })
    }

    fn native() -> impl Strategy<Value = Block> {
        (
            prop_oneof![Just("openai-responses"), Just("anthropic"), Just("other")],
            prop_oneof![
                Just(json!({"type": "compaction", "id": "cmp_1", "encrypted_content": "zz"})),
                Just(json!({"type": "text", "text": "native text"})),
                Just(json!({"type": "thinking", "thinking": "t", "signature": "s"})),
                Just(json!({"type": "compaction", "cache_control": {"type": "old"}})),
            ],
        )
            .prop_map(|(provider, item)| Block::Native {
                provider: provider.to_string(),
                item,
            })
    }

    fn signature() -> impl Strategy<Value = Option<String>> {
        prop_oneof![
            Just(None),
            Just(Some("sig-abc".to_string())),
            Just(Some(
                json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gA"})
                    .to_string()
            )),
            Just(Some(json!({"type": "reasoning", "id": "rs_2", "summary": []}).to_string())),
            Just(Some("[\"reasoning\"]".to_string())),
            Just(Some("{\"type\":\"other\"}".to_string())),
        ]
    }

    fn plain_block() -> impl Strategy<Value = Block> {
        prop_oneof![
            4 => text().prop_map(|text| Block::Text { text }),
            1 => image(),
            1 => native(),
        ]
    }

    fn block() -> impl Strategy<Value = Block> {
        prop_oneof![
            4 => plain_block(),
            1 => (text(), signature()).prop_map(|(thinking, signature)| Block::Thinking { thinking, signature }),
            1 => "[a-z]{0,6}".prop_map(|data| Block::RedactedThinking { data }),
            2 => ("call_[0-9]", "[a-z]{1,5}", json_value()).prop_map(|(id, name, arguments)| Block::ToolCall { id, name, arguments }),
            2 => tool_result(),
        ]
    }

    fn tool_result() -> impl Strategy<Value = Block> {
        (
            "call_[0-9]",
            proptest::collection::vec(plain_block(), 0..3),
            any::<bool>(),
        )
            .prop_map(|(call_id, content, is_error)| Block::ToolResult {
                call_id,
                content,
                is_error,
            })
    }

    fn message() -> impl Strategy<Value = Message> {
        (
            prop_oneof![
                Just(Role::System),
                Just(Role::Developer),
                Just(Role::User),
                Just(Role::Assistant),
                Just(Role::Tool),
            ],
            proptest::collection::vec(block(), 0..4),
        )
            .prop_map(|(role, content)| Message {
                role,
                content,
                meta: Meta::default(),
            })
    }

    fn request() -> impl Strategy<Value = Request> {
        (
            proptest::collection::vec(message(), 0..8),
            proptest::collection::vec(("[a-z]{1,6}", text(), json_value()), 0..3),
            0..3u8,
            proptest::option::of(1..9000u32),
            proptest::option::of(prop_oneof![Just(0.2f32), Just(1.0f32), Just(0.7f32)]),
        )
            .prop_map(|(messages, tools, choice, max, temperature)| {
                let mut request = Request::new("m-1", messages, Purpose::Turn);
                request.tools = tools
                    .into_iter()
                    .map(|(name, description, parameters)| ToolSpec {
                        name,
                        description,
                        parameters,
                    })
                    .collect();
                request.tool_choice =
                    [ToolChoice::Auto, ToolChoice::None, ToolChoice::Required][usize::from(choice)];
                request.max_output_tokens = max;
                request.temperature = temperature;
                request
            })
    }

    fn extra(with: bool) -> serde_json::Map<String, Value> {
        let mut map = serde_json::Map::new();
        if with {
            map.insert("temperature".into(), json!(1));
            map.insert("seed".into(), json!([1, 2]));
        }
        map
    }

    /// A client's configuration named `p` with `extra` merged into every
    /// body.
    fn config(extra: &serde_json::Map<String, Value>) -> ProviderConfig {
        let mut config = ProviderConfig::new("http://127.0.0.1:9").with_name("p");
        config.extra_body = extra.clone();
        config
    }

    /// The body as sent (bytes through the client's fragment cache),
    /// checked against the value path.
    fn sent(bytes: &[u8], as_value: &Value) -> Value {
        let from_bytes: Value = serde_json::from_slice(bytes).unwrap();
        assert_eq!(&from_bytes, as_value, "bytes and build_body disagree");
        from_bytes
    }

    /// The request; the same messages shared again with one more message
    /// after them (the next turn); and that turn without its first message
    /// (a compaction dropped the head, so every message moved).
    fn turns(request: &Request) -> [Request; 3] {
        let mut next = request.clone();
        next.messages.push(Arc::new(Message::user("next turn")));
        let mut moved = next.clone();
        moved.messages.remove(0);
        [request.clone(), next, moved]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn chat_agrees(request in request(), developer in any::<bool>(), completion in any::<bool>(),
                       usage in any::<bool>(), streaming in any::<bool>(), with_extra in any::<bool>()) {
            let options = ChatOptions {
                max_tokens_field: if completion { MaxTokensField::MaxCompletionTokens } else { MaxTokensField::MaxTokens },
                developer_role: developer,
                stream_usage: usage,
            };
            let extra = extra(with_extra);
            let client = OpenAiChatClient::new(config(&extra), options.clone()).unwrap();
            for request in turns(&request).iter().chain(&turns(&request)) {
                let typed = sent(&client.encode_body(request, streaming).unwrap(), &client.build_body(request, streaming).unwrap());
                prop_assert_eq!(typed, super::chat(request, "m-1", &options, &extra, streaming));
            }
        }

        #[test]
        fn responses_agrees(request in request(), store in any::<bool>(), include in proptest::option::of(any::<bool>()),
                            streaming in any::<bool>(), with_extra in any::<bool>()) {
            let options = ResponsesOptions { store, include_encrypted_reasoning: include };
            let extra = extra(with_extra);
            let client = OpenAiResponsesClient::new(config(&extra), options.clone()).unwrap();
            for request in turns(&request).iter().chain(&turns(&request)) {
                let typed = sent(&client.encode_body(request, streaming).unwrap(), &client.build_body(request, streaming).unwrap());
                prop_assert_eq!(typed, super::responses(request, "m-1", &options, &extra, streaming));
            }
        }

        #[test]
        fn anthropic_agrees(request in request(), cache in any::<bool>(), streaming in any::<bool>(), with_extra in any::<bool>()) {
            let options = AnthropicOptions { default_max_tokens: 4096, prompt_cache: cache };
            let extra = extra(with_extra);
            let client = AnthropicClient::new(config(&extra), options.clone()).unwrap();
            for request in turns(&request).iter().chain(&turns(&request)) {
                let typed = sent(&client.encode_body(request, streaming).unwrap(), &client.build_body(request, streaming).unwrap());
                prop_assert_eq!(typed, super::anthropic(request, "m-1", &options, &extra, streaming));
            }
        }
    }
}
