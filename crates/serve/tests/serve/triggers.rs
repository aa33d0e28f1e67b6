//! The triggers and tools a session offers beside after-turn: mid-turn
//! inside a tool loop, the idle clock, and the model's `compact_context`.

use serde_json::json;

use crate::common::Setup;
use crate::common::TOKEN_A;
use crate::common::fill;

/// A session of `id` with `settings` (JSON form), filled past its
/// threshold.
async fn over_threshold(api: &crate::common::Api, id: &str, settings: serde_json::Value) {
    api.create(&json!({"id": id, "window": 24_000, "settings": settings}))
        .await;
    let mut turns = 0;
    while fill(api, id, turns..turns + 1).await["over_threshold"] != true {
        turns += 1;
        assert!(turns < 200, "never crossed the threshold");
    }
}

#[tokio::test]
async fn mid_turn_and_idle_are_served_as_the_settings_say() {
    let dir = tempfile::tempdir().expect("dir");
    let server = Setup::new(dir.path()).start().await;
    let api = server.client(TOKEN_A);

    over_threshold(&api, "loop", json!({"method_order": ["digest"]})).await;
    // No idle_minutes: the clock never runs a pass.
    let (status, idle) = api.post("/v1/sessions/loop/idle", &json!({})).await;
    assert_eq!(status, 200, "{idle}");
    assert_eq!(idle["status"], "disabled", "{idle}");
    let (status, pass) = api.post("/v1/sessions/loop/mid-turn", &json!({})).await;
    assert_eq!(status, 200, "{pass}");
    assert_eq!(pass["trigger"], "mid_turn", "{pass}");
    assert_eq!(pass["status"], "succeeded", "{pass}");

    over_threshold(
        &api,
        "quiet",
        json!({"method_order": ["digest"], "mid_turn": false, "idle_minutes": 30}),
    )
    .await;
    let (_, pass) = api.post("/v1/sessions/quiet/mid-turn", &json!({})).await;
    assert_eq!(pass["status"], "disabled", "{pass}");
    // Just appended to: not quiet for 30 minutes yet.
    let (status, idle) = api.post("/v1/sessions/quiet/idle", &json!({})).await;
    assert_eq!(status, 200, "{idle}");
    assert_eq!(idle["trigger"], "idle", "{idle}");
    assert_eq!(idle["status"], "not_needed", "{idle}");
    server.shutdown().await;
}

#[tokio::test]
async fn compact_context_is_offered_and_runs_at_the_end_of_the_turn() {
    let dir = tempfile::tempdir().expect("dir");
    let server = Setup::new(dir.path()).start().await;
    let api = server.client(TOKEN_A);
    api.create(&json!({"id": "asked", "window": 24_000,
                       "settings": {"method_order": ["digest"], "model_compaction": true,
                                    "keep_recent_tokens": 100}}))
        .await;
    fill(&api, "asked", 0..6).await;

    let (status, offered) = api.get("/v1/sessions/asked/tools").await;
    assert_eq!(status, 200, "{offered}");
    let names: Vec<&str> = offered["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["recall", abridge::model_compaction::TOOL_NAME]);

    let (status, answer) = api
        .post(
            "/v1/sessions/asked/compact-context",
            &json!({"focus": "the markers"}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["text"], abridge::model_compaction::ACCEPTED);
    let (status, pass) = api.post("/v1/sessions/asked/after-turn", &json!({})).await;
    assert_eq!(status, 200, "{pass}");
    assert_eq!(pass["trigger"], "manual", "{pass}");
    assert_eq!(pass["status"], "succeeded", "{pass}");

    // Off in the settings: not offered, and the call is refused.
    api.create(&json!({"id": "plain", "window": 24_000})).await;
    let (_, offered) = api.get("/v1/sessions/plain/tools").await;
    assert_eq!(offered["tools"].as_array().map(Vec::len), Some(1));
    let (status, refused) = api
        .post("/v1/sessions/plain/compact-context", &json!({}))
        .await;
    assert_eq!(status, 503, "{refused}");
    server.shutdown().await;
}
