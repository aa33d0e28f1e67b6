//! Helpers shared by the suite.

use std::path::Path;
use std::path::PathBuf;

use abridge_session::Event;
use abridge_session::FsyncPolicy;
use abridge_session::Header;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::Session;
use abridge_session::SessionStore;
use sha2::Digest;

/// A fixed creation time, so files are reproducible.
pub(crate) const TIME: &str = "2026-11-30T00:00:00.000Z";

/// A header with a fixed time.
pub(crate) fn header(id: &str) -> Header {
    let mut header = Header::new(id);
    header.created = TIME.into();
    header
}

/// A writable JSONL store with the given fsync policy.
pub(crate) fn jsonl(path: &Path, fsync: FsyncPolicy) -> Box<dyn SessionStore> {
    let options = JsonlOptions {
        fsync,
        ..JsonlOptions::default()
    };
    Box::new(JsonlStore::open(path, options).unwrap())
}

/// A new session file at `path`.
pub(crate) fn create(path: &Path) -> Session {
    Session::create(jsonl(path, FsyncPolicy::Never), header("test")).unwrap()
}

/// Opens the session file at `path` for writing.
pub(crate) fn open(path: &Path) -> Session {
    Session::open(jsonl(path, FsyncPolicy::Never)).unwrap().0
}

/// SHA-256 of a file, streamed.
pub(crate) fn file_hash(path: &Path) -> [u8; 32] {
    let mut file = std::fs::File::open(path).unwrap();
    let mut hasher = sha2::Sha256::new();
    std::io::copy(&mut file, &mut hasher).unwrap();
    hasher.finalize().into()
}

/// A temp directory and a session path inside it.
pub(crate) fn temp_session() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    (dir, path)
}

#[allow(unused_imports)] // the crash suite shares this file and builds no calls
pub(crate) use abridge_test_support::messages::parallel_calls;

/// Every event as the line it is written as, so events read back (which
/// keep their raw line) compare with live ones (which do not).
pub(crate) fn lines(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .map(|e| abridge_session::encode_event(e).unwrap())
        .collect()
}
