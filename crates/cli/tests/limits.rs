//! Caps (issue 11, point 7): a report or a render larger than its cap is
//! a typed error naming the size and the limit, and nothing is left on
//! disk; an imported image past the pixel cap stops the import, naming
//! the line and the flag that raises the cap.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use abridge_test_support::cli::Cli;
use abridge_test_support::cli::stderr;
use abridge_test_support::secrets;
use abridge_test_support::sessions;

fn cli() -> Cli {
    Cli::new(env!("CARGO_BIN_EXE_abridge"))
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_report_over_max_bytes_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("s.abridge.jsonl");
    secrets::write_session(&session, 0, 12);
    let before = files_in(dir.path());
    let html = dir.path().join("report.html");
    let output = cli().run(&[
        "report",
        session.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
        "--max-bytes",
        "1000",
    ]);
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(error.contains("over the limit of 1000 bytes"), "{error}");
    assert!(error.contains("--max-bytes"), "{error}");
    assert_eq!(files_in(dir.path()), before, "something was left on disk");

    // The same page under a cap it fits is written.
    cli().ok(&[
        "report",
        session.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
        "--max-bytes",
        "100000000",
    ]);
    assert!(html.is_file());
}

#[test]
fn a_render_over_max_frames_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("long.txt");
    std::fs::write(&text, "word ".repeat(60_000)).unwrap();
    let out = dir.path().join("frames");
    let output = cli().run(&[
        "render",
        "--text",
        text.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--max-frames",
        "2",
    ]);
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(error.contains("frames, over the limit of 2"), "{error}");
    assert!(!out.exists(), "the frame directory was created");

    cli().ok(&[
        "render",
        "--text",
        text.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(files_in(&out).len() > 2);
}

#[test]
fn an_image_past_the_pixel_cap_stops_an_import_until_the_cap_is_raised() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big-image.jsonl");
    // One user message holding a PNG that claims 8000x8000 pixels: 64
    // megapixels, past the default cap of 50.
    std::fs::write(&file, sessions::pi_session_with_image(8000, 8000)).unwrap();
    let out = dir.path().join("s.abridge.jsonl");
    let import = |extra: &[&str]| {
        let mut args = vec![
            "import",
            file.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        cli().run(&args)
    };
    let refused = import(&[]);
    assert!(!refused.status.success());
    let error = stderr(&refused);
    assert!(
        error.contains(":2: field `message.content[0]`")
            && error.contains("over the limit of 50000000 pixels")
            && error.contains("--max-image-pixels"),
        "{error}"
    );
    assert!(!out.exists(), "a refused import wrote a log");

    let raised = import(&["--max-image-pixels", "100000000"]);
    assert!(raised.status.success(), "{}", stderr(&raised));
    assert!(out.is_file());
}
