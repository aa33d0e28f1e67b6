//! Fixtures shared by the suites: a conversation, requests for each
//! purpose, each provider's canned answers, and a one-line-per-message
//! renderer for request snapshots.

use std::sync::Arc;

use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_llm::LlmClient;
use abridge_llm::Message;
use abridge_llm::Purpose;
use abridge_llm::Request;
use abridge_llm::Role;
use abridge_llm::ToolChoice;
use abridge_llm::ToolSpec;
use abridge_providers::AnthropicClient;
use abridge_providers::AnthropicOptions;
use abridge_providers::ChatOptions;
use abridge_providers::OpenAiChatClient;
use abridge_providers::OpenAiResponsesClient;
use abridge_providers::ProviderConfig;
use abridge_providers::ResponsesOptions;
use serde_json::Value;
use serde_json::json;

/// The key every test client uses; no output may contain it.
pub(crate) const TEST_KEY: &str = "sk-test-SECRET-0123456789abcdef";

/// Header that carries the purpose in tests.
pub(crate) const PURPOSE_HEADER: &str = "x-abridge-purpose";

/// The instruction appended last for a compaction (test text, not our
/// prompt file).
pub(crate) const SUMMARY_INSTRUCTION: &str = "Summarize the conversation above as a checkpoint.";

/// The instruction appended last for a handoff.
pub(crate) const HANDOFF_INSTRUCTION: &str =
    "Write a handoff document for the next context window.";

/// The provider dialects under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Chat,
    Responses,
    Anthropic,
}

pub(crate) const KINDS: [Kind; 3] = [Kind::Chat, Kind::Responses, Kind::Anthropic];

pub(crate) const PURPOSES: [Purpose; 4] = [
    Purpose::Turn,
    Purpose::Compaction,
    Purpose::Handoff,
    Purpose::BranchSummary,
];

pub(crate) fn purpose_name(purpose: Purpose) -> &'static str {
    match purpose {
        Purpose::Turn => "turn",
        Purpose::Compaction => "compaction",
        Purpose::BranchSummary => "branch_summary",
        Purpose::Handoff => "handoff",
    }
}

fn sse(events: &[(&str, Value)]) -> String {
    let mut out = String::new();
    for (name, data) in events {
        if !name.is_empty() {
            out.push_str(&format!("event: {name}\n"));
        }
        out.push_str(&format!("data: {data}\n\n"));
    }
    out
}

impl Kind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Chat => "openai_chat",
            Kind::Responses => "openai_responses",
            Kind::Anthropic => "anthropic",
        }
    }

    pub(crate) fn path(self) -> &'static str {
        match self {
            Kind::Chat => "/v1/chat/completions",
            Kind::Responses => "/v1/responses",
            Kind::Anthropic => "/v1/messages",
        }
    }

    pub(crate) fn config(self, uri: &str) -> ProviderConfig {
        let base = match self {
            Kind::Anthropic => uri.to_string(),
            _ => format!("{uri}/v1"),
        };
        ProviderConfig::new(base)
            .with_api_key(TEST_KEY)
            .with_purpose_header(PURPOSE_HEADER)
    }

    pub(crate) fn client_with(self, config: ProviderConfig) -> Arc<dyn LlmClient> {
        match self {
            Kind::Chat => Arc::new(OpenAiChatClient::new(config, ChatOptions::default()).unwrap()),
            Kind::Responses => {
                Arc::new(OpenAiResponsesClient::new(config, ResponsesOptions::default()).unwrap())
            }
            Kind::Anthropic => {
                Arc::new(AnthropicClient::new(config, AnthropicOptions::default()).unwrap())
            }
        }
    }

    pub(crate) fn client(self, uri: &str) -> Arc<dyn LlmClient> {
        self.client_with(self.config(uri))
    }

    /// A finished answer with `text`, 200 uncached + 1000 cached input
    /// tokens and 30 output tokens.
    pub(crate) fn ok_json(self, text: &str) -> Value {
        match self {
            Kind::Chat => json!({
                "id": "chatcmpl-1", "object": "chat.completion", "model": "m-served",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1200, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 1000}}
            }),
            Kind::Responses => json!({
                "id": "resp_1", "object": "response", "model": "m-served", "status": "completed",
                "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                            "content": [{"type": "output_text", "text": text, "annotations": []}]}],
                "usage": {"input_tokens": 1200, "input_tokens_details": {"cached_tokens": 1000}, "output_tokens": 30}
            }),
            Kind::Anthropic => json!({
                "id": "msg_1", "type": "message", "role": "assistant", "model": "m-served",
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 200, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 0, "output_tokens": 30}
            }),
        }
    }

    /// An answer that calls `bash {"cmd":"ls"}` instead of writing text.
    pub(crate) fn tool_call_json(self) -> Value {
        match self {
            Kind::Chat => json!({
                "model": "m-served",
                "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
                    "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "bash", "arguments": "{\"cmd\":\"ls\"}"}}]}}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5}
            }),
            Kind::Responses => json!({
                "model": "m-served", "status": "completed",
                "output": [{"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "bash", "arguments": "{\"cmd\":\"ls\"}"}],
                "usage": {"input_tokens": 10, "output_tokens": 5}
            }),
            Kind::Anthropic => json!({
                "type": "message", "role": "assistant", "model": "m-served",
                "content": [{"type": "tool_use", "id": "call_9", "name": "bash", "input": {"cmd": "ls"}}],
                "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}
            }),
        }
    }

    /// An answer cut by the output limit.
    pub(crate) fn max_tokens_json(self) -> Value {
        let mut value = self.ok_json("The summary was cut");
        match self {
            Kind::Chat => value["choices"][0]["finish_reason"] = json!("length"),
            Kind::Responses => {
                value["status"] = json!("incomplete");
                value["incomplete_details"] = json!({"reason": "max_output_tokens"});
            }
            Kind::Anthropic => value["stop_reason"] = json!("max_tokens"),
        }
        value
    }

    /// A streamed answer: "Sum" + "mary." then the terminal event.
    pub(crate) fn sse_ok(self) -> String {
        match self {
            Kind::Chat => {
                let chunk = |delta: Value, finish: Value| json!({"id": "c", "model": "m-served", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
                let mut out = sse(&[
                    (
                        "",
                        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
                    ),
                    ("", chunk(json!({"content": "Sum"}), Value::Null)),
                    ("", chunk(json!({"content": "mary."}), Value::Null)),
                    ("", chunk(json!({}), json!("stop"))),
                    (
                        "",
                        json!({"id": "c", "model": "m-served", "choices": [], "usage": {"prompt_tokens": 1200, "completion_tokens": 30, "prompt_tokens_details": {"cached_tokens": 1000}}}),
                    ),
                ]);
                out.push_str("data: [DONE]\n\n");
                out
            }
            Kind::Responses => {
                let mut done = self.ok_json("Summary.");
                done["status"] = json!("completed");
                sse(&[
                    (
                        "response.created",
                        json!({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress", "output": []}}),
                    ),
                    (
                        "response.output_item.added",
                        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
                    ),
                    (
                        "response.output_text.delta",
                        json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "Sum"}),
                    ),
                    (
                        "response.output_text.delta",
                        json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "delta": "mary."}),
                    ),
                    (
                        "response.output_item.done",
                        json!({"type": "response.output_item.done", "output_index": 0, "item": done["output"][0].clone()}),
                    ),
                    (
                        "response.completed",
                        json!({"type": "response.completed", "response": done}),
                    ),
                ])
            }
            Kind::Anthropic => sse(&[
                (
                    "message_start",
                    json!({"type": "message_start", "message": {"id": "msg_1", "model": "m-served", "role": "assistant", "content": [],
                    "usage": {"input_tokens": 200, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 0, "output_tokens": 1}}}),
                ),
                (
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ),
                ("ping", json!({"type": "ping"})),
                (
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Sum"}}),
                ),
                (
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "mary."}}),
                ),
                (
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": 0}),
                ),
                (
                    "message_delta",
                    json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 30}}),
                ),
                ("message_stop", json!({"type": "message_stop"})),
            ]),
        }
    }

    /// A streamed answer that calls `bash {"cmd":"ls"}` in two argument
    /// pieces.
    pub(crate) fn sse_tool_call(self) -> String {
        match self {
            Kind::Chat => {
                let chunk = |delta: Value, finish: Value| json!({"model": "m-served", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
                let mut out = sse(&[
                    (
                        "",
                        chunk(
                            json!({"tool_calls": [{"index": 0, "id": "call_9", "type": "function", "function": {"name": "bash", "arguments": ""}}]}),
                            Value::Null,
                        ),
                    ),
                    (
                        "",
                        chunk(
                            json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"cmd\":"}}]}),
                            Value::Null,
                        ),
                    ),
                    (
                        "",
                        chunk(
                            json!({"tool_calls": [{"index": 0, "function": {"arguments": "\"ls\"}"}}]}),
                            Value::Null,
                        ),
                    ),
                    ("", chunk(json!({}), json!("tool_calls"))),
                ]);
                out.push_str("data: [DONE]\n\n");
                out
            }
            Kind::Responses => {
                let done = self.tool_call_json();
                sse(&[
                    (
                        "response.output_item.added",
                        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "bash", "arguments": ""}}),
                    ),
                    (
                        "response.function_call_arguments.delta",
                        json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{\"cmd\":"}),
                    ),
                    (
                        "response.function_call_arguments.delta",
                        json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "\"ls\"}"}),
                    ),
                    (
                        "response.output_item.done",
                        json!({"type": "response.output_item.done", "output_index": 0, "item": done["output"][0].clone()}),
                    ),
                    (
                        "response.completed",
                        json!({"type": "response.completed", "response": done}),
                    ),
                ])
            }
            Kind::Anthropic => sse(&[
                (
                    "message_start",
                    json!({"type": "message_start", "message": {"model": "m-served", "usage": {"input_tokens": 10, "output_tokens": 1}}}),
                ),
                (
                    "content_block_start",
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "call_9", "name": "bash", "input": {}}}),
                ),
                (
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"cmd\":"}}),
                ),
                (
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "\"ls\"}"}}),
                ),
                (
                    "content_block_stop",
                    json!({"type": "content_block_stop", "index": 0}),
                ),
                (
                    "message_delta",
                    json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}}),
                ),
                ("message_stop", json!({"type": "message_stop"})),
            ]),
        }
    }

    /// A streamed answer cut by the output limit.
    pub(crate) fn sse_max_tokens(self) -> String {
        match self {
            Kind::Chat => self.sse_ok().replace("\"stop\"", "\"length\""),
            Kind::Responses => {
                let body = self.max_tokens_json();
                sse(&[
                    (
                        "response.output_text.delta",
                        json!({"type": "response.output_text.delta", "output_index": 0, "delta": "The summary was cut"}),
                    ),
                    (
                        "response.incomplete",
                        json!({"type": "response.incomplete", "response": body}),
                    ),
                ])
            }
            Kind::Anthropic => self.sse_ok().replace("\"end_turn\"", "\"max_tokens\""),
        }
    }

    /// The first events of `sse_ok`, then the connection closes.
    pub(crate) fn sse_cut(self) -> String {
        let full = self.sse_ok();
        let events: Vec<&str> = full.split_inclusive("\n\n").collect();
        let keep = events.len() / 2;
        let mut out = events[..keep].concat();
        out.push_str("data: {\"half\":"); // an event cut mid-line
        out
    }

    /// A stream whose second event is not JSON.
    pub(crate) fn sse_malformed(self) -> String {
        let full = self.sse_ok();
        let events: Vec<&str> = full.split_inclusive("\n\n").collect();
        format!(
            "{}data: {{not json at all\n\n{}",
            events[0],
            events[1..].concat()
        )
    }

    /// Each provider's own words for "the prompt does not fit".
    pub(crate) fn overflow_bodies(self) -> Vec<(u16, Value)> {
        match self {
            Kind::Chat => vec![
                (
                    400,
                    json!({"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 131072 tokens. Please reduce the length of the messages.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
                ),
                (
                    400,
                    json!({"error": {"code": 400, "message": "request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 9000, "n_ctx": 8192}}),
                ),
                (
                    400,
                    json!({"error": {"message": "Requested tokens (9000) exceed context window of 2048", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}),
                ),
                (
                    400,
                    json!({"object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion).", "type": "BadRequestError", "code": 400}),
                ),
                (
                    413,
                    json!({"error": {"message": "too many tokens", "type": "request_too_large"}}),
                ),
            ],
            Kind::Responses => vec![(
                400,
                json!({"error": {"message": "Your input exceeds the context window of this model. Please adjust your input and try again.", "type": "invalid_request_error", "param": "input", "code": "context_length_exceeded"}}),
            )],
            Kind::Anthropic => vec![
                (
                    400,
                    json!({"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 208164 tokens > 200000 maximum"}}),
                ),
                (
                    413,
                    json!({"type": "error", "error": {"type": "request_too_large", "message": "Request exceeds the maximum allowed number of bytes."}}),
                ),
            ],
        }
    }

    /// The JSON error body for a rate limit.
    pub(crate) fn rate_limit_body(self) -> Value {
        match self {
            Kind::Anthropic => {
                json!({"type": "error", "error": {"type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}})
            }
            _ => {
                json!({"error": {"message": "Rate limit reached for requests", "type": "requests", "code": "rate_limit_exceeded"}})
            }
        }
    }
}

/// A small conversation touching every block kind.
pub(crate) fn conversation() -> Vec<Message> {
    let png = ImageSource::Base64 {
        media_type: "image/png".into(),
        data: "iVBORw0KGgo=".into(),
    };
    vec![
        Message::system("You are a coding agent. Work in /repo."),
        Message {
            role: Role::User,
            content: vec![
                Block::text("The test in a.rs fails; the screenshot shows the error."),
                Block::Image {
                    source: png.clone(),
                    width: Some(64),
                    height: Some(32),
                },
            ],
            meta: Default::default(),
        },
        Message {
            role: Role::Assistant,
            content: vec![
                Block::Thinking {
                    thinking: "Read the file first.".into(),
                    signature: Some("sig-abc".into()),
                },
                Block::text("Reading a.rs."),
                Block::ToolCall {
                    id: "call_1".into(),
                    name: "read".into(),
                    arguments: json!({"path": "a.rs"}),
                },
                Block::ToolCall {
                    id: "call_2".into(),
                    name: "bash".into(),
                    arguments: json!({"cmd": "cargo test"}),
                },
            ],
            meta: Default::default(),
        },
        Message::tool_result("call_1", "fn add(a: i32, b: i32) -> i32 { a - b }", false),
        Message {
            role: Role::Tool,
            content: vec![Block::ToolResult {
                call_id: "call_2".into(),
                content: vec![
                    Block::text("test add ... FAILED"),
                    Block::Image {
                        source: png,
                        width: None,
                        height: None,
                    },
                ],
                is_error: true,
            }],
            meta: Default::default(),
        },
        Message::assistant("The subtraction should be an addition; fixed."),
        Message::user("Thanks. Now run the whole suite."),
    ]
}

pub(crate) fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "read".into(),
            description: "Read a file.".into(),
            parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}),
        },
        ToolSpec {
            name: "bash".into(),
            description: "Run a shell command.".into(),
            parameters: json!({"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}),
        },
    ]
}

/// The request each purpose sends: a turn offers tools; a compaction and a
/// handoff replay the same prefix with tools listed but forbidden and the
/// instruction last (cache-aligned); a branch summary sends a flattened
/// transcript with no tools.
pub(crate) fn request(purpose: Purpose) -> Request {
    match purpose {
        Purpose::Turn => {
            let mut request = Request::new("m-1", conversation(), purpose);
            request.tools = tools();
            request
        }
        Purpose::Compaction | Purpose::Handoff => {
            let instruction = if purpose == Purpose::Compaction {
                SUMMARY_INSTRUCTION
            } else {
                HANDOFF_INSTRUCTION
            };
            let mut messages = conversation();
            messages.push(Message::user(instruction));
            let mut request = Request::new("m-1", messages, purpose);
            request.tools = tools();
            request.tool_choice = ToolChoice::None;
            request.max_output_tokens = Some(2000);
            request
        }
        Purpose::BranchSummary => {
            let mut request = Request::new(
                "m-1",
                vec![
                    Message::system("You summarize a branch of a coding session."),
                    Message::user(
                        "<transcript>\nuser: try the other fix\nassistant: done\n</transcript>\nSummarize this branch.",
                    ),
                ],
                purpose,
            );
            request.max_output_tokens = Some(500);
            request.temperature = Some(0.0);
            request
        }
    }
}

fn clip(text: &str) -> String {
    let text = text.replace('\n', "\\n");
    if text.chars().count() <= 70 {
        text
    } else {
        format!("{}...", text.chars().take(70).collect::<String>())
    }
}

/// JSON on one line with long strings clipped and data URLs shortened.
fn compact(value: &Value) -> String {
    match value {
        Value::String(s) if s.starts_with("data:") => {
            format!("\"<{}>\"", s.split(',').next().unwrap_or(""))
        }
        Value::String(s) => format!("{:?}", clip(s)),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(compact).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{k}: {}", compact(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        other => other.to_string(),
    }
}

/// A content part as `type "text" key=value [cache]`; other values as
/// compact JSON.
fn part(value: &Value) -> String {
    let Value::Object(map) = value else {
        return compact(value);
    };
    let Some(kind) = map.get("type").and_then(Value::as_str) else {
        return compact(value);
    };
    let mut out = format!("({kind}");
    for (key, field) in map {
        match key.as_str() {
            "type" | "cache_control" | "annotations" => {}
            "text" | "thinking" => out.push_str(&format!(" {}", compact(field))),
            "content" | "output" => out.push_str(&format!(" {key}={}", parts(field))),
            _ => out.push_str(&format!(" {key}={}", compact(field))),
        }
    }
    if map.contains_key("cache_control") {
        out.push_str(" [cache]");
    }
    out.push(')');
    out
}

fn parts(value: &Value) -> String {
    match value {
        Value::Array(items) => items.iter().map(part).collect::<Vec<_>>().join(" "),
        other => compact(other),
    }
}

/// Renders a captured request: the endpoint, selected headers, the top
/// level fields, one line per tool, then one line per message or input
/// item (`NN:role key=value: content`).
pub(crate) fn render(request: &wiremock::Request) -> String {
    let body: Value = serde_json::from_slice(&request.body).unwrap();
    let mut out = format!("POST {}\n", request.url.path());
    for name in [
        "authorization",
        "x-api-key",
        "anthropic-version",
        PURPOSE_HEADER,
        "accept",
    ] {
        if let Some(value) = request.headers.get(name) {
            let value = value.to_str().unwrap().replace(TEST_KEY, "<KEY>");
            out.push_str(&format!("header {name}: {value}\n"));
        }
    }
    let Value::Object(map) = &body else {
        panic!("body is not an object")
    };
    for (key, value) in map {
        match key.as_str() {
            "messages" | "input" | "tools" | "system" => {}
            _ => out.push_str(&format!("{key}={}\n", compact(value))),
        }
    }
    for tool in map
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = tool
            .get("name")
            .or_else(|| tool.pointer("/function/name"))
            .unwrap();
        let cache = if tool.get("cache_control").is_some() {
            " [cache]"
        } else {
            ""
        };
        out.push_str(&format!("tool {}{cache}\n", name.as_str().unwrap()));
    }
    for block in map
        .get("system")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out.push_str(&format!("system: {}\n", part(block)));
    }
    let items = map
        .get("messages")
        .or_else(|| map.get("input"))
        .and_then(Value::as_array)
        .unwrap();
    for (index, item) in items.iter().enumerate() {
        let Value::Object(fields) = item else {
            panic!("item is not an object")
        };
        let role = fields
            .get("role")
            .or_else(|| fields.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("?");
        let mut line = format!("{index:02}:{role}");
        for (key, value) in fields {
            match key.as_str() {
                "role" | "content" | "type" => {}
                "output" => line.push_str(&format!(" output={}", parts(value))),
                _ => line.push_str(&format!(" {key}={}", compact(value))),
            }
        }
        if let Some(content) = fields.get("content") {
            line.push_str(&format!(": {}", parts(content)));
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}
