//! Helpers shared by the importer test binaries: where the samples and
//! fixtures are, and the checks every imported log must pass.

// Each test binary uses only some of these.
#![allow(dead_code, unused_imports, unreachable_pub, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;
use std::path::PathBuf;

use abridge_import as import;
use abridge_import::ImportReport;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_llm::SharedMessage;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::Session;
use abridge_session::SurfaceOp;
use abridge_session::dangling_tool_calls;
use pretty_assertions::assert_eq;
use serde_json::Value;

pub use abridge_test_support::samples::CLAUDE;
pub use abridge_test_support::samples::CODEX;
pub use abridge_test_support::samples::PI;
pub use abridge_test_support::samples::SWE;
pub use abridge_test_support::samples::sample;

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

pub fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// What the imported log holds, counted from its events.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub by_role: BTreeMap<&'static str, usize>,
    pub tool_calls: usize,
    pub replaces: usize,
}

pub fn counts(session: &Session) -> Counts {
    let mut counts = Counts::default();
    for event in session.events() {
        let Some(m) = event.message_event() else {
            continue;
        };
        *counts.by_role.entry(m.message.role.as_str()).or_default() += 1;
        counts.tool_calls += m.message.tool_calls().count();
        if matches!(m.op, SurfaceOp::Replace { .. }) {
            counts.replaces += 1;
        }
    }
    counts
}

pub fn roles(pairs: &[(&'static str, usize)]) -> BTreeMap<&'static str, usize> {
    pairs.iter().filter(|(_, n)| *n > 0).copied().collect()
}

/// Imports `path` into a JSONL session in a temp dir, reopens it, and
/// checks the reopened session shows the same surface and messages, the
/// full fold equals the incremental one, and tool calls on the surface are
/// answered right after their turn (except calls dangling at the end).
pub fn import_and_reopen(path: &Path) -> (Session, ImportReport) {
    let imported = import::read(path, None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("imported.jsonl");
    let store = JsonlStore::open(&out, JsonlOptions::default()).unwrap();
    let (session, report) = imported.into_session(Box::new(store)).unwrap();
    let reader = JsonlStore::open(
        &out,
        JsonlOptions {
            read_only: true,
            ..JsonlOptions::default()
        },
    )
    .unwrap();
    let (reopened, load) = Session::open(Box::new(reader)).unwrap();
    assert_eq!(load.skipped, Vec::new());
    assert_eq!(reopened.surface().seqs(), session.surface().seqs());
    assert_eq!(
        reopened.surface().generation(),
        session.surface().generation()
    );
    assert_eq!(reopened.surface_messages(), session.surface_messages());
    assert_eq!(reopened.len(), session.len());
    for (a, b) in reopened.events().iter().zip(session.events()) {
        assert_eq!(
            (a.seq, a.parent, &a.time, a.body.kind()),
            (b.seq, b.parent, &b.time, b.body.kind())
        );
        assert_eq!(a.message_event(), b.message_event(), "seq {}", a.seq);
        assert_eq!(
            a.log().map(|l| &l.data),
            b.log().map(|l| &l.data),
            "seq {}",
            a.seq
        );
    }
    assert_eq!(reopened.header(), session.header());
    assert_eq!(&session.fold_full(), session.surface());
    check_pairing(&session.surface_messages(), &dangling_tool_calls(&session));
    (session, report)
}

/// Every result on the surface answers a call of the assistant turn just
/// before it; every call is answered before anything else speaks, except
/// the calls `dangling` at the very end.
pub fn check_pairing(messages: &[SharedMessage], dangling: &[(String, String)]) {
    let mut open: Vec<String> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        match m.role {
            Role::Tool => {
                let (id, _, _) = m.tool_result_block().unwrap();
                let at = open.iter().position(|c| c == id);
                assert!(
                    at.is_some(),
                    "surface[{i}]: result {id} answers no open call"
                );
                open.retain(|c| c != id);
            }
            _ => {
                assert_eq!(
                    open,
                    Vec::<String>::new(),
                    "surface[{i}]: calls left unanswered"
                );
                open = m.tool_calls().map(|(id, _, _)| id.to_string()).collect();
            }
        }
    }
    let dangling: Vec<String> = dangling.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(open, dangling);
}

/// The `source` of every injected message in the log, in order.
pub fn injected_sources(session: &Session) -> Vec<String> {
    session
        .events()
        .iter()
        .filter_map(|e| e.message())
        .filter_map(|m| match &m.meta.origin {
            Some(Origin::Injected { source }) => Some(source.clone()),
            _ => None,
        })
        .collect()
}
