//! `handoff` against a loopback server: the side request replays the live
//! turn byte for byte and appends the instruction; the document lands as
//! a checkpoint and in a Markdown file; failures leave the surface alone.

// These tests talk HTTP through abridge-llm's clients, which the `remote`
// feature turns on.
#![cfg(feature = "remote")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use abridge_compact::check::*;
use abridge_compact::host::*;
use abridge_compact::*;
use abridge_compact_basic::prompts::*;
use abridge_compact_basic::*;
use abridge_llm::LlmClient;
use abridge_llm::Message;
use abridge_llm::Purpose;
use abridge_llm::Request;
use abridge_llm::RetryPolicy;
use abridge_llm::ToolSpec;
use abridge_providers::OpenAiChatClient;
use abridge_session::Session;
use pretty_assertions::assert_eq;
use serde_json::Value;
use serde_json::json;
use wiremock::Mock;
use wiremock::MockServer;
use wiremock::ResponseTemplate;
use wiremock::matchers::method;

const DOCUMENT: &str = "## Goal\nTrailing commas in the parser; public API unchanged.\n\n## State\nparse_list edited, tests not run.\n\n## Files\nsrc/parser.rs: parse_list\n\n## Next steps\nRun cargo test.\n\n## Pitfalls\nnone\n\n## In short\nParser edit done; tests next.";

fn session() -> Session {
    let mut s = Session::in_memory("handoff");
    s.append_message(Message::user("Make the parser accept trailing commas."))
        .unwrap();
    s.append_message(Message::tool_call(
        "c1",
        "read",
        json!({"path": "src/parser.rs"}),
    ))
    .unwrap();
    s.append_message(Message::tool_result(
        "c1",
        "let item = next(); ".repeat(150),
        false,
    ))
    .unwrap();
    s.append_message(Message::assistant("The parser rejects a comma before `]`."))
        .unwrap();
    s.append_message(Message::user("Also keep the public API unchanged."))
        .unwrap();
    s.append_message(Message::tool_call(
        "c2",
        "edit",
        json!({"path": "src/parser.rs"}),
    ))
    .unwrap();
    s.append_message(Message::tool_result("c2", "edited ".repeat(200), false))
        .unwrap();
    s.append_message(Message::user("Go on.")).unwrap();
    s
}

fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "bash".into(),
        description: "Run a command.".into(),
        parameters: json!({"type": "object", "properties": {"command": {"type": "string"}}}),
    }]
}

fn config(save_to: Option<std::path::PathBuf>) -> HandoffConfig {
    HandoffConfig {
        prefix: ConversationPrefix::new("You are a coding agent.", tools()),
        save_to,
        retry: RetryPolicy {
            max_attempts: 1,
            timeout: Some(Duration::from_secs(20)),
            ..RetryPolicy::deterministic()
        },
        ..HandoffConfig::default()
    }
}

fn answer(content: &str, finish: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "h1", "object": "chat.completion", "model": "live-1",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 3000, "completion_tokens": 120, "prompt_tokens_details": {"cached_tokens": 2800}},
    }))
}

async fn server(template: ResponseTemplate) -> (MockServer, Arc<dyn LlmClient>) {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(template)
        .mount(&server)
        .await;
    let client = Arc::new(
        abridge_providers::openai_compatible(format!("{}/v1", server.uri()), "live-1", None)
            .unwrap(),
    );
    (server, client)
}

/// One line per message, the prompt by name, long text cut.
fn render(body: &Value) -> String {
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .filter_map(|t| t["function"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default();
    let mut out = format!(
        "handoff: the live turn replayed, then the instruction; tools listed, calls forbidden\nmodel={} tool_choice={} tools={tools:?} max_tokens={}\n",
        body["model"], body["tool_choice"], body["max_tokens"]
    );
    for (i, message) in body["messages"].as_array().unwrap().iter().enumerate() {
        let text = match &message["content"] {
            Value::String(s) => s.replace(HANDOFF_PROMPT.trim(), "<HANDOFF_PROMPT>"),
            _ => String::new(),
        };
        let short: String = text.chars().take(90).collect();
        let cut = if text.chars().count() > 90 { "…" } else { "" };
        let calls: Vec<String> = message["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| format!(" -> {}", c["function"]["name"].as_str().unwrap_or("?")))
            .collect();
        out.push_str(&format!(
            "{i:02}:{}:{}{short}{cut}{}\n",
            message["role"].as_str().unwrap_or("?"),
            message["tool_call_id"]
                .as_str()
                .map(|id| format!("[{id}] "))
                .unwrap_or_default(),
            calls.concat()
        ));
    }
    out
}

fn policy() -> Policy {
    Policy::default().with_keep_recent_tokens(10)
}

#[tokio::test]
async fn handoff_replays_the_live_turn_and_lands_a_checkpoint_and_a_file() {
    let (server, client) = server(answer(DOCUMENT, "stop")).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("HANDOFF.md");
    let method = handoff_method(client, "live-1", config(Some(file.clone())));
    let mut session = session();

    let live = OpenAiChatClient::new(
        abridge_providers::ProviderConfig::new(format!("{}/v1", server.uri())),
        abridge_providers::ChatOptions::default(),
    )
    .unwrap();
    let mut turn_messages = vec![Message::system("You are a coding agent.")];
    turn_messages.extend(session.surface_messages().iter().map(|m| (**m).clone()));
    let mut turn = Request::new("live-1", turn_messages, Purpose::Turn);
    turn.tools = tools();
    let turn = live.build_body(&turn, false).unwrap();

    let outcome = compact_session(&mut session, &method, &policy(), Trigger::Manual)
        .await
        .unwrap();
    assert_eq!(outcome.method, HANDOFF);
    assert_eq!(outcome.short_summary, "Parser edit done; tests next.");

    let body: Value =
        serde_json::from_slice(&server.received_requests().await.unwrap()[0].body).unwrap();
    let sent = body["messages"].as_array().unwrap();
    let live = turn["messages"].as_array().unwrap();
    assert_eq!(sent.len(), live.len() + 1);
    assert_eq!(
        sent[..live.len()],
        live[..],
        "the live turn is replayed byte for byte"
    );
    assert_eq!(body["tools"], turn["tools"]);
    assert_eq!(body["tool_choice"], "none");
    let instruction = sent.last().unwrap();
    assert_eq!(instruction["role"], "user");
    assert_eq!(instruction["content"], HANDOFF_PROMPT.trim());

    insta::assert_snapshot!("handoff_request", render(&body));

    let saved = std::fs::read_to_string(&file).unwrap();
    assert_eq!(saved, DOCUMENT);
    let summary = summary_of_checkpoint(&session, outcome.checkpoint_seq.unwrap()).unwrap();
    assert_eq!(
        summary
            .details
            .get::<HandoffRecord>()
            .unwrap()
            .unwrap()
            .save_to,
        file.display().to_string()
    );
    assert_eq!(summary.usage.unwrap().cache_read, 2800);
    assert!(summary.summary.starts_with("## Goal\nTrailing commas"));
    let body = checkpoint_body(session.message(outcome.checkpoint_seq.unwrap()).unwrap());
    assert!(body.contains("<files>"), "{body}");
    assert!(check_invariants(&session).is_ok());
}

#[tokio::test]
async fn an_unwritable_file_does_not_stop_the_checkpoint() {
    let (_server, client) = server(answer(DOCUMENT, "stop")).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("missing-dir").join("HANDOFF.md");
    let mut session = session();
    let outcome = compact_session(
        &mut session,
        &handoff_method(client, "live-1", config(Some(file.clone()))),
        &policy(),
        Trigger::Manual,
    )
    .await
    .unwrap();
    let summary = summary_of_checkpoint(&session, outcome.checkpoint_seq.unwrap()).unwrap();
    assert_eq!(
        summary
            .details
            .get::<HandoffRecord>()
            .unwrap()
            .unwrap()
            .save_to,
        file.display().to_string()
    );
    assert!(!file.exists());
}

// Issue 17: the document was saved before the commit, so a checkpoint the
// commit refused still left it on disk.
#[tokio::test]
async fn a_handoff_checkpoint_rejected_at_commit_leaves_no_file() {
    let too_long = format!(
        "## Goal\n{}\n\n## In short\nToo long.",
        "detail ".repeat(3000)
    );
    let (_server, client) = server(answer(&too_long, "stop")).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("HANDOFF.md");
    let mut session = session();
    let error = compact_session(
        &mut session,
        &handoff_method(client, "live-1", config(Some(file.clone()))),
        &policy(),
        Trigger::Manual,
    )
    .await
    .unwrap_err();
    assert!(
        matches!(error.method_error(), Some(MethodError::NotSmaller { .. })),
        "{error}"
    );
    assert!(
        !file.exists(),
        "a rejected checkpoint left {}",
        file.display()
    );
}

async fn handoff_fails_with(template: ResponseTemplate) -> Value {
    let (_server, client) = server(template).await;
    let mut session = session();
    let surface = session.surface().clone();
    let error = compact_session(
        &mut session,
        &handoff_method(client, "live-1", config(None)),
        &policy(),
        Trigger::Manual,
    )
    .await
    .unwrap_err();
    assert!(
        !matches!(
            error.method_error(),
            Some(MethodError::NothingToCompact { .. })
        ),
        "{error}"
    );
    assert_eq!(session.surface(), &surface);
    let last = session.events().last().unwrap().log().unwrap();
    assert_eq!(last.kind, TYPE_COMPACTION_END);
    last.data.clone()
}

#[tokio::test]
async fn a_handoff_answered_with_a_tool_call_is_an_error_with_its_cost() {
    let template = ResponseTemplate::new(200).set_body_json(json!({
        "id": "h2", "object": "chat.completion", "model": "live-1",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": null,
            "tool_calls": [{"id": "t9", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"cargo test\"}"}}]}}],
        "usage": {"prompt_tokens": 3000, "completion_tokens": 12},
    }));
    let end = handoff_fails_with(template).await;
    assert_eq!(end["kind"], "summary");
    assert_eq!(
        end["error"],
        "method handoff: no usable summary: the model called a tool instead of writing a summary"
    );
    assert_eq!(end["usage"], json!({"input": 3000, "output": 12}));
}

#[tokio::test]
async fn a_cut_or_empty_handoff_is_an_error() {
    let end = handoff_fails_with(answer("## Goal\nhalf", "length")).await;
    assert!(
        end["error"]
            .as_str()
            .unwrap()
            .contains("cut at the output limit of 4096 tokens"),
        "{end}"
    );
    let end = handoff_fails_with(answer("", "stop")).await;
    assert!(
        end["error"].as_str().unwrap().contains("empty summary"),
        "{end}"
    );
}

#[tokio::test]
async fn a_pending_tool_call_is_left_out_of_the_replay() {
    let mut session = session();
    session
        .append_message(Message::tool_call(
            "c3",
            "bash",
            json!({"command": "cargo test"}),
        ))
        .unwrap();
    let (server, client) = server(answer(DOCUMENT, "stop")).await;
    // Only the request matters here, not whether the checkpoint commits.
    let _ = compact_session(
        &mut session,
        &handoff_method(client, "live-1", config(None)),
        &policy(),
        Trigger::Manual,
    )
    .await;
    let requests = server.received_requests().await.unwrap();
    let body: Value = serde_json::from_slice(&requests[0].body).unwrap();
    let messages = body["messages"].as_array().unwrap();
    let ids: Vec<&str> = messages
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(ids, ["c1", "c2"]);
    assert_eq!(body["tool_choice"], "none");
    assert_eq!(
        messages.last().unwrap()["content"].as_str().unwrap(),
        HANDOFF_PROMPT.trim()
    );
}
