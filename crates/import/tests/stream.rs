//! Reading a file streams it (one record, or one history entry, at a time)
//! where reading bytes in memory does not: both must give the same events,
//! report and errors, for every format and every sample.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::path::PathBuf;

use abridge_import as import;
use abridge_import::ImportError;
use abridge_import::ReadOptions;
use abridge_session::Session;
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

/// A file grown past the importer's window (4096 events), so that drafts
/// leave it and are passed on while the file is still being read.
/// Only the lines before `stop` (when given) are used: the first chat of
/// an aider file, so its requests repeat inside one chat.
fn grown(
    dir: &tempfile::TempDir,
    name: &str,
    header_lines: usize,
    rounds: usize,
    stop: Option<&str>,
) -> PathBuf {
    let text = std::fs::read_to_string(fixture(name)).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    if let Some(stop) = stop
        && let Some(end) = lines.iter().skip(1).position(|l| l.starts_with(stop))
    {
        lines.truncate(end + 1);
    }
    let (head, body) = lines.split_at(header_lines);
    let mut out: Vec<&str> = head.to_vec();
    for _ in 0..rounds {
        out.extend_from_slice(body);
    }
    write(
        dir,
        &format!("grown-{name}"),
        (out.join("\n") + "\n").as_bytes(),
    )
}

fn jsonl(path: &Path) -> Box<dyn abridge_session::SessionStore> {
    Box::new(
        abridge_session::JsonlStore::open(path, abridge_session::JsonlOptions::default()).unwrap(),
    )
}

/// `write_with` reads the file twice and writes as it goes; the log it
/// writes is the one `read_with` and `into_session` write, event for
/// event, and its watcher sees every event once.
#[test]
fn writing_while_reading_gives_the_log_of_reading_then_writing() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = every_sample();
    // Past the window: aider's chat repeated inside its last chat (the
    // one imported), Codex's legacy items repeated (their call ids reused,
    // so renamed).
    paths.push(grown(
        &dir,
        "aider-three-chats.md",
        1,
        1000,
        Some("# aider chat started at"),
    ));
    paths.push(grown(&dir, "codex-legacy-rollout.jsonl", 1, 800, None));
    let started = abridge_session::time::now_rfc3339();
    for path in paths {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let kept_log = dir.path().join(format!("{name}.kept.jsonl"));
        let (kept, kept_report) = import::read_with(&path, &ReadOptions::default())
            .unwrap()
            .into_session(jsonl(&kept_log))
            .unwrap();
        // Both read back from their files, as a user would.
        drop(kept);
        let (kept, _) = Session::open(jsonl(&kept_log)).unwrap();
        let streamed_log = dir.path().join(format!("{name}.streamed.jsonl"));
        let seen = std::rc::Rc::new(std::cell::Cell::new(0usize));
        let counter = std::rc::Rc::clone(&seen);
        let checked = import::check_with(&path, &ReadOptions::default()).unwrap();
        let last_model = kept
            .events()
            .iter()
            .rev()
            .find_map(|e| match &e.message()?.meta.origin {
                Some(abridge_llm::Origin::Model { model, .. }) if !model.is_empty() => {
                    Some(model.clone())
                }
                _ => None,
            });
        assert_eq!(checked.last_model, last_model, "{name}");
        let written = checked
            .write(jsonl(&streamed_log), move |seq, _| {
                assert_eq!(seq as usize, counter.get(), "seqs in order from 0");
                counter.set(counter.get() + 1);
            })
            .unwrap();
        drop(written.store);
        let (streamed, _) = Session::open(jsonl(&streamed_log)).unwrap();
        assert_eq!(written.report, kept_report, "{name}");
        assert_eq!(written.events, kept.len(), "{name}");
        assert_eq!(seen.get(), kept.len(), "{name}");
        assert_eq!(written.surface_messages, kept.surface().len(), "{name}");
        assert_eq!(
            streamed.header().session_id,
            kept.header().session_id,
            "{name}"
        );
        assert_eq!(streamed.len(), kept.len(), "{name}");
        for (a, b) in streamed.events().iter().zip(kept.events()) {
            // An event the source gave no time is stamped when written.
            let stamped = a.time >= started && b.time >= started;
            let untimed = |e: &abridge_session::Event| abridge_session::Event {
                time: String::new(),
                ..e.clone()
            };
            assert!(
                untimed(a) == untimed(b) && (a.time == b.time || stamped),
                "{name}: the events differ:\n{a:?}\n{b:?}"
            );
        }
        if name.starts_with("grown-") {
            assert!(kept.len() > 4096, "{name}: {} events", kept.len());
        }
    }
}

/// A store that starts failing after `ok` appends.
#[derive(Debug)]
struct FailingAfter {
    inner: Box<dyn abridge_session::SessionStore>,
    ok: usize,
}

impl abridge_session::SessionStore for FailingAfter {
    fn location(&self) -> String {
        self.inner.location()
    }
    fn load(&mut self) -> Result<Option<abridge_session::LoadedLog>, abridge_session::StoreError> {
        self.inner.load()
    }
    fn create(
        &mut self,
        header: &abridge_session::Header,
    ) -> Result<(), abridge_session::StoreError> {
        self.inner.create(header)
    }
    fn append(
        &mut self,
        events: &[abridge_session::Event],
    ) -> Result<(), abridge_session::StoreError> {
        if self.ok == 0 {
            return Err(abridge_session::StoreError::Io {
                path: self.location().into(),
                op: "append",
                source: std::io::Error::other("disk full"),
            });
        }
        self.ok -= 1;
        self.inner.append(events)
    }
    fn sync(&mut self) -> Result<(), abridge_session::StoreError> {
        self.inner.sync()
    }
}

/// A store that fails part way keeps the batches written before it, a
/// readable session that ends early, and the import says where.
#[test]
fn a_store_failing_mid_import_keeps_the_batches_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = grown(&dir, "codex-legacy-rollout.jsonl", 1, 800, None);
    let log = dir.path().join("partial.jsonl");
    let store = Box::new(FailingAfter {
        inner: jsonl(&log),
        ok: 2,
    });
    let error = import::write_with(&path, &ReadOptions::default(), store).unwrap_err();
    assert!(
        matches!(&error, ImportError::Session { file, .. } if file.contains("partial.jsonl")),
        "{error}"
    );
    assert!(error.to_string().contains("disk full"), "{error}");
    let (partial, report) = Session::open(jsonl(&log)).unwrap();
    assert_eq!(report, abridge_session::LoadReport::default());
    assert_eq!(
        partial.len(),
        2 * abridge_session::WRITE_BATCH_EVENTS,
        "two whole batches"
    );
}

/// A broken file fails the streamed import as it fails `read_with`,
/// naming the cut line, before anything reaches the store.
#[test]
fn a_broken_file_fails_the_streamed_import_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let pi = std::fs::read(sample(PI)).unwrap();
    let path = write(&dir, "cut.jsonl", &pi[..pi.len() / 2]);
    let read = import::read_with(&path, &ReadOptions::default()).unwrap_err();
    let checked = import::check_with(&path, &ReadOptions::default()).unwrap_err();
    assert!(
        matches!(checked, ImportError::Truncated { .. }),
        "{checked}"
    );
    assert_eq!(checked.to_string(), read.to_string());
    let log = dir.path().join("out.jsonl");
    let written = import::write_with(&path, &ReadOptions::default(), jsonl(&log)).unwrap_err();
    assert_eq!(written.to_string(), read.to_string());
    assert!(
        Session::open(jsonl(&log)).is_err(),
        "no session was created in the store"
    );
}
