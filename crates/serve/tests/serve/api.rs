//! Every route's happy path, in the order an agent calls them.

use serde_json::json;

use crate::common::Setup;
use crate::common::TOKEN_A;
use crate::common::fill;
use crate::common::small;

#[tokio::test]
async fn every_route_answers_in_an_agent_loop() {
    let dir = tempfile::tempdir().expect("dir");
    let mut setup = Setup::new(dir.path());
    setup.summarizer = Some(
        abridge_test_support::scripted::ScriptedClient::new(Vec::new())
            .fallback("the summary")
            .shared(),
    );
    let server = setup.start().await;
    let api = server.client(TOKEN_A);

    let (status, created) = api.post("/v1/sessions", &small("loop", &["digest"])).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["id"], "loop");
    assert_eq!(created["limits"]["window"], 24_000);
    let (status, again) = api.post("/v1/sessions", &small("loop", &["digest"])).await;
    assert_eq!(status, 409, "{again}");

    let (status, listed) = api.get("/v1/sessions").await;
    assert_eq!(status, 200);
    assert_eq!(listed["sessions"], json!(["loop"]));

    // Turns until the threshold is crossed; the last reply carries usage.
    let mut turns = 0;
    loop {
        let appended = fill(&api, "loop", turns..turns + 1).await;
        turns += 1;
        if appended["over_threshold"] == true {
            break;
        }
        assert!(turns < 200, "never crossed the threshold: {appended}");
    }
    let (status, appended) = api
        .post(
            "/v1/sessions/loop/messages",
            &json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "go on"}]},
                                 {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}],
                    "usage": {"input": 5_000, "output": 5}}),
        )
        .await;
    assert_eq!(status, 200, "{appended}");
    assert_eq!(appended["seqs"].as_array().map(Vec::len), Some(2));

    let (status, pass) = api.post("/v1/sessions/loop/after-turn", &json!({})).await;
    assert_eq!(status, 200, "{pass}");
    assert_eq!(pass["status"], "succeeded", "{pass}");
    assert_eq!(pass["outcomes"][0]["method"], "digest");

    let (status, context) = api.get("/v1/sessions/loop/context").await;
    assert_eq!(status, 200);
    let visible = context["messages"].as_array().expect("messages");
    assert!(visible.len() < turns * 2, "the surface shrank");
    assert_eq!(context["over_threshold"], false);

    let (status, plain) = api.get("/v1/sessions/loop/request").await;
    assert_eq!(status, 200);
    assert_eq!(plain["model"], "gpt-4o");
    assert!(plain.get("body").is_none());
    for provider in ["openai-chat", "openai-responses", "anthropic"] {
        let (status, shaped) = api
            .get(&format!("/v1/sessions/loop/request?provider={provider}"))
            .await;
        assert_eq!(status, 200, "{provider}: {shaped}");
        assert_eq!(shaped["provider"], provider);
        let body = &shaped["body"];
        let items = body
            .get("messages")
            .or_else(|| body.get("input"))
            .and_then(|v| v.as_array())
            .unwrap_or_else(|| panic!("{provider}: no messages in {body}"));
        assert!(!items.is_empty(), "{provider}");
        assert!(
            body.to_string().contains("checkpoint"),
            "{provider}: {body}"
        );
    }
    let (status, refused) = api.get("/v1/sessions/loop/request?provider=nope").await;
    assert_eq!(status, 400, "{refused}");

    let (status, stats) = api.get("/v1/sessions/loop/stats").await;
    assert_eq!(status, 200);
    assert_eq!(stats["methods"], json!(["digest"]));
    assert_eq!(stats["breaker_open"], false);
    assert!(stats["generation"].as_u64() > Some(0), "{stats}");

    let (status, toc) = api
        .post("/v1/sessions/loop/recall", &json!({"toc": true}))
        .await;
    assert_eq!(status, 200, "{toc}");
    let (status, found) = api
        .post("/v1/sessions/loop/recall", &json!({"query": "marker-0"}))
        .await;
    assert_eq!(status, 200, "{found}");
    assert!(
        found["text"].as_str().expect("text").contains("marker-0"),
        "{found}"
    );

    let (status, page) = api.get_text("/v1/sessions/loop/report").await;
    assert_eq!(status, 200);
    assert!(
        page.starts_with("<!DOCTYPE html>") || page.starts_with("<!doctype html>"),
        "{}",
        &page[..60]
    );
    assert!(page.contains("team-a/loop"));

    let (status, manual) = api
        .post(
            "/v1/sessions/loop/compact",
            &json!({"methods": ["digest"], "instructions": "keep the markers"}),
        )
        .await;
    assert_eq!(status, 200, "{manual}");
    assert_eq!(manual["trigger"], "manual");
    let (status, unknown) = api
        .post("/v1/sessions/loop/compact", &json!({"methods": ["nope"]}))
        .await;
    assert_eq!(status, 400, "{unknown}");

    let (status, recovered) = api
        .post(
            "/v1/sessions/loop/on-error",
            &json!({"error": "context_overflow", "message": "prompt is too long"}),
        )
        .await;
    assert_eq!(status, 200, "{recovered}");
    assert_eq!(recovered["recovery"], "compacted");
    let (status, other) = api
        .post("/v1/sessions/loop/on-error", &json!({"error": "other"}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(other["recovery"], "not_handled");

    let (status, summary) = api
        .post(
            "/v1/summarize",
            &json!({"system_prompt": "be brief", "prompt": "a long history", "max_tokens": 100}),
        )
        .await;
    assert_eq!(status, 200, "{summary}");
    assert_eq!(summary["summary"], "the summary");

    let (status, document) = api.get("/openapi.json").await;
    assert_eq!(status, 200);
    assert_eq!(document["openapi"], "3.1.0");
    server.shutdown().await;
}

#[tokio::test]
async fn a_rejected_batch_writes_nothing() {
    let dir = tempfile::tempdir().expect("dir");
    let server = Setup::new(dir.path()).start().await;
    let api = server.client(TOKEN_A);
    api.create(&small("s", &["digest"])).await;
    // A tool message without its result is refused, and the valid
    // message before it in the batch is not written either.
    let (status, body) = api
        .post(
            "/v1/sessions/s/messages",
            &json!({"messages": [
                {"role": "user", "content": [{"type": "text", "text": "hello"}]},
                {"role": "tool", "content": [{"type": "text", "text": "no result block"}]}
            ]}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(body["error"]["code"], "rejected");
    let (_, context) = api.get("/v1/sessions/s/context").await;
    assert_eq!(context["messages"], json!([]));
    let (status, body) = api
        .post(
            "/v1/sessions/s/messages",
            &json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                    "usage": {"input": 1, "output": 1}}),
        )
        .await;
    assert_eq!(status, 400, "usage needs an assistant reply: {body}");
    server.shutdown().await;
}

// Issue 11, point 7: an inline image whose header claims 100000x100000
// pixels is refused with 422, naming its JSON path; nothing is written.
#[tokio::test]
async fn an_image_claiming_past_the_pixel_cap_is_refused_with_its_path() {
    let dir = tempfile::tempdir().expect("dir");
    let server = Setup::new(dir.path()).start().await;
    let api = server.client(TOKEN_A);
    api.create(&small("s", &["digest"])).await;
    let image = json!({"type": "image", "source": {"kind": "base64", "media_type": "image/png",
        "data": abridge_llm::png_header_base64(100_000, 100_000)}});
    let (status, body) = api
        .post(
            "/v1/sessions/s/messages",
            &json!({"messages": [
                {"role": "user", "content": [{"type": "text", "text": "hello"}]},
                {"role": "user", "content": [{"type": "text", "text": "look"}, image]}
            ]}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        body["error"]["message"],
        "messages[1].content[1]: the image claims 100000x100000 pixels, over the limit of 50000000 pixels"
    );
    let (_, context) = api.get("/v1/sessions/s/context").await;
    assert_eq!(context["messages"], json!([]));
    server.shutdown().await;
}

// Issue 11: what `/v1/summarize` forwards to the summarizer model is
// redacted, as every request abridge sends for a session is.
#[tokio::test]
async fn summarize_forwards_no_secret() {
    use abridge_test_support::secrets;
    let dir = tempfile::tempdir().expect("dir");
    let model = abridge_test_support::scripted::ScriptedClient::new(Vec::new())
        .fallback("the summary")
        .shared();
    let mut setup = Setup::new(dir.path());
    setup.summarizer = Some(model.clone());
    setup.settings =
        abridge::Settings::from_toml(&secrets::settings_toml(), "abridge.toml").expect("settings");
    let server = setup.start().await;
    let api = server.client(TOKEN_A);
    let prompt = format!(
        "{}\n{}",
        secrets::user_message().plain_text(),
        secrets::tool_output()
    );
    let (status, answer) = api
        .post(
            "/v1/summarize",
            &json!({"system_prompt": secrets::tool_output(), "prompt": prompt}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let sent = format!("{:?}", model.requests());
    secrets::assert_no_secret("the forwarded summary request", &sent);
    secrets::assert_placeholders(
        "the forwarded summary request",
        &sent,
        &["openai-key", "private-key", "jwt", "custom"],
    );
    server.shutdown().await;
}
