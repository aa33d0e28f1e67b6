//! `compact_context`: the model asks, the harness compacts at the end of
//! the turn, with the model's focus, even below the threshold.

#![allow(clippy::unwrap_used)]

use abridge::Harness;
use abridge::PassStatus;
use abridge::Settings;
use abridge::compact::Trigger;
use abridge::llm::Message;
use abridge::model_compaction;
use abridge::session::Session;
use serde_json::json;

fn run<T>(future: impl std::future::Future<Output = T>) -> T {
    futures::executor::block_on(future)
}

fn harness(model_compaction: bool) -> Harness {
    let mut session = Session::in_memory("asked");
    for turn in 0..30 {
        session
            .append_message(Message::user(format!(
                "step {turn}: {}",
                "detail ".repeat(200)
            )))
            .unwrap();
        session
            .append_message(Message::assistant(format!("done with step {turn}")))
            .unwrap();
    }
    let mut settings = Settings::from_toml(
        "method_order = [\"digest\"]\nkeep_recent_tokens = 100\n",
        "t",
    )
    .unwrap();
    settings.model_compaction = model_compaction;
    Harness::builder(session, "gpt-4o")
        .settings(settings)
        .window(128_000)
        .build()
        .unwrap()
}

#[test]
fn a_requested_compaction_runs_at_the_end_of_the_turn_below_the_threshold() {
    let harness = harness(true);
    let names: Vec<String> = harness.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["recall", model_compaction::TOOL_NAME]);
    // Far below the threshold: a plain end of turn does nothing.
    let idle = run(harness.after_turn()).unwrap();
    assert!(!idle.landed(), "{idle:?}");

    let answer = harness
        .call_tool(model_compaction::TOOL_NAME, &json!({"focus": "step 3"}))
        .unwrap();
    assert_eq!(answer, model_compaction::ACCEPTED);
    let before = harness.tokens();
    let pass = run(harness.after_turn()).unwrap();
    assert_eq!(pass.trigger, Trigger::Manual);
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
    assert!(harness.tokens() < before);

    // The request was used up: the next end of turn is an ordinary one.
    let next = run(harness.after_turn()).unwrap();
    assert_eq!(next.trigger, Trigger::Threshold);
    assert!(!next.landed());
}

#[test]
fn the_tool_is_not_offered_or_answered_when_off() {
    let harness = harness(false);
    assert!(
        harness
            .tools()
            .iter()
            .all(|t| t.name != model_compaction::TOOL_NAME)
    );
    assert_eq!(
        harness.call_tool(model_compaction::TOOL_NAME, &json!({})),
        None
    );
}

#[tokio::test]
async fn the_models_focus_reaches_the_summarizer() {
    use abridge_test_support::scripted::ScriptedClient;
    let summarizer = ScriptedClient::new(Vec::new())
        .fallback("## Goal\nTrailing commas in the parser.\n## Done\nStep 3.")
        .shared();
    let sources = abridge::MethodSources {
        summarizer: Some(abridge::SummarizerModel {
            client: summarizer.clone(),
            model: "summarizer".to_string(),
            retry: abridge::llm::RetryPolicy {
                max_attempts: 1,
                ..abridge::llm::RetryPolicy::default()
            },
            soft: abridge::basic::SoftConfig::default(),
            handoff_file: None,
            handoff_max_tokens: None,
        }),
        ..abridge::MethodSources::offline("gpt-4o")
    };
    let mut settings = Settings::from_toml(
        "method_order = [\"soft\"]\nkeep_recent_tokens = 100\nmodel_compaction = true\n",
        "t",
    )
    .unwrap();
    settings.recall = false;
    let mut session = Session::in_memory("focus");
    for turn in 0..30 {
        session
            .append_message(Message::user(format!(
                "step {turn}: {}",
                "detail ".repeat(200)
            )))
            .unwrap();
        session
            .append_message(Message::assistant(format!("done with step {turn}")))
            .unwrap();
    }
    let harness = Harness::builder(session, "gpt-4o")
        .settings(settings)
        .sources(sources)
        .window(128_000)
        .build()
        .unwrap();
    harness.call_tool(
        model_compaction::TOOL_NAME,
        &json!({"focus": "FOCUS: the trailing-comma decision"}),
    );
    let pass = harness.after_turn().await.unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
    let prompts: Vec<String> = summarizer
        .requests()
        .iter()
        .map(|r| r.messages.iter().map(|m| m.plain_text()).collect())
        .collect();
    assert!(
        prompts
            .iter()
            .any(|p| p.contains("FOCUS: the trailing-comma decision")),
        "{prompts:#?}"
    );
}
