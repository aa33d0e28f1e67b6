//! OpenAI Chat Completions (`POST {base}/chat/completions`), the dialect
//! llama.cpp, vLLM, Ollama and most gateways also speak.

use std::collections::HashMap;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;
use serde_json::json;

use super::classify;
use super::config::ProviderConfig;
use super::http::Auth;
use super::http::Http;
use super::sse::SseEvent;
use super::stream;
use super::stream::Decoder;
use super::stream::Partial;
use super::wire;
use crate::client::LlmClient;
use crate::client::Request;
use crate::client::Response;
use crate::client::ResponseStream;
use crate::client::StreamEvent;
use crate::client::ToolChoice;
use crate::error::LlmError;
use crate::message::Block;
use crate::message::Role;
use crate::usage::StopReason;
use crate::usage::Usage;

/// Public OpenAI API base.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// Which body field carries the output cap.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MaxTokensField {
    /// `max_tokens`: what llama.cpp, vLLM, Ollama and most gateways read.
    #[default]
    MaxTokens,
    /// `max_completion_tokens`: what OpenAI's reasoning models require.
    MaxCompletionTokens,
}

impl MaxTokensField {
    /// The field for `model` on a server that may be any OpenAI-compatible
    /// one: `max_completion_tokens` when the model catalog lists the model
    /// as one of OpenAI's reasoning lines (they reject `max_tokens`),
    /// `max_tokens` otherwise (what llama.cpp, vLLM, Ollama and most
    /// gateways read; some ignore the newer field).
    pub fn for_model(model: &str) -> Self {
        if crate::catalog::Catalog::shared()
            .lookup(model)
            .entry
            .is_openai_reasoning()
        {
            MaxTokensField::MaxCompletionTokens
        } else {
            MaxTokensField::MaxTokens
        }
    }
}

/// Dialect switches for servers that differ from OpenAI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatOptions {
    /// Field for the output cap. Default `max_tokens`.
    pub max_tokens_field: MaxTokensField,
    /// Send developer messages with role `developer`; otherwise as `system`
    /// (many chat templates know no developer role). Default false.
    pub developer_role: bool,
    /// Ask for usage at the end of a stream (`stream_options.include_usage`).
    /// Default true.
    pub stream_usage: bool,
}

impl Default for ChatOptions {
    fn default() -> Self {
        ChatOptions {
            max_tokens_field: MaxTokensField::MaxTokens,
            developer_role: false,
            stream_usage: true,
        }
    }
}

impl ChatOptions {
    /// What OpenAI's own API expects.
    pub fn openai() -> Self {
        ChatOptions {
            max_tokens_field: MaxTokensField::MaxCompletionTokens,
            developer_role: true,
            stream_usage: true,
        }
    }
}

/// A Chat Completions client.
///
/// Wire mapping: system and developer messages become `system` (or
/// `developer`) messages; user text and images become content parts
/// (`image_url` with a `data:` URL for inline images); assistant text,
/// and tool calls as `tool_calls` with JSON-text arguments; each tool
/// result a `tool` message (text only: images a tool returned follow the
/// run of tool messages as one user message, since the dialect allows no
/// images in tool messages). Thinking is not sent back (the dialect has no
/// place for it); `reasoning_content` or `reasoning` in answers becomes a
/// thinking block. `ToolChoice::None` sends the tools with
/// `"tool_choice":"none"`.
#[derive(Debug)]
pub struct OpenAiChatClient {
    http: Http,
    options: ChatOptions,
    default_model: Option<String>,
    extra_body: serde_json::Map<String, Value>,
}

impl OpenAiChatClient {
    /// Default provider name.
    pub const NAME: &'static str = "openai-chat";

    /// A client for `config`, posting to `{base_url}/chat/completions`
    /// (base defaults to [`OPENAI_BASE_URL`]).
    ///
    /// # Errors
    /// `InvalidConfig` for a bad URL or header.
    pub fn new(config: ProviderConfig, options: ChatOptions) -> Result<Self, LlmError> {
        let name = config
            .name
            .clone()
            .unwrap_or_else(|| Self::NAME.to_string());
        let http = Http::new(
            &name,
            &config,
            OPENAI_BASE_URL,
            "/chat/completions",
            Auth::Bearer,
            classify::ErrorDialect::OpenAi,
            &[],
        )?;
        Ok(OpenAiChatClient {
            http,
            options,
            default_model: config.default_model,
            extra_body: config.extra_body,
        })
    }

    /// OpenAI's own API with `key` and OpenAI's dialect options.
    ///
    /// # Errors
    /// `InvalidConfig` when the key is not a valid header value.
    pub fn openai(api_key: impl Into<super::config::ApiKey>) -> Result<Self, LlmError> {
        Self::new(
            ProviderConfig::default().with_api_key(api_key),
            ChatOptions::openai(),
        )
    }

    /// The model used when a request names none.
    pub fn default_model(&self) -> Option<&str> {
        self.default_model.as_deref()
    }

    /// The request body exactly as it is sent, for tests and benchmarks.
    ///
    /// # Errors
    /// `InvalidConfig` when no model is named.
    pub fn build_body(&self, request: &Request, streaming: bool) -> Result<Value, LlmError> {
        let model = wire::model_for(self.http.provider(), request, self.default_model.as_deref())?;
        let mut body = json!({
            "model": model,
            "messages": self.messages(request),
        });
        if !request.tools.is_empty() {
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|tool| {
                    json!({"type": "function", "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": wire::schema(&tool.parameters),
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
            let field = match self.options.max_tokens_field {
                MaxTokensField::MaxTokens => "max_tokens",
                MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
            };
            body[field] = json!(max);
        }
        if let Some(temperature) = request.temperature {
            body["temperature"] = json!(temperature);
        }
        body["stream"] = json!(streaming);
        if streaming && self.options.stream_usage {
            body["stream_options"] = json!({"include_usage": true});
        }
        wire::merge_extra(&mut body, &self.extra_body);
        Ok(body)
    }

    fn messages(&self, request: &Request) -> Vec<Value> {
        let mut out = Vec::with_capacity(request.messages.len() + 1);
        let mut tool_images: Vec<Value> = Vec::new();
        for (index, message) in request.messages.iter().enumerate() {
            match message.role {
                Role::System | Role::Developer => {
                    let role = if message.role == Role::Developer && self.options.developer_role {
                        "developer"
                    } else {
                        "system"
                    };
                    out.push(json!({"role": role, "content": wire::joined_text(&message.content)}));
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
                                "content": wire::joined_text(content),
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

    async fn send(
        &self,
        request: &Request,
        streaming: bool,
    ) -> Result<reqwest::Response, LlmError> {
        let body = self.build_body(request, streaming)?;
        let bytes = wire::to_bytes(self.http.provider(), &body)?;
        self.http.post(bytes, request.purpose, streaming).await
    }
}

/// Text sent before images that tool results returned, in the user message
/// that carries them.
pub const TOOL_IMAGES_INTRO: &str = "Images returned by the tool calls above:";

fn image_part(block: &Block) -> Option<Value> {
    match block {
        Block::Image { source, .. } => Some(match wire::image_url(source) {
            Some(url) => json!({"type": "image_url", "image_url": {"url": url}}),
            None => json!({"type": "text", "text": wire::IMAGE_NOT_LOADED}),
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
        return json!(wire::joined_text(blocks));
    }
    let parts: Vec<Value> = blocks
        .iter()
        .filter_map(|block| match block {
            Block::Text { text } => Some(json!({"type": "text", "text": text})),
            Block::Image { .. } => image_part(block),
            Block::ToolResult { content, .. } => {
                Some(json!({"type": "text", "text": wire::joined_text(content)}))
            }
            _ => None,
        })
        .collect();
    Value::Array(parts)
}

fn assistant_message(blocks: &[Block]) -> Value {
    let text = wire::joined_text(blocks);
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
pub(crate) fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(raw) => raw.clone(),
        other => other.to_string(),
    }
}

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

#[derive(Debug, Deserialize)]
struct WireAnswer {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

fn answer_to_response(provider: &str, requested: &str, answer: WireAnswer) -> Response {
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
    let text = content_text(message.content.as_ref());
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
struct ChatDecoder {
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
    fn on_event(&mut self, event: SseEvent, out: &mut Vec<StreamEvent>) -> Result<bool, LlmError> {
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
        let value = stream::event_json(&self.provider, &event.data)?;
        if value.get("error").is_some() {
            return Err(classify::classify_stream_error(
                &self.provider,
                self.dialect,
                &classify::error_from_value(&value),
            ));
        }
        let chunk: WireAnswer = serde_json::from_value(value).map_err(|e| LlmError::Transport {
            provider: self.provider.clone(),
            message: format!("malformed stream chunk ({e})"),
        })?;
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
            let text = content_text(delta.content.as_ref());
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

#[async_trait]
impl LlmClient for OpenAiChatClient {
    fn provider(&self) -> &str {
        self.http.provider()
    }

    async fn complete(&self, request: &Request) -> Result<Response, LlmError> {
        let response = self.send(request, false).await?;
        let value: Value = self.http.read_json(response).await?;
        if value.get("error").is_some_and(|e| !e.is_null()) {
            let mut body = classify::error_from_value(&value);
            body.message = self.http.scrub(body.message);
            return Err(classify::classify_stream_error(
                self.http.provider(),
                self.http.dialect(),
                &body,
            ));
        }
        let answer: WireAnswer = serde_json::from_value(value).map_err(|e| {
            self.http
                .malformed(format!("the answer is not a chat completion ({e})"))
        })?;
        let requested =
            wire::model_for(self.http.provider(), request, self.default_model.as_deref())?;
        Ok(answer_to_response(self.http.provider(), requested, answer))
    }

    async fn stream(&self, request: &Request) -> Result<ResponseStream, LlmError> {
        let requested =
            wire::model_for(self.http.provider(), request, self.default_model.as_deref())?
                .to_string();
        let response = self.send(request, true).await?;
        let decoder = ChatDecoder {
            provider: self.http.provider().to_string(),
            dialect: self.http.dialect(),
            model: requested,
            parts: Vec::new(),
            text_slot: None,
            thinking_slot: None,
            tool_slots: HashMap::new(),
            finish: None,
            usage: Usage::default(),
        };
        Ok(stream::drive(self.http.provider(), response, decoder))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_user_message_of_text_blocks_is_one_string() {
        let blocks = vec![
            Block::text("opening"),
            Block::text("body"),
            Block::text("closing"),
        ];
        assert_eq!(user_content(&blocks), json!("opening\nbody\nclosing"));
    }
}
