//! Reading a file streams it (one record, or one history entry, at a time)
//! where reading bytes in memory does not: both must give the same events,
//! report and errors, for every format and every sample.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::path::PathBuf;

use abridge_import as import;
use abridge_import::ImportError;
use abridge_import::ReadOptions;
use pretty_assertions::assert_eq;

mod support;

use support::*;

/// Every bundled sample and import-test sample.
fn every_sample() -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = [PI, CLAUDE, CODEX, SWE].iter().map(|n| sample(n)).collect();
    for name in [
        "aider-three-chats.md",
        "claude-subagent.jsonl",
        "codex-legacy-rollout.jsonl",
        "openhands-output.jsonl",
        "openhands-trajectory.json",
        "pi-v3-tree.jsonl",
    ] {
        paths.push(fixture(name));
    }
    paths
}

fn from_bytes(path: &Path) -> Result<import::Imported, ImportError> {
    let bytes = std::fs::read(path).unwrap();
    import::read_bytes(&path.display().to_string(), &bytes, None)
}

#[test]
fn a_file_read_in_pieces_imports_as_its_bytes_do() {
    for path in every_sample() {
        let mut streamed = import::read(&path, None).unwrap();
        let whole = from_bytes(&path).unwrap();
        // Sources that record no creation time are stamped when read.
        streamed.header.created.clone_from(&whole.header.created);
        assert!(!streamed.drafts.is_empty(), "{}", path.display());
        assert_eq!(streamed.header, whole.header, "{}", path.display());
        assert_eq!(streamed.report, whole.report, "{}", path.display());
        assert!(streamed.drafts == whole.drafts, "{}", path.display());
    }
}

/// Writes `bytes` to a file in a fresh directory and returns its path.
fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn a_streamed_file_fails_as_its_bytes_do() {
    let dir = tempfile::tempdir().unwrap();
    let pi = std::fs::read(sample(PI)).unwrap();
    let swe = std::fs::read(sample(SWE)).unwrap();
    let mut bad_utf8 = pi.clone();
    let second_line = bad_utf8.iter().position(|b| *b == b'\n').unwrap() + 1;
    bad_utf8[second_line + 3] = 0xff;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("cut.jsonl", pi[..pi.len() / 2].to_vec()),
        ("cut.traj", swe[..swe.len() / 2].to_vec()),
        ("utf8.jsonl", bad_utf8),
        (
            "field.traj",
            br#"{"trajectory":[1,2],"history":[{"role":"user","content":"x"},{"role":7}]}"#
                .to_vec(),
        ),
        ("root.traj", br#"[{"history":[]}]"#.to_vec()),
        ("nohistory.traj", br#"{"trajectory":[],"info":{}}"#.to_vec()),
    ];
    for (name, bytes) in cases {
        let path = write(&dir, name, &bytes);
        let options = ReadOptions {
            format: Some(if name.ends_with(".traj") {
                import::Format::SweAgent
            } else {
                import::Format::Pi
            }),
            ..ReadOptions::default()
        };
        let streamed = import::read_with(&path, &options).unwrap_err();
        let whole =
            import::read_bytes_with(&path.display().to_string(), &bytes, &options).unwrap_err();
        assert_eq!(streamed.to_string(), whole.to_string(), "{name}");
        let expected = match name {
            "cut.jsonl" | "cut.traj" => matches!(streamed, ImportError::Truncated { .. }),
            "utf8.jsonl" => matches!(
                streamed,
                ImportError::Utf8 {
                    line: 2,
                    column: 4,
                    ..
                }
            ),
            _ => matches!(streamed, ImportError::Field { .. }),
        };
        assert!(expected, "{name}: {streamed}");
    }
}

#[test]
fn a_trajectory_history_is_streamed_and_its_steps_counted() {
    let document = br#"{"trajectory":[{"a":1},{"a":2},{"a":3}],"history":[{"role":"system","content":"s"},{"role":"user","content":"u"}],"info":{"x":1},"environment":"e"}"#;
    let imported = import::read_bytes("t.traj", document, None).unwrap();
    assert_eq!(imported.drafts.len(), 2);
    let skipped: Vec<(&str, u64)> = imported
        .report
        .skipped
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(
        skipped,
        [("environment", 1), ("info", 1), ("trajectory step", 3)]
    );
}
