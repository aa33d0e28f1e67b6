//! A torn tail never costs a session (issue 27): a real imported session,
//! with a compaction and single appends after it, cut at seeded random
//! offsets and at chosen ones (inside the import's big batch, at its line
//! boundaries, inside the compaction's batch), then every library entry
//! point that reads or writes a JSONL log run on the cut file:
//!
//! - readers open it, read the complete part and report the torn tail;
//! - writers refuse it with `StoreError::Torn` and leave every byte;
//! - only `set_aside_torn` makes the log shorter, and the log plus its
//!   sidecar is the cut file, byte for byte;
//! - `keep_torn_events` then gives back the torn batch's complete events,
//!   and the log passes the invariant check (after the stale starts are
//!   closed, as `abridge repair` does).
//!
//! And an import writes in bounded batches: at any cut, the torn tail
//! holds at most one batch's events.
//!
//! The seed is printed; `ABRIDGE_TORN_SEED=N` replays one.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::path::Path;
use std::sync::Arc;

use abridge_compact::Policy;
use abridge_compact::Trigger;
use abridge_compact::host::MeterCounter;
use abridge_import as import;
use abridge_llm::Catalog;
use abridge_llm::Message;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::LogWriter;
use abridge_session::Session;
use abridge_session::SessionError;
use abridge_session::SessionStore;
use abridge_session::StoreError;
use abridge_session::TornTail;
use abridge_test_support::samples::PI;
use abridge_test_support::samples::SWE;
use abridge_test_support::samples::sample;

/// Random cuts per log, beside the chosen ones.
const RANDOM_CUTS: usize = 16;

/// The most events a bulk write puts in one batch, as docs/event-log.md
/// promises ("Writing a log without holding it").
const DOCUMENTED_BATCH_EVENTS: usize = 256;

struct Rng(u64);

impl Rng {
    fn seeded() -> Self {
        let seed = std::env::var("ABRIDGE_TORN_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            })
            | 1;
        eprintln!("torn-tail seed: {seed} (replay with ABRIDGE_TORN_SEED={seed})");
        Rng(seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

fn reader(path: &Path) -> JsonlStore {
    let options = JsonlOptions {
        read_only: true,
        ..JsonlOptions::default()
    };
    JsonlStore::open(path, options).unwrap()
}

fn writer(path: &Path) -> JsonlStore {
    JsonlStore::open(path, JsonlOptions::default()).unwrap()
}

/// The pi sample written as `main` wrote every import (all 933 events in
/// one batch), then a digest compaction (a start, then a batch of
/// summary, checkpoint and end) and two single appends. Returns the bytes
/// and the byte range of the import's batch.
fn big_batch_log(dir: &Path) -> (Vec<u8>, std::ops::Range<usize>) {
    let path = dir.join("big.jsonl");
    let imported = import::read(&sample(PI), None).unwrap();
    let mut session = Session::create(Box::new(writer(&path)), imported.header.clone()).unwrap();
    imported.append_to(&mut session).unwrap();
    let header_len = std::fs::read(&path)
        .unwrap()
        .iter()
        .position(|b| *b == b'\n')
        .unwrap()
        + 1;
    let import_end = std::fs::metadata(&path).unwrap().len() as usize;
    let entry = Catalog::builtin().lookup("claude-sonnet-4-5").entry;
    let policy =
        Policy::new(Arc::new(MeterCounter::for_model(&entry))).with_keep_recent_tokens(4_000);
    futures::executor::block_on(abridge_compact::compact_session(
        &mut session,
        &abridge_compact_basic::DigestMethod,
        &policy,
        Trigger::Manual,
    ))
    .unwrap();
    session.append_message(Message::user("one more")).unwrap();
    session
        .append_message(Message::assistant("and an answer"))
        .unwrap();
    session.sync().unwrap();
    drop(session);
    (std::fs::read(&path).unwrap(), header_len..import_end)
}

/// Offsets where each line of `bytes[range]` ends.
fn line_ends(bytes: &[u8], range: std::ops::Range<usize>) -> Vec<usize> {
    range
        .filter(|&i| bytes[i] == b'\n')
        .map(|i| i + 1)
        .collect()
}

/// Every entry point on `bytes[..cut]`, in a fresh directory. Returns the
/// torn tail, if the cut left one.
fn run_cut(original: &[u8], cut: usize) -> Option<TornTail> {
    let context = format!("cut at byte {cut} of {}", original.len());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("session.jsonl");
    let bytes = &original[..cut];
    std::fs::write(&path, bytes).unwrap();
    let unchanged = |step: &str| {
        let now = std::fs::read(&path).unwrap();
        assert!(
            now.len() >= bytes.len() && now.starts_with(bytes),
            "{context}: {step} changed or shortened the log ({} -> {} bytes)",
            bytes.len(),
            now.len()
        );
    };

    // Readers: the complete part, and what is torn.
    let (read, report) = Session::open(Box::new(reader(&path)))
        .unwrap_or_else(|e| panic!("{context}: a reader cannot open it: {e}"));
    unchanged("a reader");
    let torn: Option<TornTail> = report.torn_tail;
    let mut loaded = reader(&path);
    let events = loaded.load().unwrap().unwrap().events.len();
    assert_eq!(events, read.len(), "{context}");
    assert_eq!(loaded.load_from(0).unwrap().len(), read.len(), "{context}");
    unchanged("a reader's load");
    if let Some(torn) = &torn {
        assert_eq!(
            torn.line,
            read.len() as u64 + 2,
            "{context}: the torn tail follows the complete part"
        );
    }

    // Writers: refuse a torn log, change nothing.
    let refused = |error: SessionError| {
        assert!(
            error.to_string().contains("abridge repair"),
            "{context}: {error}"
        );
        match error {
            SessionError::Store(StoreError::Torn { torn: seen, .. }) => {
                assert_eq!(Some(&seen), torn.as_ref(), "{context}");
            }
            other => panic!("{context}: a writer failed otherwise: {other}"),
        }
    };
    match Session::open(Box::new(writer(&path))) {
        Ok((mut session, _)) => {
            unchanged("Session::open to write");
            assert!(torn.is_none(), "{context}: a writer opened a torn log");
            // A log that is whole takes appends as ever.
            session.append_message(Message::user("after")).unwrap();
            return None;
        }
        Err(error) => refused(error),
    }
    unchanged("Session::open to write");
    let mut store = writer(&path);
    match store.load() {
        Err(StoreError::Torn { .. }) => {}
        other => panic!("{context}: a writer's load gave {:?}", other.map(|_| ())),
    }
    drop(store);
    unchanged("a writer's load");
    let header = read.header().clone();
    assert!(matches!(
        Session::create(Box::new(writer(&path)), header.clone()),
        Err(SessionError::Store(StoreError::AlreadyExists { .. }))
    ));
    assert!(LogWriter::create(Box::new(writer(&path)), &header).is_err());
    unchanged("creating over it");
    let torn = torn.expect("a writer refused it, so it is torn");

    // Set aside: the only step that shortens the log, keeping every byte.
    let keep_dir = tempfile::tempdir().unwrap();
    let keep_path = keep_dir.path().join("session.jsonl");
    std::fs::write(&keep_path, bytes).unwrap();
    let mut store = writer(&path);
    let aside = store.set_aside_torn().unwrap().expect("a torn tail");
    assert_eq!(aside.torn, torn, "{context}");
    let mut joined = std::fs::read(&path).unwrap();
    joined.extend(std::fs::read(&aside.sidecar).unwrap());
    assert!(
        joined == bytes,
        "{context}: the log and its sidecar lost bytes"
    );
    let (mut session, report) = Session::open(Box::new(store)).unwrap();
    assert_eq!(report.torn_tail, None, "{context}");
    assert_eq!(session.len(), read.len(), "{context}");
    abridge_compact::host::close_stale(&mut session).unwrap();
    let check = abridge_compact::check::check_invariants(&session);
    assert!(check.is_ok(), "{context}: {:?}", check.violations);

    // Keep the complete events: they are back, and the log checks.
    let mut store = writer(&keep_path);
    let aside = store.set_aside_torn().unwrap().expect("a torn tail");
    let (mut kept, _) = Session::open(Box::new(store)).unwrap();
    let seqs = abridge_session::keep_torn_events(&mut kept, &aside)
        .unwrap_or_else(|e| panic!("{context}: the complete events were refused: {e}"));
    assert_eq!(seqs.len(), torn.events, "{context}");
    abridge_compact::host::close_stale(&mut kept).unwrap();
    drop(kept);
    let (kept, report) = Session::open(Box::new(writer(&keep_path))).unwrap();
    assert_eq!(report.torn_tail, None, "{context}");
    assert!(kept.len() >= read.len() + torn.events, "{context}");
    let check = abridge_compact::check::check_invariants(&kept);
    assert!(
        check.is_ok() && check.stale_starts.is_empty(),
        "{context}: {:?}",
        check.violations
    );
    Some(torn)
}

#[test]
fn no_entry_point_but_set_aside_shortens_a_torn_log_and_set_aside_keeps_every_byte() {
    let dir = tempfile::tempdir().unwrap();
    let (log, import) = big_batch_log(dir.path());
    let mut rng = Rng::seeded();
    let ends = line_ends(&log, import.clone());
    let tail_ends = line_ends(&log, import.end..log.len());
    let mut cuts = vec![
        // Inside the import's one big batch, and at its line boundaries.
        import.start + 1 + rng.below((import.len() - 1) as u64) as usize,
        import.start + import.len() / 2,
        ends[rng.below(ends.len() as u64 - 1) as usize],
        ends[0],
        // The end of the import (whole), its last newline (a whole line
        // that lost only its newline), and one byte more.
        import.end,
        import.end - 1,
        import.end - 2,
        // Inside the compaction's batch (the line after its start).
        tail_ends[0] + (tail_ends[1] - tail_ends[0]) / 2,
        tail_ends[1] + 1,
        // Inside the last line of the file.
        log.len() - 2,
    ];
    for _ in 0..RANDOM_CUTS {
        cuts.push(import.start + rng.below((log.len() - import.start) as u64) as usize);
    }
    let chosen = cuts.len() - RANDOM_CUTS;
    let mut torn = Vec::new();
    for (index, cut) in cuts.into_iter().enumerate() {
        let found = run_cut(&log, cut);
        if index < chosen {
            // Every chosen cut tears something but the two at the end of
            // the import, where every line is whole.
            let whole = cut == import.end || cut == import.end - 1;
            assert_eq!(found.is_none(), whole, "cut at {cut}: {found:?}");
        }
        torn.extend(found);
    }
    eprintln!(
        "torn tails: {}, {} of them in a batch with complete events",
        torn.len(),
        torn.iter().filter(|t| t.events > 0).count()
    );
    assert!(
        torn.iter().any(|t| t.events > 500),
        "no cut inside the big batch"
    );
}

/// An import's batches are bounded: cut anywhere, the torn tail holds at
/// most one batch of events, so `repair` sets aside at most that much.
/// Regression test for "import writes a session as one batch" (issue 27:
/// 933 pi events torn by one cut byte).
#[test]
fn an_import_cut_anywhere_tears_at_most_one_bounded_batch() {
    let mut rng = Rng::seeded();
    for name in [PI, SWE] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("imported.jsonl");
        import::read(&sample(name), None)
            .unwrap()
            .into_session(Box::new(writer(&path)))
            .unwrap();
        let log = std::fs::read(&path).unwrap();
        let header_len = log.iter().position(|b| *b == b'\n').unwrap() + 1;
        for _ in 0..RANDOM_CUTS {
            let cut = header_len + 1 + rng.below((log.len() - header_len - 1) as u64) as usize;
            std::fs::write(&path, &log[..cut]).unwrap();
            let (_, report) = Session::open(Box::new(reader(&path))).unwrap();
            if let Some(torn) = report.torn_tail {
                assert!(
                    torn.events < DOCUMENTED_BATCH_EVENTS,
                    "{name}, cut at {cut}: {torn}"
                );
            }
        }
    }
}
