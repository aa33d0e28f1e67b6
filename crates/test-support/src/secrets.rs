//! The redaction test session (issue 11): a user message and a tool
//! output holding one secret of every kind the redactor knows, plus a
//! match of a user pattern, so every crate's tests check the same secrets
//! on their own path (checkpoints, request bodies, frames, reports,
//! handoff files).
//!
//! Every secret is FAKE but has the shape of the real thing. They are
//! assembled from pieces at run time so no secret scanner flags this file.
//! Kinds are named as in their placeholders (`openai-key` becomes
//! `[redacted: openai-key]`); this crate does not depend on
//! `abridge-compact`, so tests there compare the names with `SecretKind`.

use std::path::Path;

use abridge_llm::Message;
use abridge_session::Header;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::Session;

/// The user pattern the fixture's settings add (`redact_patterns`).
pub const USER_PATTERN: &str = "ACME-[0-9]{8}";

/// Settings lines turning the user pattern on, for an `abridge.toml`.
pub fn settings_toml() -> String {
    format!("redact_patterns = [\"{USER_PATTERN}\"]\n")
}

/// One fake secret and the kind its placeholder names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secret {
    /// The kind's name, as in `[redacted: KIND]`.
    pub kind: &'static str,
    /// The secret as logged (for `aws-secret-key` and `url-password`, only
    /// the part that is replaced).
    pub value: String,
}

impl Secret {
    /// The text that stands for it after redaction.
    pub fn placeholder(&self) -> String {
        placeholder(self.kind)
    }
}

/// The placeholder of a kind, `[redacted: KIND]`.
pub fn placeholder(kind: &str) -> String {
    format!("[redacted: {kind}]")
}

/// A body line of the fake OpenSSH key: base64 of `openssh-key-v1`, then
/// filler in the key alphabet.
fn key_line(n: usize) -> String {
    let line = format!("b3BlbnNzaC1rZXktdjE{}", "FAKEkey0".repeat(8));
    format!("{}{n}", &line[..69])
}

/// Every secret of the fixture, one per kind.
pub fn secrets() -> Vec<Secret> {
    let r = |s: &str, n: usize| s.repeat(n);
    let secret = |kind, value: String| Secret { kind, value };
    vec![
        secret("openai-key", format!("sk-proj-{}", r("Fake0", 10))),
        secret("anthropic-key", format!("sk-ant-api03-{}", r("Fake1", 10))),
        secret("aws-access-key-id", format!("AKIA{}", r("FAKE", 4))),
        secret(
            "aws-secret-key",
            format!("{}/{}", r("fAkE", 5), r("Se9x", 4) + "KEY"),
        ),
        secret("github-token", format!("ghp_{}", r("Fake2", 8))),
        secret(
            "slack-token",
            format!("xoxb-{}-{}", r("1", 12), r("Fake3", 5)),
        ),
        secret(
            "slack-webhook",
            format!(
                "https://hooks.slack.com/services/T{}/B{}/{}",
                r("0", 8),
                r("1", 8),
                r("Fk", 12)
            ),
        ),
        secret(
            "google-api-key",
            format!("AIza{}", &r("Fake4Fake", 4)[..35]),
        ),
        secret(
            "jwt",
            format!(
                "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJmYWtlIn0.{}",
                r("FakeSig", 4)
            ),
        ),
        secret("url-password", format!("pw{}", r("Fake5", 3))),
        secret(
            "private-key",
            (0..3).map(key_line).collect::<Vec<_>>().join("\n"),
        ),
        secret("custom", format!("ACME-{}", r("20", 4))),
    ]
}

/// The secret of `kind`. Panics naming the kind when there is none.
pub fn secret(kind: &str) -> String {
    secrets()
        .into_iter()
        .find(|s| s.kind == kind)
        .unwrap_or_else(|| panic!("the fixture has no {kind:?} secret"))
        .value
}

/// Every line of each secret worth looking for: a multi-line key is
/// searched line by line, so a key cut short is still found.
fn needles() -> Vec<(&'static str, String)> {
    secrets()
        .into_iter()
        .flat_map(|s| {
            s.value
                .lines()
                .map(|line| (s.kind, line.to_string()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The user's message: the four keys of the issue and the user pattern.
pub fn user_message() -> Message {
    Message::user(format!(
        "Deploy with OPENAI_API_KEY={} and ANTHROPIC_API_KEY={}; the AWS id is {} and \
         aws_secret_access_key = {}. The ticket is {}.",
        secret("openai-key"),
        secret("anthropic-key"),
        secret("aws-access-key-id"),
        secret("aws-secret-key"),
        secret("custom"),
    ))
}

/// The tool output: an OpenSSH private key and one secret of every kind.
pub fn tool_output() -> String {
    format!(
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----\n\
         OPENAI={}\nANTHROPIC={}\nAWS_ACCESS_KEY_ID={}\naws_secret_access_key={}\n\
         GITHUB_TOKEN={}\nSLACK={}\nSLACK_HOOK={}\nGOOGLE={}\nSESSION={}\n\
         DATABASE_URL=postgres://app:{}@db:5432/prod\nTICKET={}\n",
        secret("private-key"),
        secret("openai-key"),
        secret("anthropic-key"),
        secret("aws-access-key-id"),
        secret("aws-secret-key"),
        secret("github-token"),
        secret("slack-token"),
        secret("slack-webhook"),
        secret("google-api-key"),
        secret("jwt"),
        secret("url-password"),
        secret("custom"),
    )
}

/// The four messages holding secrets: the user's, a `bash` call, its
/// output, and the assistant's acknowledgement.
pub fn secret_messages() -> Vec<Message> {
    vec![
        user_message(),
        Message::tool_call(
            "c1",
            "bash",
            serde_json::json!({"cmd": "cat ~/.ssh/id_ed25519 .env"}),
        ),
        Message::tool_result("c1", tool_output(), false),
        Message::assistant("I have the credentials."),
    ]
}

/// `turns` ordinary user/assistant exchanges of about 100 tokens each,
/// numbered from `from`.
pub fn filler(from: usize, turns: usize) -> Vec<Message> {
    (from..from + turns)
        .flat_map(|i| {
            [
                Message::user(format!("step {i}: {}", "work ".repeat(80))),
                Message::assistant(format!("did step {i}")),
            ]
        })
        .collect()
}

/// The messages of the fixture: `before` filler turns, the secrets, then
/// `after` filler turns (enough that the secrets fall in a compacted span).
pub fn messages(before: usize, after: usize) -> Vec<Message> {
    let mut out = filler(0, before);
    out.extend(secret_messages());
    out.extend(filler(before, after));
    out
}

/// The fixture in memory: the secrets first, then twelve filler turns.
pub fn session() -> Session {
    session_with(0, 12)
}

/// The fixture in memory with `before` and `after` filler turns around the
/// secrets (snapcompact images only the middle of what it hides, so there
/// the secrets must sit in neither its verbatim head nor its tail).
pub fn session_with(before: usize, after: usize) -> Session {
    let mut session = Session::in_memory("secrets");
    for message in messages(before, after) {
        session.append_message(message).expect("append a message");
    }
    session
}

/// Writes the fixture (as [`session_with`]) as a session file at `path`
/// and an `abridge.toml` with the user pattern beside it (what `report`
/// and `render` read).
pub fn write_session(path: &Path, before: usize, after: usize) {
    let store = JsonlStore::open(path, JsonlOptions::default()).expect("open the session file");
    let mut session =
        Session::create(Box::new(store), Header::new("secrets")).expect("create the session");
    for message in messages(before, after) {
        session.append_message(message).expect("append a message");
    }
    session.sync().expect("sync the session");
    let settings = path.with_file_name("abridge.toml");
    std::fs::write(&settings, settings_toml()).expect("write abridge.toml");
}

/// Panics naming the kind and `what` when `text` holds any secret (any
/// line of a multi-line one).
pub fn assert_no_secret(what: &str, text: &str) {
    for (kind, needle) in needles() {
        assert!(
            !text.contains(&needle),
            "{what} holds the {kind} secret {needle:?}:\n{text}"
        );
    }
}

/// Panics unless `text` holds the placeholder of every kind in `kinds`.
pub fn assert_placeholders(what: &str, text: &str, kinds: &[&str]) {
    for kind in kinds {
        assert!(
            text.contains(&placeholder(kind)),
            "{what} lacks the placeholder {}:\n{text}",
            placeholder(kind)
        );
    }
}

/// Every kind of the fixture.
pub fn all_kinds() -> Vec<&'static str> {
    secrets().into_iter().map(|s| s.kind).collect()
}

/// Panics unless `text` (the logged originals) still holds every secret.
pub fn assert_originals(what: &str, text: &str) {
    for (kind, needle) in needles() {
        assert!(
            text.contains(&needle),
            "{what} lost the {kind} original {needle:?}"
        );
    }
}
