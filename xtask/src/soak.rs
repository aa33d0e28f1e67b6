//! `cargo xtask soak --kills N`: kill trials at scale.
//!
//! Each trial starts a writer ([`soak_child`](crate::soak_child)) on a
//! JSONL session with a random fsync policy and batch size, SIGKILLs it at
//! a random point (after a delay, right after its k-th report, or between
//! a compaction's start and its summary), then reopens the log and
//! checks: it opens; every event the child acknowledged is there, byte for
//! byte; the invariants hold; a start the kill left open is recognised as
//! stale; and the next compaction succeeds despite it (then the stale
//! start is closed). A new session file is begun every
//! [`TRIALS_PER_FILE`] trials so reopening stays cheap.
//!
//! The figure goes to BENCHMARKS.md (its own block); `cargo xtask ci`
//! runs a shorter soak without writing it.

use std::io::BufRead;
use std::path::Path;
use std::path::PathBuf;
use std::process::Child;
use std::process::Command;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;
use std::time::Instant;

use abridge_compact::EstimateCounter;
use abridge_compact::Policy;
use abridge_compact::Trigger;
use abridge_compact::check::check_invariants;
use abridge_compact::compact_session;
use abridge_compact::host::TYPE_COMPACTION_START;
use abridge_compact::host::close_stale;
use abridge_compact_basic::DigestMethod;
use abridge_llm::Message;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::Seq;
use abridge_session::Session;
use anyhow::Context;
use anyhow::bail;

use crate::bench::Section;

/// Trials on one session file before a fresh one is begun.
const TRIALS_PER_FILE: u64 = 25;

/// Longest wait for the child to say `READY` or for a report it must send.
const PATIENCE: Duration = Duration::from_secs(60);

/// A small deterministic generator; the seed is printed so a failing run
/// can be repeated with `--seed`.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    /// A value in `0..n`.
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// The message the child writes at `seq`: alternating user and assistant
/// turns whose text names the seq and whose length and filler follow from
/// it, so the parent can check every acknowledged event in full.
pub(crate) fn message(seq: Seq) -> Message {
    let mut state = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let len = 40 + (next() % 600) as usize;
    let mut text = format!("soak event {seq}:");
    while text.len() < len {
        text.push(char::from(b'a' + (next() % 26) as u8));
        if next() % 7 == 0 {
            text.push(' ');
        }
    }
    if seq.is_multiple_of(2) {
        Message::user(text)
    } else {
        Message::assistant(text)
    }
}

/// Messages on the surface before either side compacts: a `digest` of
/// fewer can cost more than it hides, and is rightly refused.
pub(crate) const COMPACT_FROM: usize = 40;

/// True when the surface is long enough to compact (see [`COMPACT_FROM`]).
pub(crate) fn worth_compacting(session: &Session) -> bool {
    session.surface().seqs().len() >= COMPACT_FROM
}

/// The compaction policy of both sides: keep little, so there is always
/// something to compact.
pub(crate) fn policy() -> Policy {
    Policy {
        keep_recent_tokens: 300,
        ..Policy::new(Arc::new(EstimateCounter::new()))
    }
}

/// When the parent kills the child.
#[derive(Debug, Clone, Copy)]
enum KillAt {
    /// This many milliseconds after `READY`.
    Delay(u64),
    /// Right after the child's `n`th report (it is already writing the
    /// next thing).
    Report(u64),
    /// As soon as the hanging child reports its compaction's start.
    MidCompaction,
}

/// Totals over all trials: the figure.
#[derive(Debug, Default)]
struct Totals {
    kills: u64,
    acknowledged: u64,
    lost: u64,
    torn: u64,
    mid_compaction: u64,
    stale_recognised: u64,
    compactions_after: u64,
    child_compactions: u64,
    by_policy: [u64; 3],
    problems: Vec<String>,
}

/// What one killed child reported.
#[derive(Debug, Default)]
struct Reports {
    acks: Vec<(Seq, Seq)>,
    starts: Vec<Seq>,
    done: Vec<Seq>,
    refused: Vec<Seq>,
}

impl Reports {
    fn parse(lines: &[String]) -> anyhow::Result<Self> {
        let mut reports = Reports::default();
        for line in lines {
            let words: Vec<&str> = line.split_whitespace().collect();
            let number = |i: usize| -> anyhow::Result<Seq> {
                words
                    .get(i)
                    .with_context(|| format!("short report {line:?}"))?
                    .parse()
                    .with_context(|| format!("bad number in {line:?}"))
            };
            match words.first().copied() {
                Some("ACK") => reports.acks.push((number(1)?, number(2)?)),
                Some("START") => reports.starts.push(number(1)?),
                Some("DONE") => reports.done.push(number(1)?),
                Some("REFUSED") => reports.refused.push(number(1)?),
                _ => {}
            }
        }
        Ok(reports)
    }
}

/// `cargo xtask soak [--kills N] [--seed S]`: runs the trials, prints the
/// figure and writes it into BENCHMARKS.md.
pub(crate) fn run(root: &Path, args: &[String]) -> anyhow::Result<()> {
    let mut kills = 1000;
    let mut seed = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let value = rest
            .next()
            .with_context(|| format!("{arg} needs a value"))?;
        match arg.as_str() {
            "--kills" => kills = value.parse().context("--kills takes a count")?,
            "--seed" => seed = Some(value.parse().context("--seed takes a number")?),
            other => bail!("unknown soak option {other:?} (--kills N, --seed S)"),
        }
    }
    let section = soak(kills, seed)?;
    crate::write_report(
        root,
        "soak",
        "Kill trials",
        &format!("cargo xtask soak --kills {kills}"),
        &[section],
    )
}

/// Runs `kills` trials and returns the figure; fails when any trial
/// found a problem (after printing them all).
pub(crate) fn soak(kills: u64, seed: Option<u64>) -> anyhow::Result<Section> {
    let seed = seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    }) | 1;
    println!("soak: {kills} kills, seed {seed}");
    let dir = std::env::temp_dir().join(format!("abridge-soak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot make {}", dir.display()))?;
    let mut rng = Rng(seed);
    let mut totals = Totals::default();
    let started = Instant::now();
    let mut path = PathBuf::new();
    for trial in 0..kills {
        if trial % TRIALS_PER_FILE == 0 {
            path = dir.join(format!("session-{trial}.jsonl"));
        }
        if let Err(error) = one_trial(&path, &mut rng, &mut totals) {
            totals
                .problems
                .push(format!("trial {trial} on {}: {error:#}", path.display()));
            // A fresh file, so one broken log does not fail every trial after it.
            path = dir.join(format!("session-{trial}-after-failure.jsonl"));
        }
        if (trial + 1) % 100 == 0 {
            println!(
                "soak: {} kills, {} acknowledged, {} lost, {:.0}s",
                trial + 1,
                totals.acknowledged,
                totals.lost,
                started.elapsed().as_secs_f64()
            );
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    if totals.problems.is_empty() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let section = figure(&totals, seconds, seed);
    print!("{}", section.to_markdown());
    if !totals.problems.is_empty() {
        for problem in &totals.problems {
            eprintln!("soak: {problem}");
        }
        bail!(
            "{} of {kills} trials found a problem (seed {seed}; files kept in {})",
            totals.problems.len(),
            dir.display()
        );
    }
    Ok(section)
}

fn figure(totals: &Totals, seconds: f64, seed: u64) -> Section {
    let mut section = Section::new(
        "Kill trials",
        "A writer appends batches of 1 to 40 events to a JSONL session (fsync every batch, at an interval, or never, chosen per trial) and runs `digest` compactions now and then; \
         it is SIGKILLed after a random delay, right after a random report, or between a compaction's start and its summary. \
         After each kill the log is reopened and every acknowledged event checked in full; a start left open must be recognised as stale and the next compaction must succeed.",
        &[
            "kills",
            "seconds",
            "events acknowledged",
            "events lost",
            "kills mid-compaction",
            "stale starts recognised",
            "compactions after a kill",
            "torn tails set aside",
        ],
    );
    section.row(vec![
        totals.kills.to_string(),
        format!("{seconds:.1}"),
        totals.acknowledged.to_string(),
        totals.lost.to_string(),
        totals.mid_compaction.to_string(),
        totals.stale_recognised.to_string(),
        totals.compactions_after.to_string(),
        totals.torn.to_string(),
    ]);
    section.note(format!(
        "fsync policies: every batch {}, interval {}, never {} (a SIGKILL keeps the page cache, so all three must keep every acknowledged event; power loss is the strace test's part). \
         Compactions the writers committed between kills: {}. Seed {seed}. Problems: {}.",
        totals.by_policy[0],
        totals.by_policy[1],
        totals.by_policy[2],
        totals.child_compactions,
        totals.problems.len()
    ));
    section
}

/// One kill and the checks after it.
fn one_trial(path: &Path, rng: &mut Rng, totals: &mut Totals) -> anyhow::Result<()> {
    let (fsync, policy_index) = match rng.below(3) {
        0 => ("every".to_string(), 0),
        1 => (format!("interval:{}", rng.below(20)), 1),
        _ => ("never".to_string(), 2),
    };
    let max_batch = 1 + rng.below(40);
    let kill = match rng.below(4) {
        0 => KillAt::MidCompaction,
        1 => KillAt::Report(1 + rng.below(30)),
        _ => KillAt::Delay(rng.below(40)),
    };
    let mode = if matches!(kill, KillAt::MidCompaction) {
        "hang"
    } else {
        "run"
    };
    let child = Command::new(std::env::current_exe()?)
        .arg("soak-child")
        .arg(path)
        .arg(rng.below(u64::MAX).to_string())
        .arg(&fsync)
        .arg(max_batch.to_string())
        .arg(mode)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot start the soak child")?;
    let lines = kill_child(child, kill)?;
    totals.kills += 1;
    totals.by_policy[policy_index] += 1;
    if matches!(kill, KillAt::MidCompaction) {
        totals.mid_compaction += 1;
    }
    let reports = Reports::parse(&lines)?;
    totals.child_compactions += reports.done.len() as u64;
    check_after_kill(path, &reports, kill, totals)
}

/// Waits for `READY`, kills the child at `kill`, and returns every line
/// it printed.
fn kill_child(mut child: Child, kill: KillAt) -> anyhow::Result<Vec<String>> {
    let stdout = child.stdout.take().context("no stdout pipe")?;
    let stderr = child.stderr.take().context("no stderr pipe")?;
    let (tx, rx) = mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let errors = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let mut lines = Vec::new();
    let wait_for = |lines: &mut Vec<String>, done: &mut dyn FnMut(&str) -> bool| {
        let deadline = Instant::now() + PATIENCE;
        loop {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(line) => {
                    let stop = done(&line);
                    lines.push(line);
                    if stop {
                        return true;
                    }
                }
                Err(_) => return false,
            }
        }
    };
    let ready = wait_for(&mut lines, &mut |l| l.starts_with("READY "));
    let mut reached = ready;
    if ready {
        match kill {
            KillAt::Delay(ms) => std::thread::sleep(Duration::from_millis(ms)),
            KillAt::Report(n) => {
                let mut seen = 0;
                reached = wait_for(&mut lines, &mut |_| {
                    seen += 1;
                    seen >= n
                });
            }
            KillAt::MidCompaction => {
                reached = wait_for(&mut lines, &mut |l| l.starts_with("START "));
            }
        }
    }
    // SIGKILL on Unix.
    let _ = child.kill();
    child.wait().context("cannot reap the soak child")?;
    let _ = reader.join();
    lines.extend(rx.try_iter());
    let errors = errors.join().unwrap_or_default();
    if !reached {
        bail!(
            "the child stopped before the kill point {kill:?} (printed {lines:?}): {}",
            errors.trim()
        );
    }
    Ok(lines)
}

/// Reopens the log and checks it against what the child reported.
fn check_after_kill(
    path: &Path,
    reports: &Reports,
    kill: KillAt,
    totals: &mut Totals,
) -> anyhow::Result<()> {
    let mut store = JsonlStore::open(path, JsonlOptions::default())?;
    // A write the kill cut short is refused by every writer until it is
    // set aside, as `abridge repair` does; its bytes go to a sidecar.
    if let Some(aside) = store
        .set_aside_torn()
        .with_context(|| format!("cannot set aside the torn tail after the kill at {kill:?}"))?
    {
        totals.torn += 1;
        std::fs::remove_file(&aside.sidecar)?;
    }
    let (mut session, _) = Session::open(Box::new(store))
        .with_context(|| format!("the log does not reopen after the kill at {kill:?}"))?;
    let mut lost = Vec::new();
    for &(first, last) in &reports.acks {
        totals.acknowledged += last - first + 1;
        for seq in first..=last {
            let expected = message(seq);
            let kept = session.message(seq).is_some_and(|m| {
                m.role == expected.role && m.plain_text() == expected.plain_text()
            });
            if !kept {
                lost.push(seq);
            }
        }
    }
    for &start in &reports.starts {
        totals.acknowledged += 1;
        let kept = session
            .event(start)
            .and_then(|e| e.log())
            .is_some_and(|l| l.kind == TYPE_COMPACTION_START);
        if !kept {
            lost.push(start);
        }
    }
    totals.lost += lost.len() as u64;
    if !lost.is_empty() {
        bail!("acknowledged events lost or changed: {lost:?}");
    }
    let report = check_invariants(&session);
    if !report.is_ok() {
        bail!("invariants broken after the kill: {:?}", report.violations);
    }
    // A start the child reported and did not see committed is either
    // stale now or was ended by a commit the kill did not beat.
    let open: Vec<Seq> = reports
        .starts
        .iter()
        .copied()
        .filter(|s| !reports.done.contains(s) && !reports.refused.contains(s))
        .collect();
    let stale: Vec<Seq> = report.stale_starts.iter().map(|s| s.seq).collect();
    let recognised = open.iter().filter(|s| stale.contains(s)).count() as u64;
    if matches!(kill, KillAt::MidCompaction) && recognised == 0 {
        bail!(
            "the start at {open:?} left by a kill mid-compaction is not recognised as stale (stale: {stale:?})"
        );
    }
    totals.stale_recognised += recognised;
    if !stale.is_empty() {
        // A short surface gets more turns first, so a refusal for size
        // cannot pass for a failure caused by the stale start.
        while !worth_compacting(&session) {
            let seq = session.len() as Seq;
            session.append_message(message(seq))?;
        }
        let runtime = tokio::runtime::Builder::new_current_thread().build()?;
        runtime
            .block_on(compact_session(
                &mut session,
                &DigestMethod,
                &policy(),
                Trigger::Manual,
            ))
            .context("the first compaction after the kill failed")?;
        totals.compactions_after += 1;
        close_stale(&mut session).context("cannot close the stale starts")?;
        let after = check_invariants(&session);
        if !after.is_ok() || !after.stale_starts.is_empty() {
            bail!("after the compaction and close_stale: {after:?}");
        }
    }
    Ok(())
}
