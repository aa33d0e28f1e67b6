//! OpenAI Responses (`POST {base}/responses`).

pub(crate) mod compaction;
pub(crate) mod encode;

use std::collections::BTreeMap;

use std::borrow::Cow;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;
use serde_json::json;

use crate::common::classify;
use crate::common::config::ProviderConfig;
use crate::common::fragments;
use crate::common::fragments::FragmentCache;
use crate::common::http::Auth;
use crate::common::http::Http;
use crate::common::sse::SseEvent;
use crate::common::stream;
use crate::common::stream::Decoder;
use crate::common::wire;
use crate::openai_chat::OPENAI_BASE_URL;
use abridge_llm::Block;
use abridge_llm::LlmClient;
use abridge_llm::LlmError;
use abridge_llm::Request;
use abridge_llm::Response;
use abridge_llm::ResponseStream;
use abridge_llm::StopReason;
use abridge_llm::StreamEvent;
use abridge_llm::Usage;

pub use crate::common::options::ResponsesOptions;

/// A Responses API client.
///
/// Wire mapping: every message becomes input items. System and developer
/// messages are `message` items with their role and `input_text`; user
/// text and images are `input_text` and `input_image`; assistant text is
/// an assistant `message` with `output_text`; tool calls are
/// `function_call` items (arguments as JSON text) and tool results
/// `function_call_output` items (text, or `input_text`/`input_image`
/// parts when images are present). A thinking block written by this
/// client carries the whole `reasoning` item (id, summary, encrypted
/// content) as its signature and is replayed verbatim; thinking from other
/// providers is not sent. Output items of any other type (for example a
/// compaction item) are returned, in order, as `Response.native`:
/// `{"output": [item, ...]}`.
#[derive(Debug)]
pub struct OpenAiResponsesClient {
    http: Http,
    options: ResponsesOptions,
    default_model: Option<String>,
    extra_body: serde_json::Map<String, Value>,
    fragments: FragmentCache,
}

impl OpenAiResponsesClient {
    /// Default provider name.
    pub const NAME: &'static str = crate::common::options::OPENAI_RESPONSES;

    /// A client for `config`, posting to `{base_url}/responses` (base
    /// defaults to [`OPENAI_BASE_URL`]).
    ///
    /// # Errors
    /// `InvalidConfig` for a bad URL or header.
    pub fn new(config: ProviderConfig, options: ResponsesOptions) -> Result<Self, LlmError> {
        let name = config
            .name
            .clone()
            .unwrap_or_else(|| Self::NAME.to_string());
        let http = Http::new(
            &name,
            &config,
            OPENAI_BASE_URL,
            "/responses",
            Auth::Bearer,
            classify::ErrorDialect::OpenAi,
            &[],
        )?;
        Ok(OpenAiResponsesClient {
            http,
            options,
            default_model: config.default_model,
            extra_body: config.extra_body,
            fragments: FragmentCache::default(),
        })
    }

    /// OpenAI's own API with `key`.
    ///
    /// # Errors
    /// `InvalidConfig` when the key is not a valid header value.
    pub fn openai(api_key: impl Into<crate::common::config::ApiKey>) -> Result<Self, LlmError> {
        Self::new(
            ProviderConfig::default().with_api_key(api_key),
            ResponsesOptions::default(),
        )
    }

    /// The model used when a request names none.
    pub fn default_model(&self) -> Option<&str> {
        self.default_model.as_deref()
    }

    /// The request body exactly as it is sent, as JSON, for tests and
    /// callers that edit a body before sending it themselves.
    ///
    /// # Errors
    /// `InvalidConfig` when no model is named.
    pub fn build_body(&self, request: &Request, streaming: bool) -> Result<Value, LlmError> {
        let model = wire::model_for(self.http.provider(), request, self.default_model.as_deref())?;
        let provider = self.http.provider();
        let (options, detail) = (&self.options, wire::openai_image_detail(model));
        let items = FragmentCache::uncached(&request.messages, encode::cacheable, |m| {
            encode::encode_message(provider, m, options, detail)
        })?;
        let body = encode::body(request, model, &self.options, streaming, &items);
        wire::to_value(self.http.provider(), &body, &self.extra_body)
    }

    /// The request body as the bytes that are sent: typed wire structs
    /// borrowed from `request`, serialized once into a buffer sized up
    /// front.
    ///
    /// # Errors
    /// `InvalidConfig` when no model is named.
    pub fn encode_body(&self, request: &Request, streaming: bool) -> Result<Vec<u8>, LlmError> {
        let model = wire::model_for(self.http.provider(), request, self.default_model.as_deref())?;
        let provider = self.http.provider();
        let detail = wire::openai_image_detail(model);
        let items = self.fragments.items_keyed(
            u64::from(detail == "original"),
            &request.messages,
            encode::cacheable,
            |m| encode::encode_message(provider, m, &self.options, detail),
        )?;
        let body = encode::body(request, model, &self.options, streaming, &items);
        wire::encode(
            provider,
            fragments::body_capacity(&items, request),
            &body,
            &self.extra_body,
        )
    }

    async fn send(
        &self,
        request: &Request,
        streaming: bool,
    ) -> Result<reqwest::Response, LlmError> {
        let bytes = self.encode_body(request, streaming)?;
        self.http.post(bytes, request.purpose, streaming).await
    }
}

fn usage_of(response: &Value) -> Usage {
    let Some(usage) = response.get("usage") else {
        return Usage::default();
    };
    let number = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let input = number(usage.get("input_tokens"));
    let cached = number(usage.pointer("/input_tokens_details/cached_tokens")).min(input);
    Usage {
        input: input - cached,
        output: number(usage.get("output_tokens")),
        cache_read: cached,
        cache_write: 0,
    }
}

/// Turns a finished `response` object (non-streamed body, or the payload
/// of `response.completed`/`response.incomplete`) into our answer.
fn response_from(provider: &str, requested: &str, response: &Value, output: &[Value]) -> Response {
    let mut content = Vec::new();
    let mut native = Vec::new();
    let mut called = false;
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => {
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let text = part
                        .get("text")
                        .or_else(|| part.get("refusal"))
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    if !text.is_empty() {
                        content.push(Block::text(text));
                    }
                }
            }
            Some("reasoning") => {
                let summary: Vec<&str> = item
                    .get("summary")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .chain(
                        item.get("content")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten(),
                    )
                    .filter_map(|part| part.get("text").and_then(Value::as_str))
                    .collect();
                content.push(Block::Thinking {
                    thinking: summary.join("\n\n"),
                    signature: Some(item.to_string()),
                });
            }
            Some("function_call") => {
                called = true;
                let field = |key: &str| {
                    item.get(key)
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                };
                content.push(Block::ToolCall {
                    id: field("call_id"),
                    name: field("name"),
                    arguments: stream::tool_arguments(&field("arguments")),
                });
            }
            _ => native.push(item.clone()),
        }
    }
    let status = response
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("completed");
    let reason = response
        .pointer("/incomplete_details/reason")
        .and_then(Value::as_str);
    let stop = match (status, reason) {
        ("incomplete", Some("content_filter")) => StopReason::Refusal,
        ("incomplete", _) => StopReason::MaxTokens,
        _ if called => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    };
    let model = response
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or(requested)
        .to_string();
    let native = (!native.is_empty()).then(|| json!({"output": native}));
    stream::response(provider, model, content, usage_of(response), stop, native)
}

fn failure(provider: &str, dialect: classify::ErrorDialect, response: &Value) -> LlmError {
    let error = response
        .get("error")
        .filter(|e| !e.is_null())
        .map(|e| classify::error_from_value(&json!({"error": e})))
        .unwrap_or_else(|| classify::ErrorBody {
            message: "the response failed without an error message".to_string(),
            ..classify::ErrorBody::default()
        });
    classify::classify_stream_error(provider, dialect, &error)
}

/// One streamed event, read straight from its bytes: only the fields the
/// decoder uses, the item and the finished response as JSON.
#[derive(Debug, Clone, PartialEq, Deserialize)]
struct WireEvent<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    response: Option<Value>,
}

/// Stream decoder: named events ending in `response.completed`,
/// `response.incomplete` or `response.failed`.
#[derive(Debug)]
pub(crate) struct ResponsesDecoder {
    provider: String,
    dialect: classify::ErrorDialect,
    requested: String,
    items: BTreeMap<u64, Value>,
}

impl ResponsesDecoder {
    /// A decoder for one answer to a request for `requested`.
    pub(crate) fn new(provider: &str, dialect: classify::ErrorDialect, requested: String) -> Self {
        ResponsesDecoder {
            provider: provider.to_string(),
            dialect,
            requested,
            items: BTreeMap::new(),
        }
    }
}

impl Decoder for ResponsesDecoder {
    fn on_event(
        &mut self,
        event: SseEvent<'_>,
        out: &mut stream::Out<'_>,
    ) -> Result<bool, LlmError> {
        let wire: WireEvent<'_> = stream::parse_event(&self.provider, event.data)?;
        let kind = wire.kind.as_deref().or(event.event).unwrap_or("");
        let delta = wire.delta.unwrap_or_default();
        match kind {
            "response.output_text.delta" | "response.refusal.delta" => {
                out.push(StreamEvent::TextDelta(delta))
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                out.push(StreamEvent::ThinkingDelta(delta));
            }
            "response.function_call_arguments.delta" => out.push(StreamEvent::ToolCallDelta(delta)),
            "response.output_item.added" => {
                let item = wire.item.as_ref().unwrap_or(&Value::Null);
                if item.get("type").and_then(Value::as_str) == Some("function_call") {
                    let field = |key: &str| {
                        item.get(key)
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string()
                    };
                    out.push(StreamEvent::ToolCallStart {
                        id: field("call_id"),
                        name: field("name"),
                    });
                }
            }
            "response.output_item.done" => {
                let index = wire.output_index.unwrap_or(self.items.len() as u64);
                if let Some(item) = wire.item {
                    self.items.insert(index, item);
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = wire.response.unwrap_or(Value::Null);
                let listed = response
                    .get("output")
                    .and_then(Value::as_array)
                    .filter(|o| !o.is_empty());
                let output: Vec<Value> = match listed {
                    Some(output) => output.clone(),
                    None => std::mem::take(&mut self.items).into_values().collect(),
                };
                let done = response_from(&self.provider, &self.requested, &response, &output);
                out.push(StreamEvent::Done(Box::new(done)));
                return Ok(true);
            }
            "response.failed" => {
                return Err(failure(
                    &self.provider,
                    self.dialect,
                    wire.response.as_ref().unwrap_or(&Value::Null),
                ));
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

#[async_trait]
impl LlmClient for OpenAiResponsesClient {
    fn provider(&self) -> &str {
        self.http.provider()
    }

    fn native_dialect(&self) -> Option<&str> {
        Some(Self::NAME)
    }

    fn native_account(&self) -> Option<&str> {
        Some(self.http.account())
    }

    async fn complete(&self, request: &Request) -> Result<Response, LlmError> {
        let requested =
            wire::model_for(self.http.provider(), request, self.default_model.as_deref())?;
        let response = self.send(request, false).await?;
        let value: Value = self.http.read_json(response).await?;
        if value.get("status").and_then(Value::as_str) == Some("failed")
            || value
                .get("error")
                .is_some_and(|e| !e.is_null() && value.get("output").is_none())
        {
            return Err(failure(self.http.provider(), self.http.dialect(), &value));
        }
        let output = value
            .get("output")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        Ok(response_from(
            self.http.provider(),
            requested,
            &value,
            &output,
        ))
    }

    async fn stream(&self, request: &Request) -> Result<ResponseStream, LlmError> {
        let requested =
            wire::model_for(self.http.provider(), request, self.default_model.as_deref())?
                .to_string();
        let response = self.send(request, true).await?;
        let decoder = ResponsesDecoder::new(self.http.provider(), self.http.dialect(), requested);
        Ok(stream::drive(
            self.http.provider(),
            self.http.max_response_bytes(),
            response,
            decoder,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasoning_round_trips_through_the_signature() {
        let item = json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "plan"}], "encrypted_content": "gAAA"});
        let response = response_from(
            "p",
            "m",
            &json!({"status": "completed"}),
            std::slice::from_ref(&item),
        );
        let request = Request::new("m", vec![response.message], abridge_llm::Purpose::Turn);
        let client = OpenAiResponsesClient::new(
            ProviderConfig::new("http://127.0.0.1:1/v1"),
            ResponsesOptions::default(),
        )
        .unwrap();
        assert_eq!(
            client.build_body(&request, false).unwrap()["input"],
            json!([item])
        );
    }

    #[test]
    fn unknown_output_items_become_native() {
        let compaction = json!({"type": "compaction", "id": "cmp_1", "encrypted_content": "zzz"});
        let response = response_from("p", "m", &json!({}), std::slice::from_ref(&compaction));
        assert_eq!(response.native, Some(json!({"output": [compaction]})));
    }
}
