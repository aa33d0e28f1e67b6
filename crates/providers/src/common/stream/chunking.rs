//! However the network cuts a stream, the driver yields the same events:
//! each provider's documented stream (text deltas of one shape and of a
//! changed one, reasoning, a tool call, usage, the terminal event) is fed
//! in random pieces, cut inside lines, inside UTF-8 characters and
//! between the two newlines that end an event, and the events must equal
//! those of the stream fed whole, which must hold the expected answer.

use futures::StreamExt;
use proptest::prelude::*;

use super::*;
use crate::anthropic::decode::AnthropicDecoder;
use crate::common::sse::cut;
use crate::openai_chat::decode::ChatDecoder;
use crate::openai_responses::ResponsesDecoder;

/// Every event the driver yields for `body` cut at `cuts`, up to the end.
fn events<D: Decoder + Unpin>(body: &[u8], cuts: &[usize], decoder: D) -> Vec<StreamEvent> {
    let chunks: Vec<_> = cut(body, cuts)
        .into_iter()
        .map(|piece| Ok(bytes::Bytes::copy_from_slice(piece)))
        .collect();
    let driver = Driver::new(
        "p",
        usize::MAX,
        futures::stream::iter(chunks).boxed(),
        decoder,
    );
    futures::executor::block_on(
        driver
            .map(|event| event.expect("the stream decodes"))
            .collect(),
    )
}

fn chat_stream() -> String {
    let chunk = |delta: &str, id: &str| {
        format!(
            "data: {{\"id\":\"{id}\",\"object\":\"chat.completion.chunk\",\"created\":1764633600,\"model\":\"m\",\
             \"choices\":[{{\"index\":0,\"delta\":{delta},\"logprobs\":null,\"finish_reason\":null}}]}}\n\n"
        )
    };
    let mut body = String::new();
    for (n, piece) in ["Hé", "llo ", "wörld", " ✓"].iter().enumerate() {
        // The id changes half way: a settled shape must let go of it.
        let id = if n < 2 { "c1" } else { "c2" };
        body.push_str(&chunk(&format!("{{\"content\":\"{piece}\"}}"), id));
    }
    body.push_str(&chunk(
        r#"{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"pa"}}]}"#,
        "c2",
    ));
    body.push_str(&chunk(
        r#"{"tool_calls":[{"index":0,"function":{"arguments":"th\":\"a\"}"}}]}"#,
        "c2",
    ));
    body.push_str("data: {\"id\":\"c2\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}],\
                   \"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5}}\r\n\r\n");
    body.push_str(": keep-alive\n\ndata: [DONE]\n\n");
    body
}

fn anthropic_stream() -> String {
    let event = |name: &str, data: &str| format!("event: {name}\ndata: {data}\n\n");
    let mut body = event(
        "message_start",
        r#"{"type":"message_start","message":{"model":"claude-x","usage":{"input_tokens":10,"output_tokens":1}}}"#,
    );
    body.push_str(&event(
        "content_block_start",
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
    ));
    body.push_str(&event(
        "content_block_delta",
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}"#,
    ));
    body.push_str(&event(
        "content_block_delta",
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}"#,
    ));
    body.push_str(&event(
        "content_block_start",
        r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
    ));
    for piece in ["Hé", "llo ", "wörld"] {
        body.push_str(&event(
            "content_block_delta",
            &format!(
                r#"{{"type":"content_block_delta","index":1,"delta":{{"type":"text_delta","text":"{piece}"}}}}"#
            ),
        ));
    }
    body.push_str(&event(
        "content_block_start",
        r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"tu_1","name":"read","input":{}}}"#,
    ));
    body.push_str(&event(
        "content_block_delta",
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\":\"a\"}"}}"#,
    ));
    body.push_str(&event(
        "message_delta",
        r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":7}}"#,
    ));
    body.push_str(&event("message_stop", r#"{"type":"message_stop"}"#));
    body
}

fn responses_stream() -> String {
    let event = |name: &str, data: String| format!("event: {name}\ndata: {data}\n\n");
    let mut body = String::new();
    for (n, piece) in ["Hé", "llo ", "wörld"].iter().enumerate() {
        body.push_str(&event(
            "response.output_text.delta",
            format!(
                r#"{{"type":"response.output_text.delta","sequence_number":{},"item_id":"msg_1","output_index":0,"content_index":0,"delta":"{piece}","logprobs":[],"obfuscation":"x{n}"}}"#,
                n + 3
            ),
        ));
    }
    body.push_str(&event(
        "response.completed",
        r#"{"type":"response.completed","response":{"model":"m","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Héllo wörld"}]}],"usage":{"input_tokens":10,"output_tokens":3}}}"#.to_string(),
    ));
    body
}

/// The visible text of `events`, delta by delta, and the finished
/// answer's text.
fn texts(events: &[StreamEvent]) -> (String, String) {
    let deltas = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(text) => Some(text.as_str()),
            _ => None,
        })
        .collect();
    let done = match events.last() {
        Some(StreamEvent::Done(response)) => response
            .message
            .content
            .iter()
            .filter_map(|block| match block {
                Block::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect(),
        other => panic!("the stream did not end in Done: {other:?}"),
    };
    (deltas, done)
}

#[test]
fn whole_streams_decode_to_the_expected_answers() {
    let chat = events(chat_stream().as_bytes(), &[], chat_decoder());
    assert_eq!(texts(&chat).0, "Héllo wörld ✓");
    assert!(chat.contains(&StreamEvent::ToolCallStart {
        id: "call_1".into(),
        name: "read".into()
    }));
    let anthropic = events(anthropic_stream().as_bytes(), &[], anthropic_decoder());
    assert_eq!(
        texts(&anthropic),
        ("Héllo wörld".into(), "Héllo wörld".into())
    );
    assert!(anthropic.contains(&StreamEvent::ThinkingDelta("hmm".into())));
    assert!(anthropic.contains(&StreamEvent::ToolCallDelta("{\"path\":\"a\"}".into())));
    let responses = events(responses_stream().as_bytes(), &[], responses_decoder());
    assert_eq!(
        texts(&responses),
        ("Héllo wörld".into(), "Héllo wörld".into())
    );
}

fn chat_decoder() -> ChatDecoder {
    ChatDecoder::new("p", classify::ErrorDialect::Compatible, "m".into())
}

fn anthropic_decoder() -> AnthropicDecoder {
    AnthropicDecoder::new("p", classify::ErrorDialect::Anthropic, "m".into())
}

fn responses_decoder() -> ResponsesDecoder {
    ResponsesDecoder::new("p", classify::ErrorDialect::OpenAi, "m".into())
}

proptest! {
    #[test]
    fn cutting_a_stream_anywhere_changes_no_event(cuts in proptest::collection::vec(0usize..4096, 0..24)) {
        let chat = chat_stream();
        prop_assert_eq!(events(chat.as_bytes(), &cuts, chat_decoder()), events(chat.as_bytes(), &[], chat_decoder()));
        let anthropic = anthropic_stream();
        prop_assert_eq!(
            events(anthropic.as_bytes(), &cuts, anthropic_decoder()),
            events(anthropic.as_bytes(), &[], anthropic_decoder())
        );
        let responses = responses_stream();
        prop_assert_eq!(
            events(responses.as_bytes(), &cuts, responses_decoder()),
            events(responses.as_bytes(), &[], responses_decoder())
        );
    }
}
