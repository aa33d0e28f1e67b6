//! The official `anthropic` and `openai` Python SDKs through the proxy to
//! the fake upstream, streamed and not, with tools (tests/sdk/clients.py).
//!
//! Ignored by default: it needs a Python with both packages, the ones
//! `cargo xtask wire` installs and then runs this test with (`~/.cache/abridge-e2e/wire-venv`, or
//! `ABRIDGE_SDK_PYTHON`). Run it with
//! `cargo test -p abridge-proxy --test proxy sdk -- --ignored`.

use std::path::PathBuf;

use crate::common::*;

fn python() -> PathBuf {
    if let Some(python) = std::env::var_os("ABRIDGE_SDK_PYTHON") {
        return PathBuf::from(python);
    }
    let home = std::env::var_os("HOME").expect("HOME");
    PathBuf::from(home).join(".cache/abridge-e2e/wire-venv/bin/python")
}

#[tokio::test]
#[ignore = "needs the openai and anthropic Python packages (cargo xtask wire installs them)"]
async fn the_official_sdks_talk_through_the_proxy() {
    let store = tempfile::tempdir().unwrap();
    let (url, upstream) = proxy(store.path(), Setup::default()).await;
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/clients.py");
    let run = url.clone();
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python())
            .arg(script)
            .arg(run)
            .output()
    })
    .await
    .unwrap()
    .expect("run python");
    let out = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let calls: Vec<&str> = lines.iter().map(|l| l["call"].as_str().unwrap()).collect();
    assert_eq!(
        calls,
        [
            "anthropic",
            "anthropic-stream",
            "chat",
            "chat-stream",
            "responses"
        ]
    );
    for line in &lines {
        assert!(
            line["text"]
                .as_str()
                .unwrap()
                .starts_with("working on step"),
            "{line}"
        );
    }
    // Each SDK's second call continued its first call's session.
    assert_eq!(upstream.all().len(), 5);
    assert_eq!(
        session_logs(store.path()).len(),
        3,
        "anthropic, chat, responses"
    );
    for (name, bytes) in files_under(store.path()) {
        assert!(
            !String::from_utf8_lossy(&bytes).contains("SECRET"),
            "{name} holds a key"
        );
    }
}
