//! A Harness over a JSONL session keeps its message counts beside the log:
//! reopening counts nothing already counted, new messages are written back
//! when the harness is dropped, and a file that cannot be used is rebuilt.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use abridge::Harness;
use abridge::llm::Message;
use abridge::meter::KeptFile;
use abridge::session::Header;
use abridge::session::JsonlOptions;
use abridge::session::JsonlStore;
use abridge::session::Session;

fn create(path: &Path, turns: usize) {
    let store = JsonlStore::open(path, JsonlOptions::default()).unwrap();
    let mut session = Session::create(Box::new(store), Header::new("kept")).unwrap();
    for i in 0..turns {
        session
            .append_message(Message::user(format!("question {i}: {}", "why ".repeat(i))))
            .unwrap();
        session
            .append_message(Message::assistant(format!("answer {i}")))
            .unwrap();
    }
}

fn harness(path: &Path, kept: bool) -> Harness {
    let store = JsonlStore::open(path, JsonlOptions::default()).unwrap();
    let (session, _) = Session::open(Box::new(store)).unwrap();
    let mut builder = Harness::builder(session, "gpt-4o");
    if kept {
        builder = builder.kept_counts(KeptFile::beside(path));
    }
    builder.build().unwrap()
}

#[test]
fn a_reopened_harness_reads_the_counts_and_writes_only_new_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    create(&path, 12);
    let file = KeptFile::beside(&path);

    let first = harness(&path, true);
    let tokens = first.tokens();
    assert!(!file.path().exists(), "nothing is written per measure");
    drop(first);
    let written = std::fs::read_to_string(file.path()).expect("written on drop");
    assert_eq!(
        written.lines().count(),
        1 + 24,
        "a header and one line per message"
    );

    // Reopened: every count comes from the file, so nothing new to write.
    let second = harness(&path, true);
    assert_eq!(second.tokens(), tokens);
    assert!(!second.save_counts().unwrap());
    // A new message is counted once and written on request.
    second.append(Message::user("one more")).unwrap();
    let more = second.tokens();
    assert!(more > tokens);
    assert!(second.save_counts().unwrap());
    assert!(!second.save_counts().unwrap());
    drop(second);

    // The same figure as a harness that keeps nothing and counts it all.
    let plain = harness(&path, false);
    assert_eq!(plain.tokens(), more);
    assert!(!plain.save_counts().unwrap());
}

#[test]
fn an_unusable_counts_file_is_rebuilt_with_exact_counts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    create(&path, 5);
    let file = KeptFile::beside(&path);
    let exact = harness(&path, false).tokens();

    std::fs::write(file.path(), "not a counts file\n").unwrap();
    let reopened = harness(&path, true);
    assert_eq!(reopened.tokens(), exact);
    assert!(
        reopened.save_counts().unwrap(),
        "the broken file is replaced"
    );
    drop(reopened);
    assert_eq!(harness(&path, true).tokens(), exact);
}
