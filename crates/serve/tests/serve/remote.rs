//! One abridge serving another: a `remote` method pointed at a serve
//! instance's summary endpoint writes the checkpoint.

use abridge::Harness;
use abridge::PassStatus;
use abridge::Settings;
use abridge_compact_basic::RemoteConfig;
use abridge_compact_basic::RemoteKind;
use abridge_llm::Message;
use abridge_providers::ApiKey;
use abridge_session::Session;
use abridge_test_support::scripted::ScriptedClient;

use crate::common::Setup;
use crate::common::TOKEN_A;

#[tokio::test]
async fn a_remote_method_compacts_through_a_serve_instance() {
    let dir = tempfile::tempdir().expect("dir");
    let scripted = ScriptedClient::new(Vec::new())
        .fallback("Goal: port the selectors. Done: steps 0-39.")
        .shared();
    let mut setup = Setup::new(dir.path());
    setup.summarizer = Some(scripted.clone());
    let server = setup.start().await;

    let mut config = RemoteConfig::new(
        RemoteKind::Endpoint,
        format!("{}/v1/summarize", server.base),
        "",
    );
    config.api_key = Some(ApiKey::new(TOKEN_A));
    let remote = abridge_compact_basic::remote_method(config).expect("remote");
    let settings = Settings::from_toml("method_order = [\"remote\"]\n", "test").expect("settings");
    let harness = Harness::builder(Session::in_memory("client"), "gpt-4o")
        .settings(settings)
        .window(24_000)
        .methods(vec![remote])
        .build()
        .expect("harness");
    for i in 0..40 {
        harness
            .append(Message::user(format!(
                "step {i}: {}",
                "details ".repeat(300)
            )))
            .expect("append");
        harness
            .append(Message::assistant(format!("did step {i}")))
            .expect("append");
    }
    let pass = harness
        .compact(&["remote".to_string()], None)
        .await
        .expect("pass");
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
    assert_eq!(pass.outcomes[0].method, "remote");
    let request = harness.request().expect("request");
    let text: String = request.iter().map(|m| m.plain_text()).collect();
    assert!(text.contains("port the selectors"), "{text}");
    // The serve instance's summarizer got the history as the prompt.
    let asked = scripted.requests();
    assert!(!asked.is_empty());
    assert!(
        asked[0]
            .messages
            .iter()
            .any(|m| m.plain_text().contains("step 0")),
        "the history reached the summarizer"
    );
    server.shutdown().await;
}
