use proptest::prelude::*;
use serde_json::json;

use super::*;
use abridge_llm::Message;

/// Fake secrets in each format, built from pieces so no scanner mistakes
/// this file for a leak.
pub(crate) fn fake(kind: SecretKind) -> String {
    let run = |c: &str, n: usize| c.repeat(n);
    match kind {
        SecretKind::OpenAiKey => format!("sk-proj-{}", run("Fake0", 10)),
        SecretKind::AnthropicKey => format!("sk-ant-api03-{}", run("Fake1", 10)),
        SecretKind::AwsAccessKeyId => format!("AKIA{}", run("FAKE", 4)),
        SecretKind::AwsSecretKey => run("fAk3/+", 7)[..40].to_string(),
        SecretKind::GithubToken => format!("ghp_{}", run("Fake2", 8)),
        SecretKind::SlackToken => format!("xoxb-{}-{}", run("1", 12), run("Fake3", 5)),
        SecretKind::SlackWebhook => {
            format!(
                "https://hooks.slack.com/services/T{0}/B{0}/{1}",
                run("0", 8),
                run("x", 24)
            )
        }
        SecretKind::GoogleApiKey => format!("AIza{}", &run("Fake4Fake", 4)[..35]),
        SecretKind::Jwt => format!(
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmYWtlIn0.{}",
            run("FakeSig", 4)
        ),
        SecretKind::PrivateKey => format!(
            "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n{}\n-----END OPENSSH PRIVATE KEY-----",
            run("b3BlbnNzaC1rZXktdjEAAAAA", 3),
            run("FAKEFAKE", 4)
        ),
        SecretKind::UrlPassword => format!("hunter2{}", run("Fake5", 3)),
        SecretKind::Custom => "ACME-TOKEN-0000".to_string(),
    }
}

fn redactor() -> Redactor {
    Redactor::builtin().unwrap()
}

#[test]
fn placeholders_are_exact_and_name_their_kind() {
    assert_eq!(REDACTION_OPENING, "[redacted: ");
    assert_eq!(
        SecretKind::OpenAiKey.placeholder(),
        "[redacted: openai-key]"
    );
    for kind in SecretKind::ALL {
        assert_eq!(
            kind.placeholder(),
            format!("{REDACTION_OPENING}{}]", kind.name()),
            "{kind:?}"
        );
    }
}

#[test]
fn every_builtin_kind_is_replaced_by_its_placeholder() {
    let r = redactor();
    for kind in SecretKind::ALL {
        let secret = fake(*kind);
        let text = match kind {
            SecretKind::AwsSecretKey => format!("aws_secret_access_key = {secret}"),
            SecretKind::UrlPassword => format!("postgres://app:{secret}@db.internal:5432/x"),
            SecretKind::Custom => continue,
            _ => format!("use {secret} now"),
        };
        let out = r.redact(&text);
        assert!(!out.contains(&secret), "{kind:?} leaked: {out}");
        assert!(out.contains(kind.placeholder()), "{kind:?}: {out}");
    }
}

#[test]
fn frames_around_a_secret_are_kept() {
    let r = redactor();
    let secret = fake(SecretKind::AwsSecretKey);
    assert_eq!(
        r.redact(&format!("AWS_SECRET_ACCESS_KEY=\"{secret}\"")),
        "AWS_SECRET_ACCESS_KEY=\"[redacted: aws-secret-key]\""
    );
    assert_eq!(
        r.redact("redis://admin:s3cr3t@cache:6379/0 and https://u:p@ss@host/x"),
        "redis://admin:[redacted: url-password]@cache:6379/0 and https://u:[redacted: url-password]@host/x"
    );
    assert_eq!(
        r.redact(&format!("key={}.", fake(SecretKind::OpenAiKey))),
        "key=[redacted: openai-key]."
    );
    // A key used as a URL's user name goes with the password, in one pass
    // (found by the idempotence property: the key used to survive the
    // first pass, copied out with the URL around the password).
    let key = fake(SecretKind::AnthropicKey);
    let once = r
        .redact(&format!("A://{key}:!@ and https://{key}:pw@host/x"))
        .into_owned();
    assert_eq!(
        once,
        "A://[redacted: anthropic-key]:[redacted: url-password]@ and https://[redacted: anthropic-key]:[redacted: url-password]@host/x"
    );
    assert_eq!(r.redact(&once), once);
}

#[test]
fn anthropic_keys_are_not_called_openai_keys() {
    let out = redactor()
        .redact(&fake(SecretKind::AnthropicKey))
        .into_owned();
    assert_eq!(out, "[redacted: anthropic-key]");
    let legacy = format!("sk-{}", "A1b2C3d4".repeat(6));
    assert_eq!(redactor().redact(&legacy), "[redacted: openai-key]");
}

#[test]
fn ordinary_prose_and_identifiers_are_left_alone() {
    let r = redactor();
    for text in [
        "task-management-system-overview-and-more",
        "pip install sk-learn-is-not-a-package-name",
        "ASIA and AKIA are prefixes; AKIAshort is not a key",
        "eyJ alone, or eyJabc.def",
        "https://example.com/a:b@c and mailto:me@example.com",
        "user@host:path and ssh://host/path",
        "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
        "the ghp_ prefix names a GitHub token",
        "[redacted: openai-key] stays as it is",
    ] {
        assert!(matches!(r.redact(text), Cow::Borrowed(_)), "{text}");
    }
}

#[test]
fn user_patterns_redact_as_custom_and_are_checked() {
    let r = Redactor::new(&["ACME-TOKEN-[0-9]{4}".to_string()]).unwrap();
    assert_eq!(r.redact("t=ACME-TOKEN-0000!"), "t=[redacted: custom]!");
    assert_eq!(r.user_patterns(), ["ACME-TOKEN-[0-9]{4}"]);
    assert_eq!(
        Redactor::new(&["a(".to_string()])
            .unwrap_err()
            .to_string()
            .lines()
            .next(),
        Some("pattern \"a(\" is not a valid regular expression: regex parse error:")
    );
    assert_eq!(
        Redactor::new(&["x*".to_string()]).unwrap_err(),
        RedactError::MatchesEmpty {
            pattern: "x*".to_string()
        }
    );
    assert!(matches!(
        Redactor::new(&["\\b".to_string()]),
        Err(RedactError::MatchesEmpty { .. })
    ));
}

#[test]
fn messages_are_redacted_in_every_text_and_shared_when_clean() {
    let r = redactor();
    let key = fake(SecretKind::OpenAiKey);
    let clean = Arc::new(Message::user("nothing here"));
    assert!(Arc::ptr_eq(&r.redact_shared(&clean), &clean));
    let call = Message::tool_call(
        "c1",
        "bash",
        json!({"cmd": format!("export K={key}"), "n": 1}),
    );
    let out = r.redact_message(&call).unwrap();
    let text = serde_json::to_string(&out).unwrap();
    assert!(!text.contains(&key));
    assert!(text.contains("export K=[redacted: openai-key]"));
    let result = Message::tool_result("c1", format!("K={key}"), false);
    let out = serde_json::to_string(&r.redact_message(&result).unwrap()).unwrap();
    assert!(!out.contains(&key), "{out}");
}

#[test]
fn a_private_key_cut_short_is_still_redacted() {
    let r = redactor();
    let text =
        "head\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nQWERTY==\n… 40 lines cut …\n";
    assert_eq!(
        r.redact(text),
        "head\n[redacted: private-key]\n… 40 lines cut …\n"
    );
}

use std::sync::Arc;

/// Pieces that look like secrets or their frames, so random strings built
/// from them hit the patterns' edges far more often than arbitrary text.
fn piece() -> impl Strategy<Value = String> {
    let fixed: Vec<String> = SecretKind::ALL
        .iter()
        .map(|k| fake(*k))
        .chain(
            [
                "sk-",
                "sk-ant-",
                "AKIA",
                "ghp_",
                "xoxb-",
                "AIza",
                "eyJ",
                ".",
                "://",
                ":",
                "@",
                "/",
                "=",
                " ",
                "\n",
                "-----BEGIN ",
                "PRIVATE KEY-----",
                "-----END ",
                "aws_secret_access_key=",
                "[redacted: ",
                "]",
                "é",
                "\\n",
            ]
            .iter()
            .map(|s| s.to_string()),
        )
        .collect();
    prop_oneof![
        proptest::sample::select(fixed),
        "[A-Za-z0-9_+/=-]{0,24}",
        any::<String>(),
    ]
}

proptest! {
    #[test]
    fn redaction_is_idempotent_and_never_panics(text in any::<String>()) {
        let r = redactor();
        let once = r.redact(&text).into_owned();
        prop_assert_eq!(r.redact(&once).into_owned(), once);
    }

    #[test]
    fn redaction_is_idempotent_on_secret_shaped_text(
        pieces in proptest::collection::vec(piece(), 0..12)
    ) {
        let r = Redactor::new(&["ACME-TOKEN-[0-9]{4}".to_string()]).unwrap();
        let text = pieces.concat();
        let once = r.redact(&text).into_owned();
        let twice = r.redact(&once).into_owned();
        prop_assert_eq!(&twice, &once, "input {:?}", text);
    }
}
