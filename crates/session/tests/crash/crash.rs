//! Crash recovery: a child process appends batches with fsync per batch
//! and prints each acknowledged batch's last seq; the parent SIGKILLs it
//! (`Child::kill` sends SIGKILL on Unix) and reopens the file.
//!
//! The child is this test binary run again with [`CHILD_ENV`] set and a
//! filter selecting [`crash_child`], which is ignored in normal runs.

use std::io::BufRead;
use std::path::Path;
use std::process::Command;
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;
use std::time::Instant;

use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_llm::Message;
use abridge_session::BLOB_THRESHOLD;
use abridge_session::Draft;
use abridge_session::FsyncPolicy;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::Seq;
use abridge_session::Session;

use crate::support;

const CHILD_ENV: &str = "ABRIDGE_CRASH_CHILD";
const BATCH_ENV: &str = "ABRIDGE_CRASH_BATCH";
const SIZE_ENV: &str = "ABRIDGE_CRASH_SIZE";
/// `never` runs the child without fsync (the strace test's negative
/// control); anything else, or unset, syncs every batch.
pub(crate) const FSYNC_ENV: &str = "ABRIDGE_CRASH_FSYNC";
/// Set: the child exits after this many batches instead of running until
/// killed.
pub(crate) const BATCHES_ENV: &str = "ABRIDGE_CRASH_BATCHES";
/// Set: the first message carries an image large enough to go to a blob
/// file, so a rename and the blob directory's creation happen too.
pub(crate) const IMAGE_ENV: &str = "ABRIDGE_CRASH_IMAGE";

/// How the parent runs [`crash_child`]: the environment it reads.
pub(crate) fn child_command(path: &Path, batch: u64, size: usize) -> Command {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", "crash::crash_child", "--ignored", "--nocapture"])
        .args(["--test-threads=1", "-q"])
        .env(CHILD_ENV, path)
        .env(BATCH_ENV, batch.to_string())
        .env(SIZE_ENV, size.to_string());
    command
}

/// The text of the message with this seq: a prefix naming it, then filler
/// derived from it, so the parent can check every byte that survived.
fn expected_text(seq: Seq, size: usize) -> String {
    let mut text = format!("event {seq}:");
    let mut state = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    while text.len() < size {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        text.push(char::from(b'a' + (state % 26) as u8));
    }
    text
}

/// A base64 image over the blob threshold.
fn large_image() -> Block {
    Block::Image {
        source: ImageSource::Base64 {
            media_type: "image/png".into(),
            data: "iVBORw0K".repeat(BLOB_THRESHOLD / 8 + 1),
        },
        width: Some(64),
        height: Some(64),
    }
}

/// The child: creates the session when it is missing, then appends
/// batches (forever, or [`BATCHES_ENV`] of them), acknowledging each on
/// stdout only after `append_batch` returned.
#[test]
#[ignore = "the crash tests run it as a child process"]
fn crash_child() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let path = Path::new(&path);
    let batch: u64 = std::env::var(BATCH_ENV).unwrap().parse().unwrap();
    let size: usize = std::env::var(SIZE_ENV).unwrap().parse().unwrap();
    let batches: Option<u64> = std::env::var(BATCHES_ENV).ok().map(|n| n.parse().unwrap());
    let mut image = std::env::var_os(IMAGE_ENV).map(|_| large_image());
    let fsync = match std::env::var(FSYNC_ENV).as_deref() {
        Ok("never") => FsyncPolicy::Never,
        _ => FsyncPolicy::EveryBatch,
    };
    let mut session = if path.exists() {
        Session::open(support::jsonl(path, fsync)).unwrap().0
    } else {
        Session::create(support::jsonl(path, fsync), support::header("crash")).unwrap()
    };
    println!("READY {}", session.len());
    for _ in 0..batches.unwrap_or(u64::MAX) {
        let start = session.len() as Seq;
        let drafts = (start..start + batch)
            .map(|seq| {
                let mut message = Message::user(expected_text(seq, size));
                message.content.extend(image.take());
                Draft::message(message)
            })
            .collect();
        let seqs = session.append_batch(drafts).unwrap();
        println!("ACK {}", seqs.last().unwrap());
        if session.len() > 200_000 {
            std::thread::sleep(Duration::from_secs(60));
        }
    }
}

/// A small deterministic generator; the seed is printed so a failing run
/// can be repeated.
struct Rng(u64);

impl Rng {
    fn from_time() -> Self {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
            | 1;
        eprintln!("crash test seed: {seed}");
        Rng(seed)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// When the parent kills the child.
#[derive(Debug, Clone, Copy)]
enum KillAt {
    /// After this many milliseconds.
    Delay(u64),
    /// As soon as the file is seen growing for the `n`th time: inside a
    /// large write, so lines really tear.
    Growth(u64),
}

#[derive(Debug, Default)]
struct Stats {
    runs: u64,
    acked: u64,
    torn: u64,
    partial_batches: u64,
}

/// One run: start the child, kill it, reopen and check.
fn run_once(path: &Path, batch: u64, size: usize, kill: KillAt, stats: &mut Stats) {
    let start_len = {
        let (session, _) = Session::open(support::jsonl(path, FsyncPolicy::Never)).unwrap();
        session.len() as u64
    };
    let mut child = child_command(path, batch, size)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let line = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .expect("the child never said READY");
        let ready = line.starts_with("READY ");
        lines.push(line);
        if ready {
            break;
        }
    }
    match kill {
        KillAt::Delay(ms) => std::thread::sleep(Duration::from_millis(ms)),
        KillAt::Growth(n) => {
            let mut seen = std::fs::metadata(path).unwrap().len();
            let mut growths = 0;
            let give_up = Instant::now() + Duration::from_secs(10);
            while growths <= n && Instant::now() < give_up {
                let len = std::fs::metadata(path).unwrap().len();
                if len != seen {
                    growths += 1;
                    seen = len;
                }
            }
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    reader.join().unwrap();
    lines.extend(rx.try_iter());
    let acks: Vec<Seq> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("ACK "))
        .map(|n| n.parse().unwrap())
        .collect();

    // The file always opens for reading; a torn tail is reported and the
    // complete part before it is read.
    let killed = std::fs::read(path).unwrap();
    let reader = JsonlOptions {
        read_only: true,
        ..JsonlOptions::default()
    };
    let (session, report) = Session::open(Box::new(JsonlStore::open(path, reader).unwrap()))
        .unwrap_or_else(|e| panic!("the file must open after a kill: {e}"));
    if let Some(torn) = &report.torn_tail {
        stats.torn += 1;
        assert!(torn.bytes > 0);
        assert_eq!(
            torn.line,
            session.len() as u64 + 2,
            "the torn tail follows the last event"
        );
        // A writer refuses it and changes nothing.
        let writer = JsonlStore::open(path, JsonlOptions::default()).unwrap();
        match Session::open(Box::new(writer)) {
            Err(abridge_session::SessionError::Store(abridge_session::StoreError::Torn {
                torn: refused,
                ..
            })) => assert_eq!(&refused, torn),
            other => panic!("a writer opened a torn log: {:?}", other.map(|(_, r)| r)),
        }
        assert_eq!(std::fs::read(path).unwrap(), killed);
        // Set aside, the log and its sidecar hold every byte the kill left.
        let mut store = JsonlStore::open(path, JsonlOptions::default()).unwrap();
        let aside = store.set_aside_torn().unwrap().expect("a torn tail");
        assert_eq!(&aside.torn, torn);
        let mut joined = std::fs::read(path).unwrap();
        joined.extend(std::fs::read(&aside.sidecar).unwrap());
        assert_eq!(
            joined, killed,
            "the log and the sidecar are the file as left"
        );
    }
    // Every acknowledged batch is there, intact, in order.
    if let Some(last) = acks.last() {
        assert!(
            (session.len() as u64) > *last,
            "acknowledged seq {last} lost: the log has {} events",
            session.len()
        );
    }
    for event in &session.events()[start_len as usize..] {
        let message = event.message().expect("only messages are written");
        assert_eq!(
            message.plain_text(),
            expected_text(event.seq, size),
            "seq {}",
            event.seq
        );
        assert_eq!(event.parent, event.seq.checked_sub(1));
    }
    if !(session.len() as u64 - start_len).is_multiple_of(batch) {
        stats.partial_batches += 1;
    }
    stats.acked += acks.len() as u64;
    stats.runs += 1;
    drop(session);
    // Set aside on disk: a writer opens the log again.
    let (_, again) = Session::open(Box::new(
        JsonlStore::open(path, JsonlOptions::default()).unwrap(),
    ))
    .unwrap();
    assert_eq!(again.torn_tail, None, "the torn tail was set aside on disk");
}

/// The tests that spawn children run one at a time, for the reason in
/// `main.rs`.
pub(crate) static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Small batches on one growing file, killed at random moments: every
/// acknowledged batch survives, and each run resumes the file the last
/// one left.
#[test]
fn sigkill_never_loses_an_acknowledged_batch() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (_dir, path) = support::temp_session();
    drop(support::create(&path));
    let mut rng = Rng::from_time();
    let mut stats = Stats::default();
    for _ in 0..50 {
        let kill = KillAt::Delay(rng.below(60));
        run_once(
            &path,
            1 + rng.below(20),
            50 + rng.below(400) as usize,
            kill,
            &mut stats,
        );
    }
    eprintln!("small batches: {stats:?}");
    assert_eq!(stats.runs, 50);
    assert_eq!(
        stats.partial_batches, 0,
        "a crash left part of a batch in the log"
    );
    assert!(
        stats.acked > 0,
        "no run got as far as an acknowledged batch"
    );
}

/// Large batches killed while the file grows: lines really tear, and each
/// torn tail is reported, refused to a writer, and set aside whole.
#[test]
fn sigkill_mid_batch_tears_and_repairs() {
    let _one = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let mut rng = Rng::from_time();
    let mut stats = Stats::default();
    for run in 0..50 {
        let path = dir.path().join(format!("large{run}.jsonl"));
        drop(support::create(&path));
        let kill = if rng.below(4) == 0 {
            KillAt::Delay(rng.below(80))
        } else {
            KillAt::Growth(rng.below(3))
        };
        run_once(
            &path,
            50 + rng.below(100),
            2048 + rng.below(6144) as usize,
            kill,
            &mut stats,
        );
        std::fs::remove_file(&path).unwrap();
    }
    eprintln!("large batches: {stats:?}");
    assert_eq!(stats.runs, 50);
    assert_eq!(
        stats.partial_batches, 0,
        "a crash left part of a batch in the log"
    );
    assert!(
        stats.torn > 0,
        "no run tore a line: the test did not test repair"
    );
}
