//! Compaction passes over PostgreSQL: a method's lock row is free before
//! the next method starts.

use std::time::Duration;

use serde_json::Value;
use serde_json::json;

use crate::common::Api;
use crate::common::Setup;
use crate::common::TOKEN_A;

/// A turn with a tool call whose output is large: prune has something to
/// cut, and the rest keeps digest busy after it.
fn tool_turn(i: usize) -> Value {
    let id = format!("call-{i}");
    json!([
        {"role": "user", "content": [{"type": "text", "text": format!("step {i}: {}", "look at the build ".repeat(40))}]},
        {"role": "assistant", "content": [{"type": "tool_call", "id": id, "name": "bash", "arguments": {"cmd": "make"}}]},
        {"role": "tool", "content": [{"type": "tool_result", "call_id": id, "content": [{"type": "text", "text": "compiling module ".repeat(300)}]}]},
        {"role": "assistant", "content": [{"type": "text", "text": format!("step {i} built")}]},
    ])
}

// Issue 28: on PostgreSQL 89 of 10,000 after-turns answered `busy` with
// one client per session: the lock row of a finished method was deleted
// only after drop, and the next method found it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
async fn prune_then_digest_on_eight_sessions_at_once_is_never_busy() {
    let db = crate::pg::PgSchema::new("attack_busy");
    let mut setup = Setup::new(std::path::Path::new("unused"));
    setup.pg = Some(db.connect(Duration::from_secs(30)));
    let server = setup.start().await;
    let api = server.client(TOKEN_A);
    let settings = json!({
        "method_order": ["prune", "digest"],
        "prune": {"protect_tokens": 500, "min_saving_tokens": 100, "min_result_tokens": 20}
    });
    let tasks: Vec<_> = (0..8)
        .map(|s| {
            let api: Api = api.clone();
            let settings = settings.clone();
            tokio::spawn(async move {
                let id = format!("busy-{s}");
                let (status, body) = api
                    .post(
                        "/v1/sessions",
                        &json!({"id": id, "window": 16_000, "settings": settings}),
                    )
                    .await;
                assert_eq!(status, 201, "{body}");
                let mut passes = Vec::new();
                for round in 0..6 {
                    for i in 0..4 {
                        let (status, body) = api
                            .post(
                                &format!("/v1/sessions/{id}/messages"),
                                &json!({"messages": tool_turn(round * 4 + i)}),
                            )
                            .await;
                        assert_eq!(status, 200, "{body}");
                    }
                    let (status, pass) = api
                        .post(&format!("/v1/sessions/{id}/compact"), &json!({}))
                        .await;
                    assert_eq!(status, 200, "{pass}");
                    passes.push(pass);
                }
                passes
            })
        })
        .collect();
    let mut methods_run = 0;
    for task in tasks {
        for pass in task.await.expect("a session's passes") {
            let text = pass.to_string();
            assert_ne!(pass["status"], "busy", "{text}");
            for failure in pass["failures"].as_array().into_iter().flatten() {
                assert_ne!(failure["kind"], "busy", "{text}");
            }
            methods_run += pass["outcomes"].as_array().map_or(0, Vec::len);
        }
    }
    assert!(methods_run >= 8, "the passes ran methods: {methods_run}");
    server.shutdown().await;
}
