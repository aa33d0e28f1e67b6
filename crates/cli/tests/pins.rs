//! `abridge pin`, the pins in `stats` and `context`, and `abridge recall
//! --path`, as a user runs them on the bundled sessions.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use abridge_test_support::cli::Cli;
use abridge_test_support::cli::stderr;
use abridge_test_support::cli::stdout;
use abridge_test_support::samples::PI;
use abridge_test_support::samples::SWE;

const NEVER: &str = "Never push to the main branch.";

fn cli() -> Cli {
    Cli::new(env!("CARGO_BIN_EXE_abridge"))
}

/// The seq and text of the first user message with text in the log.
fn first_user(path: &std::path::Path) -> (u64, String) {
    let text = std::fs::read_to_string(path).unwrap();
    for line in text.lines().skip(1) {
        let event: serde_json::Value = serde_json::from_str(line).unwrap();
        let message = &event["data"]["message"];
        if event["type"] == "message" && message["role"] == "user" {
            let blocks = message["content"].as_array().unwrap();
            if let [block] = blocks.as_slice()
                && let Some(text) = block["text"].as_str()
            {
                return (event["seq"].as_u64().unwrap(), text.to_string());
            }
        }
    }
    panic!("no user message with one text block in {}", path.display());
}

/// How many text blocks of the context's messages are exactly `text`.
fn times_in_context(path: &str, text: &str) -> usize {
    let out = cli().ok(&["context", path, "--json"]);
    let messages: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    messages
        .iter()
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["text"].as_str() == Some(text))
        .count()
}

#[test]
fn pins_are_written_listed_and_kept_through_a_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let session = cli().import(dir.path(), SWE);
    let path = session.to_str().unwrap();
    let (seq, request) = first_user(&session);

    let pinned = cli().ok(&["pin", path, &seq.to_string()]);
    assert!(
        stdout(&pinned).starts_with("pinned at seq "),
        "{}",
        stdout(&pinned)
    );
    cli().ok(&["pin", path, "--text", NEVER]);
    let refused = cli().run(&["pin", path, "999999"]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("pin refused"),
        "{}",
        stderr(&refused)
    );

    assert_eq!(times_in_context(path, &request), 1);
    assert_eq!(times_in_context(path, NEVER), 1);
    cli().ok(&[
        "compact", path, "--method", "digest", "--window", "8000", "--keep", "1500",
    ]);
    assert_eq!(times_in_context(path, &request), 1, "after the digest");
    assert_eq!(times_in_context(path, NEVER), 1, "after the digest");
    cli().ok(&["check", path]);

    let stats = stdout(&cli().ok(&["stats", path]));
    assert!(stats.contains("pins (2)"), "{stats}");
    assert!(stats.contains("· user ·"), "{stats}");
    let json: serde_json::Value =
        serde_json::from_slice(&cli().ok(&["stats", path, "--json"]).stdout).unwrap();
    let pins = json["pins"].as_array().unwrap();
    assert_eq!(pins.len(), 2);
    assert_eq!(pins[0]["seq"], seq);
    assert_eq!(
        pins[0]["visible"], false,
        "the digest hid the pinned request"
    );
    assert!(pins[1]["tokens"].as_u64().unwrap() > 0);
    let listed = stdout(&cli().ok(&["pin", path]));
    assert_eq!(listed.lines().count(), 2, "{listed}");

    let html = dir.path().join("report.html");
    cli().ok(&["report", path, "-o", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<h2>Pins (2)</h2>"), "no pins section");
    assert!(page.contains(NEVER));
}

#[test]
fn recall_path_prints_the_last_read_of_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let session = cli().import(dir.path(), PI);
    let path = session.to_str().unwrap();
    let file = "packages/coding-agent/docs/theme.md";
    let read = stdout(&cli().ok(&["recall", path, "--path", file]));
    assert!(
        read.starts_with(&format!("last read of {file} (recall://")),
        "{read}"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&cli().ok(&["recall", path, "--path", file, "--json"]).stdout)
            .unwrap();
    assert_eq!(json["path"], file);
    assert!(json["text"].as_str().unwrap().contains("recall://"));
    let missing = cli().run(&["recall", path, "--path", "no/such/file.rs"]);
    assert!(!missing.status.success());
    assert!(
        stderr(&missing).contains("--path no/such/file.rs"),
        "{}",
        stderr(&missing)
    );
}

/// Issue 32: `abridge pin --remove` takes a pin back with an `unpin`
/// event; listings and the context show only live pins, a second unpin
/// of it is refused with nothing written, and `check` refuses an unpin
/// line that names no pin, naming its seq.
#[test]
fn a_removed_pin_is_no_longer_listed_or_sent_and_check_refuses_a_bad_unpin() {
    let dir = tempfile::tempdir().unwrap();
    let session = cli().import(dir.path(), SWE);
    let path = session.to_str().unwrap();
    let (seq, _) = first_user(&session);
    cli().ok(&["pin", path, &seq.to_string()]);
    let pinned = stdout(&cli().ok(&["pin", path, "--text", NEVER]));
    let pin: u64 = pinned.trim().rsplit(' ').next().unwrap().parse().unwrap();
    assert_eq!(times_in_context(path, NEVER), 1);

    let removed = stdout(&cli().ok(&["pin", path, "--remove", &pin.to_string()]));
    assert!(
        removed.starts_with(&format!("unpinned pin {pin} at seq ")),
        "{removed}"
    );
    assert_eq!(
        times_in_context(path, NEVER),
        0,
        "an unpinned text is not sent"
    );
    let listed = stdout(&cli().ok(&["pin", path]));
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(!listed.contains("Never push"), "{listed}");
    let stats = stdout(&cli().ok(&["stats", path]));
    assert!(stats.contains("pins (1)"), "{stats}");
    let html = dir.path().join("report.html");
    cli().ok(&["report", path, "-o", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<h2>Pins (1)</h2>"),
        "the report lists live pins"
    );
    assert!(!page.contains(NEVER));
    cli().ok(&["check", path]);

    let before = std::fs::read(&session).unwrap();
    let again = cli().run(&["pin", path, "--remove", &pin.to_string()]);
    assert!(!again.status.success());
    assert!(
        stderr(&again).contains(&format!(
            "unpin refused: names pin {pin}, which is already unpinned"
        )),
        "{}",
        stderr(&again)
    );
    assert_eq!(std::fs::read(&session).unwrap(), before, "nothing written");

    // An unpin line naming a message, not a pin, written by another tool.
    let text = String::from_utf8(before).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let at = last["seq"].as_u64().unwrap();
    let mut bad = last;
    bad["seq"] = (at + 1).into();
    bad["parent"] = at.into();
    bad["data"] = serde_json::json!({ "pin": seq });
    std::fs::write(&session, format!("{text}{bad}\n")).unwrap();
    let refused = cli().run(&["check", path]);
    assert!(!refused.status.success());
    let out = format!("{}{}", stdout(&refused), stderr(&refused));
    assert!(
        out.contains(&format!(
            "seq {}: unpin names seq {seq}, which is not a pin on the active path",
            at + 1
        )),
        "{out}"
    );
}
