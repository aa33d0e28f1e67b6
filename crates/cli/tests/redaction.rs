//! What `abridge report` and `abridge render` write holds no secret, and
//! is private (issue 11, point 1): the shared redaction session written
//! to a file with the user pattern in `abridge.toml` beside it, run through
//! the binary as a user runs it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::path::PathBuf;

use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::Session;
use abridge_snapcompact::FrameSpec;
use abridge_snapcompact::SerializeConfig;
use abridge_test_support::cli::Cli;
use abridge_test_support::secrets;

fn cli() -> Cli {
    Cli::new(env!("CARGO_BIN_EXE_abridge"))
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// A file of `text` at `path`, readable by everyone, as a user might
/// have left it.
fn loose_file(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(mode(path), 0o644);
}

/// The fixture as a session file in `dir`.
fn session_file(dir: &Path) -> PathBuf {
    let path = dir.join("secrets.abridge.jsonl");
    secrets::write_session(&path, 0, 12);
    path
}

#[test]
fn report_holds_placeholders_not_secrets_and_is_private() {
    let dir = tempfile::tempdir().unwrap();
    let session = session_file(dir.path());
    let html = dir.path().join("report.html");
    loose_file(&html, "an older report");
    cli().ok(&[
        "report",
        session.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    let page = std::fs::read_to_string(&html).unwrap();
    secrets::assert_no_secret("the report", &page);
    secrets::assert_placeholders("the report", &page, &secrets::all_kinds());
    assert_eq!(mode(&html), 0o600, "the report replaced a 0644 file");
    secrets::assert_originals("the log", &std::fs::read_to_string(&session).unwrap());

    // `--no-redact` is the user's explicit choice, and still private.
    let open = dir.path().join("open.html");
    cli().ok(&[
        "report",
        session.to_str().unwrap(),
        "-o",
        open.to_str().unwrap(),
        "--no-redact",
    ]);
    secrets::assert_originals(
        "the --no-redact report",
        &std::fs::read_to_string(&open).unwrap(),
    );
    assert_eq!(mode(&open), 0o600);
}

/// The PNG bytes of every frame in `dir`, in order.
fn frames_in(dir: &Path) -> Vec<Vec<u8>> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "png"))
        .collect();
    paths.sort();
    paths.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

/// What the frames of the session's surface look like drawn from `text`
/// of each message: the library's own renderer on the same spec.
fn drawn(session: &Path, redact: bool) -> Vec<Vec<u8>> {
    let store = JsonlStore::open(session, JsonlOptions::default()).unwrap();
    let (session, _) = Session::open(Box::new(store)).unwrap();
    let mut messages = session.surface_messages();
    if redact {
        let redactor =
            abridge_compact::host::Redactor::new(&[secrets::USER_PATTERN.to_string()]).unwrap();
        messages = redactor.redact_messages(&messages);
    }
    let spec = FrameSpec::for_model("claude-sonnet-4-5");
    abridge_snapcompact::render_messages(&messages, &spec, &SerializeConfig::default())
        .unwrap()
        .into_iter()
        .map(|f| f.png)
        .collect()
}

#[test]
fn render_draws_the_redacted_text_into_private_frames() {
    let dir = tempfile::tempdir().unwrap();
    let session = session_file(dir.path());
    let out = dir.path().join("frames");
    std::fs::create_dir(&out).unwrap();
    let first = out.join("frame-000.png");
    loose_file(&first, "an older frame");
    cli().ok(&[
        "render",
        session.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--model",
        "claude-sonnet-4-5",
        "--json",
    ]);
    let frames = frames_in(&out);
    // Exactly the redacted history drawn, and not the logged one: the
    // secrets are not in the pixels.
    assert_eq!(frames, drawn(&session, true));
    assert_ne!(frames, drawn(&session, false));
    for entry in std::fs::read_dir(&out).unwrap() {
        let path = entry.unwrap().path();
        assert_eq!(mode(&path), 0o600, "{} is not private", path.display());
    }
}

#[test]
fn render_of_text_redacts_it_too() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, secrets::tool_output()).unwrap();
    let out = dir.path().join("frames");
    cli().ok(&[
        "render",
        "--text",
        text.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--json",
    ]);
    let redactor = abridge_compact::host::Redactor::builtin().unwrap();
    let redacted = redactor.redact(&secrets::tool_output()).into_owned();
    let spec = FrameSpec::for_model("claude-sonnet-4-5");
    let expected: Vec<Vec<u8>> = abridge_snapcompact::render_text(&redacted, &spec)
        .unwrap()
        .into_iter()
        .map(|f| f.png)
        .collect();
    assert_eq!(frames_in(&out), expected);
}

/// The `.counts` file beside a session (token counts keyed by message
/// hashes) is private like the session, also when it replaces a looser
/// file a user left there.
#[test]
fn the_counts_file_is_private_even_over_a_looser_one() {
    let dir = tempfile::tempdir().unwrap();
    let session = session_file(dir.path());
    let counts = PathBuf::from(format!("{}.counts", session.display()));
    // Only a command that writes keeps counts (`stats` reads them); its
    // exit status is the pass's, whatever it found to do.
    let compact = ["compact", session.to_str().unwrap(), "--model", "gpt-4o"];
    cli().run(&compact);
    assert_eq!(mode(&counts), 0o600);
    // A malformed file is rebuilt and written again.
    loose_file(&counts, "not counts");
    cli().run(&compact);
    assert_eq!(mode(&counts), 0o600);
    assert_ne!(std::fs::read_to_string(&counts).unwrap(), "not counts");
}
