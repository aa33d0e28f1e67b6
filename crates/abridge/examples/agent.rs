//! A minimal multi-turn agent over any OpenAI-compatible endpoint, with the
//! Harness doing all maintenance.
//!
//! ```sh
//! cargo run -p abridge --example agent -- \
//!     --url http://127.0.0.1:8080/v1 --model smollm2 --window 4096 --turns 8
//! ```
//!
//! Each turn appends a user message, sends exactly what `turn_request()`
//! gives (with a small output cap), records the reply with its usage, and
//! calls `after_turn()`. On a context-overflow error it calls `on_error()`
//! and retries once; when a reply is cut because the context left too
//! little room, `on_length_stop()`. It prints one JSON line per turn (the
//! request's token figure, the window, what maintenance did) and exits
//! non-zero if any request was sent over the window.
//!
//! With `--tools on` it also offers the model the harness's own tools,
//! `recall` (read back what compaction hid) and `compact_context` (ask for
//! a compaction at the end of the turn), and runs the calls it makes
//! through `call_tool`, at most four rounds a turn. Off by default: a tiny
//! model in a 1k window has no room for the schemas.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::sync::Arc;

use abridge::Harness;
use abridge::HarnessError;
use abridge::PassStatus;
use abridge::Recovery;
use abridge::Settings;
use abridge::SummarizerModel;
use abridge::llm::LlmClient;
use abridge::llm::Message;
use abridge::llm::ProviderConfig;
use abridge::llm::ProviderKind;
use abridge::llm::StopReason;
use abridge::session::Session;

/// Topics the scripted user asks about, one a turn.
const TOPICS: &[&str] = &[
    "how a hash map handles collisions",
    "what a B-tree is good for",
    "why TCP needs a three-way handshake",
    "how garbage collection finds unreachable objects",
    "what a mutex protects against",
    "how a compiler turns source into machine code",
    "why floating point sums depend on order",
    "what an index does in a database",
];

struct Args {
    url: String,
    model: String,
    window: u64,
    turns: usize,
    tools: bool,
}

fn args() -> Result<Args, String> {
    let mut out = Args {
        url: String::new(),
        model: String::new(),
        window: 4096,
        turns: 6,
        tools: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--url" => out.url = value,
            "--model" => out.model = value,
            "--window" => out.window = value.parse().map_err(|e| format!("--window: {e}"))?,
            "--turns" => out.turns = value.parse().map_err(|e| format!("--turns: {e}"))?,
            "--tools" => out.tools = value == "on",
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if out.url.is_empty() {
        return Err(
            "usage: agent --url URL [--model NAME] [--window N] [--turns N] [--tools on]".into(),
        );
    }
    Ok(out)
}

/// The output cap of each turn: short answers keep a CPU run quick.
const REPLY_CAP: u32 = 160;

/// Tool rounds a turn may take before the agent stops answering calls.
const TOOL_ROUNDS: usize = 4;

/// One turn's request, exactly as the harness builds it, with a cap (and
/// the harness's tools when `tools`).
async fn send(
    client: &Arc<dyn LlmClient>,
    harness: &Harness,
    tools: bool,
) -> Result<abridge::llm::Response, HarnessError> {
    let mut request = harness.turn_request()?;
    request.max_output_tokens = Some(REPLY_CAP);
    if tools {
        request.tools = harness.tools();
    }
    // A model error becomes `HarnessError::Llm`; `into_llm` takes it back
    // out for `on_error`.
    Ok(client.complete(&request).await?)
}

/// Answers the reply's tool calls through the harness (records the reply
/// and each result); true when there were any.
fn answer_calls(
    harness: &Harness,
    reply: &abridge::llm::Response,
) -> Result<bool, Box<dyn std::error::Error>> {
    let calls: Vec<(String, String, serde_json::Value)> = reply
        .message
        .tool_calls()
        .map(|(id, name, arguments)| (id.to_string(), name.to_string(), arguments.clone()))
        .collect();
    if calls.is_empty() {
        return Ok(false);
    }
    harness.record(reply)?;
    for (id, name, arguments) in calls {
        let answer = harness
            .call_tool(&name, &arguments)
            .unwrap_or_else(|| format!("There is no tool named {name:?}."));
        harness.append(Message::tool_result(id, answer, false))?;
    }
    Ok(true)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args()?;
    let client: Arc<dyn LlmClient> = ProviderKind::OpenAiChat
        .client(ProviderConfig::new(args.url.clone()).with_default_model(args.model.clone()))?;
    // Small replies keep the run short on a CPU; the summarizer is the
    // same model.
    // At a window this small the default retention (half the threshold)
    // plus a 256-token summary would not fit under the pass's goal (80% of
    // the threshold), so every pass would end short; keep an eighth.
    let settings = Settings {
        method_order: ["prune", "soft", "digest"].map(String::from).to_vec(),
        reserve: Some(args.window / 4),
        keep_recent_tokens: Some(args.window / 8),
        model_compaction: args.tools,
        ..Settings::default()
    };
    let soft = abridge::basic::SoftConfig {
        max_summary_tokens: 256,
        input_window_tokens: args.window / 2,
        ..abridge::basic::SoftConfig::default()
    };
    let sources = abridge::MethodSources {
        summarizer: Some(SummarizerModel {
            client: client.clone(),
            model: args.model.clone(),
            retry: abridge::llm::RetryPolicy::default(),
            soft,
            handoff_file: None,
            handoff_max_tokens: None,
        }),
        ..abridge::MethodSources::offline(args.model.clone())
    };
    let harness = Harness::builder(Session::in_memory("agent"), args.model.clone())
        .client(client.clone())
        .settings(settings)
        .window(args.window)
        .sources(sources)
        .build()?;
    harness.append(Message::system(
        "You are a concise assistant. Answer in three sentences or fewer.",
    ))?;
    let mut over_window = 0;
    let mut passes = 0;
    for turn in 0..args.turns {
        let topic = TOPICS[turn % TOPICS.len()];
        harness.append(Message::user(format!("Turn {turn}: explain {topic}.")))?;
        let sent = harness.tokens();
        if sent > args.window {
            over_window += 1;
        }
        let mut reply = match send(&client, &harness, args.tools).await {
            Ok(reply) => reply,
            Err(error) => {
                let error = error.into_llm()?;
                match harness.on_error(&error).await? {
                    Recovery::NotHandled => return Err(error.into()),
                    _ => send(&client, &harness, args.tools).await?,
                }
            }
        };
        for _ in 0..TOOL_ROUNDS {
            if !args.tools || !answer_calls(&harness, &reply)? {
                break;
            }
            harness.mid_turn().await?;
            reply = send(&client, &harness, args.tools).await?;
        }
        if reply.stop_reason == StopReason::MaxTokens && sent + u64::from(REPLY_CAP) > args.window {
            // The cut reply is not recorded; maintenance makes room and
            // the next turn goes on.
            harness.on_length_stop().await?;
            continue;
        }
        harness.record(&reply)?;
        let pass = harness.after_turn().await?;
        if pass.landed() {
            passes += 1;
        }
        println!(
            "{}",
            serde_json::json!({
                "turn": turn,
                "request_tokens": sent,
                "window": args.window,
                "reported_input": reply.usage.input + reply.usage.cache_read,
                "pass": pass.status,
                "methods": pass.outcomes.iter().map(|o| o.method.clone()).collect::<Vec<_>>(),
                "after": pass.tokens_after,
            })
        );
        if matches!(pass.status, PassStatus::BreakerOpen) {
            eprintln!("maintenance stopped after repeated failures");
        }
    }
    println!(
        "{}",
        serde_json::json!({"done": true, "passes": passes, "over_window": over_window})
    );
    if over_window > 0 {
        return Err(format!("{over_window} requests went over the window").into());
    }
    Ok(())
}
