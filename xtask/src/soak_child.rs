//! The soak's writer, `cargo xtask soak-child PATH SEED FSYNC MAX_BATCH
//! MODE`: appends batches of random sizes to a JSONL session and now and
//! then runs a `digest` compaction, reporting on stdout each thing only
//! after the call that made it durable returned. The parent kills it.
//!
//! Lines it prints:
//! - `READY <events>` once the session is open;
//! - `ACK <first> <last>` after a batch of those seqs was appended;
//! - `START <seq>` after a compaction's `compaction/start` was appended;
//! - `DONE <start> <end>` after that compaction committed;
//! - `REFUSED <start>` after it was refused and its end written.
//!
//! In mode `hang` it stops after its first `START` as if the model call
//! never returned, so the kill lands between start and summary.

use std::path::Path;
use std::time::Duration;

use abridge_compact::CompactionMethod;
use abridge_compact::ErrorKind;
use abridge_compact::host::begin;
use abridge_compact::host::commit;
use abridge_compact::host::plan;
use abridge_compact_basic::DigestMethod;
use abridge_session::Draft;
use abridge_session::FsyncPolicy;
use abridge_session::Header;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::Session;
use anyhow::Context;
use anyhow::bail;

use crate::soak::Rng;
use crate::soak::message;
use crate::soak::policy;
use crate::soak::worth_compacting;

/// Parses an fsync policy as the parent writes it: `every`, `never` or
/// `interval:MS`.
pub(crate) fn parse_fsync(text: &str) -> anyhow::Result<FsyncPolicy> {
    Ok(match text {
        "every" => FsyncPolicy::EveryBatch,
        "never" => FsyncPolicy::Never,
        other => match other.strip_prefix("interval:") {
            Some(ms) => FsyncPolicy::Interval(Duration::from_millis(ms.parse()?)),
            None => bail!("unknown fsync policy {other:?}"),
        },
    })
}

/// Runs the child until it is killed (or, in mode `hang`, sleeps once its
/// start is written).
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let [path, seed, fsync, max_batch, mode] = args else {
        bail!("usage: xtask soak-child PATH SEED FSYNC MAX_BATCH MODE");
    };
    let path = Path::new(path);
    let mut rng = Rng(seed.parse::<u64>()? | 1);
    let max_batch: u64 = max_batch.parse()?;
    let hang = mode == "hang";
    let options = JsonlOptions {
        fsync: parse_fsync(fsync)?,
        ..JsonlOptions::default()
    };
    let store = Box::new(JsonlStore::open(path, options)?);
    let mut session = if path.exists() {
        Session::open(store)
            .with_context(|| format!("cannot reopen {}", path.display()))?
            .0
    } else {
        Session::create(store, Header::new("soak"))?
    };
    println!("READY {}", session.len());
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let policy = policy();
    loop {
        let compact_now = worth_compacting(&session) && (hang || rng.below(8) == 0);
        if compact_now && let Some(plan) = plan(&session, &policy) {
            let ticket = begin(&mut session, plan, DigestMethod.name())?;
            let start = ticket.start_seq();
            println!("START {start}");
            if hang {
                std::thread::sleep(Duration::from_secs(600));
                bail!("the parent never killed the hanging child");
            }
            let output = runtime.block_on(DigestMethod.run(ticket.plan()))?;
            // A refusal (the digest would not shrink the context) is
            // recorded by `commit` as the compaction's end: not a failure.
            match commit(&mut session, ticket, output) {
                Ok(outcome) => println!("DONE {start} {}", outcome.end_seq),
                Err(error) if error.kind() == ErrorKind::NotSmaller => {
                    println!("REFUSED {start}");
                }
                Err(error) => return Err(error.into()),
            }
            continue;
        }
        let first = session.len() as u64;
        let size = 1 + rng.below(max_batch);
        let drafts = (first..first + size)
            .map(|seq| Draft::message(message(seq)))
            .collect();
        let seqs = session.append_batch(drafts)?;
        println!("ACK {first} {}", seqs.last().copied().unwrap_or(first));
    }
}
