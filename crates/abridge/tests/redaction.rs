//! Secrets in a session never reach what compaction writes or sends (issue
//! 11, point 1): a user message and a tool output holding a key in every
//! format, compacted by each method, recalled, with the log keeping the
//! originals.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use abridge::Harness;
use abridge::Settings;
use abridge::llm::Message;
use abridge::session::Session;
use abridge_compact::SecretKind;

fn run<T>(future: impl std::future::Future<Output = T>) -> T {
    futures::executor::block_on(future)
}

/// FAKE secrets, one per format, assembled so no scanner flags this file.
fn secrets() -> Vec<(SecretKind, String)> {
    let r = |s: &str, n: usize| s.repeat(n);
    vec![
        (SecretKind::OpenAiKey, format!("sk-proj-{}", r("Fake0", 10))),
        (
            SecretKind::AnthropicKey,
            format!("sk-ant-api03-{}", r("Fake1", 10)),
        ),
        (SecretKind::AwsAccessKeyId, format!("AKIA{}", r("FAKE", 4))),
        (SecretKind::GithubToken, format!("ghp_{}", r("Fake2", 8))),
        (
            SecretKind::SlackToken,
            format!("xoxb-{}-{}", r("1", 12), r("Fake3", 5)),
        ),
        (
            SecretKind::GoogleApiKey,
            format!("AIza{}", &r("Fake4Fake", 4)[..35]),
        ),
        (
            SecretKind::Jwt,
            format!(
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmYWtlIn0.{}",
                r("FakeSig", 4)
            ),
        ),
        (SecretKind::UrlPassword, format!("pw{}", r("Fake5", 3))),
        (
            SecretKind::PrivateKey,
            format!("b3BlbnNzaC1{}", r("FAKEKEYLINE", 5)),
        ),
    ]
}

fn secret(kind: SecretKind) -> String {
    secrets().into_iter().find(|(k, _)| *k == kind).unwrap().1
}

/// The fixture: the user pastes keys, a tool prints an OpenSSH key and the
/// rest, then enough ordinary turns that the secrets fall in the span.
fn session() -> Session {
    let mut s = Session::in_memory("secrets");
    s.append_message(Message::user(format!(
        "Deploy with OPENAI_API_KEY={} and ANTHROPIC_API_KEY={}; the AWS id is {}.",
        secret(SecretKind::OpenAiKey),
        secret(SecretKind::AnthropicKey),
        secret(SecretKind::AwsAccessKeyId),
    )))
    .unwrap();
    s.append_message(Message::tool_call(
        "c1",
        "bash",
        serde_json::json!({"cmd": "cat ~/.ssh/id_ed25519 .env"}),
    ))
    .unwrap();
    s.append_message(Message::tool_result(
        "c1",
        format!(
            "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\nGITHUB_TOKEN={}\nSLACK={}\nGOOGLE={}\nSESSION={}\nDATABASE_URL=postgres://app:{}@db:5432/prod\nOPENAI={}\nAWS={}\n",
            secret(SecretKind::PrivateKey),
            secret(SecretKind::GithubToken),
            secret(SecretKind::SlackToken),
            secret(SecretKind::GoogleApiKey),
            secret(SecretKind::Jwt),
            secret(SecretKind::UrlPassword),
            secret(SecretKind::OpenAiKey),
            secret(SecretKind::AwsAccessKeyId),
        ),
        false,
    ))
    .unwrap();
    s.append_message(Message::assistant("I have the credentials."))
        .unwrap();
    for i in 0..12 {
        s.append_message(Message::user(format!("step {i}: {}", "work ".repeat(80))))
            .unwrap();
        s.append_message(Message::assistant(format!("did step {i}")))
            .unwrap();
    }
    s
}

fn assert_clean(what: &str, text: &str) {
    for (kind, secret) in secrets() {
        assert!(
            !text.contains(&secret),
            "{what} holds the {kind:?} secret:\n{text}"
        );
    }
}

fn harness(methods: &str) -> Harness {
    let settings = Settings::from_toml(
        &format!("method_order = [{methods}]\nkeep_recent_tokens = 400\n"),
        "abridge.toml",
    )
    .unwrap();
    Harness::builder(session(), "claude-sonnet-4-5")
        .settings(settings)
        .window(200_000)
        .build()
        .unwrap()
}

/// Every event of the log after the fixture's: what compaction wrote.
fn written(harness: &Harness) -> String {
    let session = abridge_compact::lock_session(harness.session());
    (34..session.len() as u64)
        .filter_map(|seq| session.event(seq))
        .map(|e| format!("{e:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn log_holds_originals(harness: &Harness) {
    let session = abridge_compact::lock_session(harness.session());
    let original: String = (0..3)
        .filter_map(|seq| session.message(seq))
        .map(|m| serde_json::to_string(&**m).unwrap())
        .collect();
    for (kind, secret) in secrets() {
        assert!(
            original.contains(&secret),
            "the log lost the {kind:?} original"
        );
    }
}

#[test]
fn digest_checkpoint_holds_placeholders_not_secrets() {
    let harness = harness("\"digest\"");
    let pass = run(harness.compact(&[], None)).unwrap();
    assert!(pass.landed(), "{pass:?}");
    let text = written(&harness);
    assert_clean("the digest checkpoint", &text);
    log_holds_originals(&harness);
    let session = abridge_compact::lock_session(harness.session());
    let checkpoint = session
        .surface_messages()
        .into_iter()
        .find(|m| abridge_compact::is_checkpoint(m))
        .unwrap();
    insta::assert_snapshot!(
        "redacted_digest",
        abridge_compact::checkpoint_body(&checkpoint)
    );
}

#[test]
fn recall_answers_redacted_unless_originals_are_allowed() {
    let harness = harness("\"digest\"");
    run(harness.compact(&[], None)).unwrap();
    let answer = harness
        .call_tool("recall", &serde_json::json!({"ref": "recall://2"}))
        .unwrap();
    assert_clean("recall", &answer);
    assert!(answer.contains("[redacted: private-key]"), "{answer}");

    let settings = Settings::from_toml(
        "method_order = [\"digest\"]\nkeep_recent_tokens = 400\nrecall_originals = true\n",
        "abridge.toml",
    )
    .unwrap();
    let open = Harness::builder(session(), "claude-sonnet-4-5")
        .settings(settings)
        .window(200_000)
        .build()
        .unwrap();
    run(open.compact(&[], None)).unwrap();
    let answer = open
        .call_tool("recall", &serde_json::json!({"ref": "recall://2"}))
        .unwrap();
    assert!(answer.contains(&secret(SecretKind::PrivateKey)), "{answer}");
}

#[test]
fn a_bad_user_pattern_is_named_with_its_key() {
    let error = Settings::from_toml("redact_patterns = [\"token-(\"]\n", "abridge.toml")
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with(
            "abridge.toml:1: redact_patterns: pattern \"token-(\" is not a valid regular expression"
        ),
        "{error}"
    );
}
