//! Shared pieces of every provider's answer: the SSE stream driver, the
//! partial blocks a stream fills, and the finished [`Response`].

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::Context;
use std::task::Poll;

use futures::StreamExt;

use crate::common::classify;
use crate::common::sse::SseEvent;
use crate::common::sse::SseParser;
use abridge_llm::Block;
use abridge_llm::LlmError;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Origin;
use abridge_llm::Response;
use abridge_llm::ResponseStream;
use abridge_llm::Role;
use abridge_llm::StopReason;
use abridge_llm::StreamEvent;
use abridge_llm::Usage;

/// Turns one provider's SSE events into [`StreamEvent`]s.
pub(crate) trait Decoder: Send + 'static {
    /// Handles one event, pushing what it yields onto `out`. Returns `true`
    /// once the provider's terminal event has been seen (a `Done` must then
    /// be in `out`).
    ///
    /// # Errors
    /// A malformed event (`Transport`) or an error the provider reported in
    /// the stream (classified).
    fn on_event(&mut self, event: SseEvent<'_>, out: &mut Out<'_>) -> Result<bool, LlmError>;
}

/// Where a decoder puts what an event yields: straight onto the stream's
/// queue, so an event is moved once, not gathered first and moved again.
pub(crate) struct Out<'q>(&'q mut VecDeque<Result<StreamEvent, LlmError>>);

impl Out<'_> {
    /// Queues `event` for the caller.
    pub(crate) fn push(&mut self, event: StreamEvent) {
        self.0.push_back(Ok(event));
    }
}

struct Driver<D> {
    provider: String,
    body: futures::stream::BoxStream<'static, Result<bytes::Bytes, reqwest::Error>>,
    parser: SseParser,
    decoder: D,
    /// The network chunk being decoded, and how much of it has been read.
    chunk: bytes::Bytes,
    read: usize,
    queue: VecDeque<Result<StreamEvent, LlmError>>,
    ended: bool,
    /// Bytes the stream may still deliver before it is over the size cap.
    budget: usize,
    cap: usize,
}

impl<D: Decoder> Driver<D> {
    /// A driver of `body`'s bytes through `decoder`, refusing more than
    /// `cap` bytes in all.
    fn new(
        provider: &str,
        cap: usize,
        body: futures::stream::BoxStream<'static, Result<bytes::Bytes, reqwest::Error>>,
        decoder: D,
    ) -> Self {
        Driver {
            budget: cap,
            cap,
            provider: provider.to_string(),
            body,
            parser: SseParser::default(),
            decoder,
            chunk: bytes::Bytes::new(),
            read: 0,
            queue: VecDeque::new(),
            ended: false,
        }
    }

    fn fail(&mut self, message: String) {
        self.queue.push_back(Err(LlmError::Transport {
            provider: self.provider.clone(),
            message,
        }));
        self.ended = true;
    }

    /// Decodes the chunk's next event (or reads the chunk's tail into the
    /// parser when no event completes in it).
    fn decode_next(&mut self) {
        let Driver {
            parser,
            decoder,
            chunk,
            read,
            queue,
            ..
        } = self;
        // Set once the terminal event or an error has been handled; the
        // bytes after it are never read.
        let mut ended = false;
        let parsed = parser.feed_one(&chunk[*read..], |event| {
            match decoder.on_event(event, &mut Out(queue)) {
                Ok(finished) => ended = finished,
                Err(error) => {
                    queue.push_back(Err(error));
                    ended = true;
                }
            }
        });
        match parsed {
            Ok(_) if ended => self.ended = true,
            Ok(length) => *read += length,
            Err(message) => self.fail(message),
        }
    }
}

impl<D: Decoder + Unpin> futures::Stream for Driver<D> {
    type Item = Result<StreamEvent, LlmError>;

    /// Hands out queued events first, then decodes the next event of the
    /// chunk at hand, and reads the body only when the chunk is used up.
    /// Events are decoded one at a time as the caller takes them: each
    /// event's allocations are freed by the caller before the next are
    /// made (so the allocator hands the same memory back), and the queue
    /// never holds more than one event's output.
    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(item) = this.queue.pop_front() {
                return Poll::Ready(Some(item));
            }
            if this.ended {
                return Poll::Ready(None);
            }
            if this.read < this.chunk.len() {
                this.decode_next();
                continue;
            }
            match std::task::ready!(this.body.poll_next_unpin(cx)) {
                Some(Ok(chunk)) if chunk.len() > this.budget => {
                    this.queue.push_back(Err(crate::common::http::too_large(
                        &this.provider,
                        this.cap,
                    )));
                    this.ended = true;
                    // Let go of the connection now, not when the caller
                    // drops the stream.
                    this.body = futures::stream::empty().boxed();
                }
                Some(Ok(chunk)) => {
                    this.budget -= chunk.len();
                    this.chunk = chunk;
                    this.read = 0;
                }
                Some(Err(error)) => {
                    let error = error.without_url();
                    this.fail(format!("the stream broke off: {error}"));
                }
                None => this.fail("the stream ended before its terminal event".to_string()),
            }
        }
    }
}

/// Streams a successful SSE response through `decoder`.
///
/// The stream ends after the decoder's terminal event, with a
/// `Transport` error when the bytes stop first or cannot be parsed, or
/// with `Unusable` once more than `cap` bytes have come (the connection is
/// dropped then, so a runaway stream is never held whole). Dropping the
/// stream drops the connection.
pub(crate) fn drive<D: Decoder + Unpin>(
    provider: &str,
    cap: usize,
    response: reqwest::Response,
    decoder: D,
) -> ResponseStream {
    Box::pin(Driver::new(
        provider,
        cap,
        response.bytes_stream().boxed(),
        decoder,
    ))
}

/// A block being written by a stream.
#[derive(Debug, Clone)]
pub(crate) enum Partial {
    /// Visible text.
    Text(String),
    /// Reasoning with its signature so far.
    Thinking {
        /// Reasoning text.
        text: String,
        /// Signature text.
        signature: String,
    },
    /// Opaque reasoning.
    Redacted(String),
    /// A tool call with its argument JSON so far.
    Tool {
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// Argument JSON text.
        arguments: String,
    },
}

impl Partial {
    /// The finished block; `None` for empty text or reasoning.
    pub(crate) fn finish(self) -> Option<Block> {
        match self {
            Partial::Text(text) => (!text.is_empty()).then_some(Block::Text { text }),
            Partial::Thinking { text, signature } => (!text.is_empty() || !signature.is_empty())
                .then(|| Block::Thinking {
                    thinking: text,
                    signature: (!signature.is_empty()).then_some(signature),
                }),
            Partial::Redacted(data) => Some(Block::RedactedThinking { data }),
            Partial::Tool {
                id,
                name,
                arguments,
            } => Some(Block::ToolCall {
                id,
                name,
                arguments: tool_arguments(&arguments),
            }),
        }
    }
}

/// Parses a tool call's argument text. Empty means `{}`; text that is not
/// JSON is kept as a JSON string so the caller sees exactly what the model
/// wrote.
pub(crate) fn tool_arguments(raw: &str) -> serde_json::Value {
    if raw.trim().is_empty() {
        return serde_json::Value::Object(serde_json::Map::new());
    }
    serde_json::from_str(raw).unwrap_or_else(|_| serde_json::Value::String(raw.to_string()))
}

/// The finished answer, with the assistant message's meta filled in.
pub(crate) fn response(
    provider: &str,
    model: String,
    content: Vec<Block>,
    usage: Usage,
    stop_reason: StopReason,
    native: Option<serde_json::Value>,
) -> Response {
    let message = Message {
        role: Role::Assistant,
        content,
        meta: Meta {
            origin: Some(Origin::Model {
                provider: provider.to_string(),
                model: model.clone(),
            }),
            usage: Some(usage),
            stop_reason: Some(stop_reason.clone()),
            useless: false,
        },
    };
    Response {
        message,
        usage,
        stop_reason,
        model,
        native,
    }
}

/// The `Done` event that ends a stream: the blocks written so far,
/// finished, with the model, usage and stop reason the stream reported.
/// Takes the parts and the model, so a decoder ends once.
pub(crate) fn done(
    provider: &str,
    model: &mut String,
    parts: &mut Vec<Partial>,
    usage: Usage,
    stop_reason: StopReason,
) -> StreamEvent {
    let content = std::mem::take(parts)
        .into_iter()
        .filter_map(Partial::finish)
        .collect();
    let response = response(
        provider,
        std::mem::take(model),
        content,
        usage,
        stop_reason,
        None,
    );
    StreamEvent::Done(Box::new(response))
}

/// The error a provider reported inside a stream (an `error` event, or a
/// chunk with an `error` member), classified in `dialect`; a `Transport`
/// error when the event is not JSON.
pub(crate) fn reported_error(
    provider: &str,
    dialect: classify::ErrorDialect,
    data: &str,
) -> LlmError {
    match event_json(provider, data) {
        Ok(value) => {
            classify::classify_stream_error(provider, dialect, &classify::error_from_value(&value))
        }
        Err(not_json) => not_json,
    }
}

/// Parses one event's JSON data.
///
/// # Errors
/// `Transport` naming the provider when the data is not JSON.
pub(crate) fn event_json(provider: &str, data: &str) -> Result<serde_json::Value, LlmError> {
    serde_json::from_str(data).map_err(|e| LlmError::Transport {
        provider: provider.to_string(),
        message: format!("malformed stream event ({e}): {}", clip(data)),
    })
}

/// Reads one event's JSON data into the typed, borrowed struct a decoder
/// wants, without an intermediate `serde_json::Value`.
///
/// # Errors
/// `Transport` naming the provider: "malformed stream event" with the data
/// when it is not JSON, with serde's reason when it is JSON of another
/// shape.
pub(crate) fn parse_event<'a, T: serde::Deserialize<'a>>(
    provider: &str,
    data: &'a str,
) -> Result<T, LlmError> {
    serde_json::from_str(data).map_err(|e| match event_json(provider, data) {
        Err(not_json) => not_json,
        Ok(_) => LlmError::Transport {
            provider: provider.to_string(),
            message: format!("malformed stream event ({e})"),
        },
    })
}

fn clip(text: &str) -> String {
    if text.len() <= 200 {
        return text.to_string();
    }
    let mut end = 200;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

#[cfg(test)]
mod chunking;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_arguments_keep_what_the_model_wrote() {
        assert_eq!(tool_arguments(""), serde_json::json!({}));
        assert_eq!(tool_arguments("{\"a\":1}"), serde_json::json!({"a": 1}));
        assert_eq!(tool_arguments("{\"a\":"), serde_json::json!("{\"a\":"));
    }
}
