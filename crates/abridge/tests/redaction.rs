//! Secrets in a session never reach what compaction writes (issue 11,
//! point 1): the shared redaction session (`abridge_test_support::secrets`)
//! compacted by digest and recalled, with the log keeping the originals.
//! The methods that send requests are checked on the wire in
//! `redaction_wire.rs`, snapcompact's frames in `redaction_frames.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use abridge::Harness;
use abridge::Settings;
use abridge_compact::host::SecretKind;
use abridge_test_support::secrets;

fn run<T>(future: impl std::future::Future<Output = T>) -> T {
    futures::executor::block_on(future)
}

fn harness(methods: &str, extra: &str) -> Harness {
    let settings = Settings::from_toml(
        &format!(
            // A small fixture session: the reclaim floor is off.
            "method_order = [{methods}]\nkeep_recent_tokens = 400\nmin_reclaim_percent = 0\n{}{extra}",
            secrets::settings_toml()
        ),
        "abridge.toml",
    )
    .unwrap();
    Harness::builder(secrets::session(), "claude-sonnet-4-5")
        .settings(settings)
        .window(200_000)
        .build()
        .unwrap()
}

/// Every event compaction appended after the fixture's, as logged.
fn written(harness: &Harness, from: usize) -> String {
    let session = abridge_compact::host::lock_session(harness.session());
    (from as u64..session.len() as u64)
        .filter_map(|seq| session.event(seq))
        .map(|e| format!("{e:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The fixture's own events, as logged.
fn logged(harness: &Harness, to: usize) -> String {
    let session = abridge_compact::host::lock_session(harness.session());
    (0..to as u64)
        .filter_map(|seq| session.event(seq))
        .map(|e| format!("{e:?}"))
        .collect()
}

#[test]
fn the_fixture_holds_one_secret_of_every_kind() {
    let names: Vec<&str> = SecretKind::ALL.iter().map(|k| k.name()).collect();
    let mut fixture = secrets::all_kinds();
    fixture.sort_unstable();
    let mut all = names.clone();
    all.sort_unstable();
    assert_eq!(fixture, all);
    for kind in SecretKind::ALL {
        assert_eq!(kind.placeholder(), secrets::placeholder(kind.name()));
    }
}

#[test]
fn digest_checkpoint_holds_placeholders_not_secrets() {
    let harness = harness("\"digest\"", "");
    let before = abridge_compact::host::lock_session(harness.session()).len();
    let pass = run(harness.compact(&[], None)).unwrap();
    assert!(pass.landed(), "{pass:?}");
    let text = written(&harness, before);
    secrets::assert_no_secret("the digest checkpoint", &text);
    secrets::assert_placeholders(
        "the digest checkpoint",
        &text,
        &["openai-key", "anthropic-key", "aws-access-key-id", "custom"],
    );
    secrets::assert_originals("the log", &logged(&harness, before));
    let session = abridge_compact::host::lock_session(harness.session());
    let checkpoint = session
        .surface_messages()
        .into_iter()
        .find(|m| abridge_compact::host::is_checkpoint(m))
        .unwrap();
    insta::assert_snapshot!(
        "redacted_digest",
        abridge_compact::host::checkpoint_body(&checkpoint)
    );
}

#[test]
fn recall_answers_redacted_unless_originals_are_allowed() {
    let redacting = harness("\"digest\"", "");
    run(redacting.compact(&[], None)).unwrap();
    // The tool output is the fixture's third message, seq 2.
    let answer = redacting
        .call_tool("recall", &serde_json::json!({"ref": "recall://2"}))
        .unwrap();
    secrets::assert_no_secret("recall", &answer);
    secrets::assert_placeholders("recall", &answer, &secrets::all_kinds());

    let open = harness("\"digest\"", "recall_originals = true\n");
    run(open.compact(&[], None)).unwrap();
    let answer = open
        .call_tool("recall", &serde_json::json!({"ref": "recall://2"}))
        .unwrap();
    secrets::assert_originals("recall with originals allowed", &answer);
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
