//! `cargo xtask bench load`: 1,000 sessions maintained at once on one
//! current-thread tokio runtime against a loopback mock summarizer (the
//! fault proxy's mock mode, on its own thread, answering after 20 ms).
//!
//! Each session is a JSONL file; its task appends canned turns and calls
//! `after_turn()` after each, until Maintenance has compacted it (with
//! `soft`, through the mock) at least once. Every task is a future of one
//! `join_all` on a current-thread runtime, so a lock held across an await
//! (or any blocking wait on another session) would stall them all: the run
//! finishing is the proof, with clippy's `await_holding_lock` denied in the
//! workspace lints for the static half. Afterwards every file is reopened
//! and checked with the invariants `abridge check` runs.
//!
//! Figures: after_turn throughput and p50/p99 latency, compactions, peak
//! RSS (VmHWM, measured in a child process of its own so earlier areas do
//! not count), and the same work done one session at a time as the ratio's
//! alternative. A bounded run (100 sessions) is a normal test.

use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use abridge::Harness;
use abridge::MethodSources;
use abridge::Settings;
use abridge::SummarizerModel;
use abridge_llm::LlmClient;
use abridge_llm::Message;
use abridge_llm::RetryPolicy;
use abridge_providers::ProviderConfig;
use abridge_providers::ProviderKind;
use abridge_session::FsyncPolicy;
use abridge_session::Header;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::Session;
use anyhow::Context;
use anyhow::ensure;

use super::Section;
use super::fmt_duration;
use crate::fault_proxy::FaultProxy;

/// Sessions in the full run.
pub(crate) const SESSIONS: usize = 1_000;
/// Sessions done one at a time, for the ratio.
const SEQUENTIAL: usize = 50;
/// How long the mock summarizer thinks.
const MOCK_DELAY: Duration = Duration::from_millis(20);
/// Each session's window: a dozen canned turns fill it.
const WINDOW: u64 = 4_096;
/// Turns after the first compaction, so a session goes on after it.
const TURNS_AFTER: usize = 2;
/// A session that has not compacted after this many turns fails the run.
const MAX_TURNS: usize = 200;

/// What the mock summarizer answers: short, well-formed, far smaller than
/// what it replaces.
const SUMMARY: &str = "## Goal\nExplain the parser modules one by one.\n\n## Progress\nRead \
                       each module; noted its errors and callers.\n\n## In short\nParsers \
                       reviewed so far; continue with the next module.";

/// The figures of one run.
#[derive(Debug, Clone)]
pub(crate) struct LoadReport {
    /// Sessions run.
    pub(crate) sessions: usize,
    /// `after_turn` calls made.
    pub(crate) turns: usize,
    /// Compactions that landed, in all.
    pub(crate) compactions: usize,
    /// Of those, by `soft` (through the mock).
    pub(crate) soft: usize,
    /// Wall time of the whole run.
    pub(crate) wall: Duration,
    /// Every `after_turn` latency, sorted.
    pub(crate) latencies: Vec<Duration>,
    /// The latencies of the calls that compacted, sorted.
    pub(crate) compacting: Vec<Duration>,
    /// Sessions whose file failed the check (must be none).
    pub(crate) invalid: Vec<String>,
}

impl LoadReport {
    fn quantile(&self, q: f64) -> Duration {
        quantile(&self.latencies, q)
    }

    /// after_turn calls per second of wall time.
    fn throughput(&self) -> f64 {
        self.turns as f64 / self.wall.as_secs_f64().max(1e-9)
    }
}

/// The `q` quantile of sorted `samples` (zero when there are none).
pub(crate) fn quantile(samples: &[Duration], q: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    let index = ((samples.len() - 1) as f64 * q).round() as usize;
    samples[index]
}

/// What one session's task did.
struct SessionRun {
    latencies: Vec<Duration>,
    compacting: Vec<Duration>,
    compactions: usize,
    soft: usize,
}

/// Builds the harness of session `index`, a JSONL file in `dir`.
fn harness(dir: &Path, index: usize, client: &Arc<dyn LlmClient>) -> anyhow::Result<Harness> {
    let path = dir.join(format!("s{index:04}.jsonl"));
    let options = JsonlOptions {
        fsync: FsyncPolicy::Never,
        ..JsonlOptions::default()
    };
    let store = JsonlStore::open(&path, options)?;
    let session = Session::create(Box::new(store), Header::new(format!("load-{index}")))?;
    let settings = Settings {
        method_order: vec!["soft".into(), "digest".into()],
        reserve: Some(WINDOW / 4),
        keep_recent_tokens: Some(WINDOW / 8),
        ..Settings::default()
    };
    let sources = MethodSources {
        summarizer: Some(SummarizerModel {
            client: client.clone(),
            model: "mock".into(),
            retry: RetryPolicy {
                timeout: Some(Duration::from_secs(120)),
                ..RetryPolicy::default()
            },
            soft: abridge::basic::SoftConfig {
                max_summary_tokens: 256,
                input_window_tokens: WINDOW,
                ..abridge::basic::SoftConfig::default()
            },
            handoff_file: None,
            handoff_max_tokens: None,
        }),
        ..MethodSources::offline("mock")
    };
    Ok(Harness::builder(session, "mock")
        .client(client.clone())
        .settings(settings)
        .window(WINDOW)
        .sources(sources)
        .build()?)
}

/// One session's life: turns until it has compacted, then a few more.
async fn drive(harness: Harness, index: usize) -> anyhow::Result<SessionRun> {
    let mut run = SessionRun {
        latencies: Vec::new(),
        compacting: Vec::new(),
        compactions: 0,
        soft: 0,
    };
    let mut after = 0;
    for turn in 0..MAX_TURNS {
        harness.append(Message::user(format!(
            "Session {index}, step {turn}: explain what parse_{turn} does with its input. {}",
            "Note each branch and early return. ".repeat(6)
        )))?;
        harness.append(Message::assistant(format!(
            "parse_{turn} checks the header and returns an error on a bad version. {}",
            "The match has three arms; the guard rejects empty input. ".repeat(6)
        )))?;
        let started = Instant::now();
        let pass = harness.after_turn().await?;
        let took = started.elapsed();
        run.latencies.push(took);
        if pass.landed() {
            run.compacting.push(took);
        }
        run.compactions += pass.outcomes.len();
        run.soft += pass.outcomes.iter().filter(|o| o.method == "soft").count();
        if run.compactions > 0 {
            after += 1;
            if after > TURNS_AFTER {
                harness.sync()?;
                return Ok(run);
            }
        }
        // Let the other sessions in between turns, as a host serving many
        // users would.
        tokio::task::yield_now().await;
    }
    anyhow::bail!("session {index} did not compact in {MAX_TURNS} turns")
}

/// Reopens every session file and runs the invariant check on it.
fn check_all(dir: &Path, sessions: usize) -> Vec<String> {
    let mut invalid = Vec::new();
    for index in 0..sessions {
        let path = dir.join(format!("s{index:04}.jsonl"));
        let options = JsonlOptions {
            read_only: true,
            ..JsonlOptions::default()
        };
        let opened = JsonlStore::open(&path, options)
            .map_err(anyhow::Error::from)
            .and_then(|store| Ok(Session::open(Box::new(store))?));
        match opened {
            Ok((session, _)) => {
                let report = abridge_compact::check::check_invariants(&session);
                if !report.is_ok() {
                    invalid.push(format!("{}: {:?}", path.display(), report.violations));
                }
            }
            Err(error) => invalid.push(format!("{}: {error:#}", path.display())),
        }
    }
    invalid
}

/// Runs `sessions` sessions in `dir` against a fresh mock: all at once on
/// one current-thread runtime when `concurrent`, else one after another.
pub(crate) fn run_load(
    sessions: usize,
    dir: &Path,
    concurrent: bool,
) -> anyhow::Result<LoadReport> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir)?;
    let mock = FaultProxy::mock(SUMMARY, MOCK_DELAY)?;
    let config = ProviderConfig::new(mock.base_url()).with_default_model("mock");
    let client: Arc<dyn LlmClient> = ProviderKind::OpenAiChat.client(config)?;
    let harnesses = (0..sessions)
        .map(|index| harness(dir, index, &client))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let started = Instant::now();
    let runs: Vec<anyhow::Result<SessionRun>> = runtime.block_on(async {
        let tasks = harnesses
            .into_iter()
            .enumerate()
            .map(|(index, harness)| drive(harness, index));
        if concurrent {
            futures::future::join_all(tasks).await
        } else {
            let mut out = Vec::new();
            for task in tasks {
                out.push(task.await);
            }
            out
        }
    });
    let wall = started.elapsed();
    drop(mock);
    let mut report = LoadReport {
        sessions,
        turns: 0,
        compactions: 0,
        soft: 0,
        wall,
        latencies: Vec::new(),
        compacting: Vec::new(),
        invalid: Vec::new(),
    };
    for run in runs {
        let run = run?;
        report.turns += run.latencies.len();
        report.compactions += run.compactions;
        report.soft += run.soft;
        report.latencies.extend(run.latencies);
        report.compacting.extend(run.compacting);
    }
    report.latencies.sort();
    report.compacting.sort();
    report.invalid = check_all(dir, sessions);
    Ok(report)
}

/// Where a run keeps its session files.
fn work_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new("."))
        .join("target")
        .join("load")
        .join(name)
}

/// Hidden `bench-child load SESSIONS`: the concurrent run in a process of
/// its own, printing its figures and VmHWM as one JSON line.
pub(crate) fn child(args: &[String]) -> anyhow::Result<()> {
    let sessions: usize = args
        .first()
        .context("bench-child load needs a session count")?
        .parse()?;
    let dir = work_dir("concurrent");
    let report = run_load(sessions, &dir, true)?;
    let peak = super::peak_rss_bytes().unwrap_or(0);
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "{}",
        serde_json::json!({
            "sessions": report.sessions,
            "turns": report.turns,
            "compactions": report.compactions,
            "soft": report.soft,
            "wall_ns": report.wall.as_nanos() as u64,
            "p50_ns": report.quantile(0.50).as_nanos() as u64,
            "p99_ns": report.quantile(0.99).as_nanos() as u64,
            "compacting_p50_ns": quantile(&report.compacting, 0.50).as_nanos() as u64,
            "compacting_p99_ns": quantile(&report.compacting, 0.99).as_nanos() as u64,
            "invalid": report.invalid,
            "peak_rss": peak,
        })
    );
    Ok(())
}

/// Runs the section: 1,000 sessions at once (in a child), then the same
/// work for 50 sessions one at a time, as the alternative.
pub(crate) fn run() -> anyhow::Result<Vec<Section>> {
    let child = |sessions: usize| -> anyhow::Result<serde_json::Value> {
        let printed = super::run_child(&["load".as_ref(), sessions.to_string().as_ref()])?;
        Ok(serde_json::from_str(printed.trim())?)
    };
    let small = child(SESSIONS / 10)?;
    let figures = child(SESSIONS)?;
    let get = |key: &str| figures[key].as_u64().unwrap_or(0);
    let invalid = figures["invalid"].as_array().map_or(0, Vec::len);
    ensure!(
        invalid == 0,
        "{invalid} sessions failed the check: {}",
        figures["invalid"]
    );
    ensure!(
        get("compactions") >= SESSIONS as u64,
        "only {} compactions for {SESSIONS} sessions",
        get("compactions")
    );
    let wall = Duration::from_nanos(get("wall_ns"));
    let throughput = get("turns") as f64 / wall.as_secs_f64().max(1e-9);

    let dir = work_dir("sequential");
    let sequential = run_load(SEQUENTIAL, &dir, false)?;
    let _ = std::fs::remove_dir_all(&dir);
    ensure!(sequential.invalid.is_empty(), "{:?}", sequential.invalid);

    let mut section = Section::new(
        "Load: 1,000 sessions on one runtime",
        &format!(
            "{SESSIONS} JSONL sessions (fsync off) maintained at once by one current-thread tokio \
             runtime, each appending canned turns and calling `after_turn()` until Maintenance \
             compacted it with `soft` through a loopback mock summarizer that answers after \
             {} ms, then {TURNS_AFTER} more turns. Every file is reopened and checked afterwards. \
             Latency is one `after_turn()` call, including its wait on the mock when it compacts. \
             The alternative is the same work one session at a time ({SEQUENTIAL} sessions).",
            MOCK_DELAY.as_millis()
        ),
        &[
            "run",
            "sessions",
            "after_turn calls",
            "compactions (soft)",
            "wall",
            "after_turn/s",
            "p50",
            "p99",
            "compacting p50 / p99",
            "peak RSS",
            "corrupted",
        ],
    );
    section.row(vec![
        "all at once".into(),
        get("sessions").to_string(),
        get("turns").to_string(),
        format!("{} ({})", get("compactions"), get("soft")),
        fmt_duration(wall),
        format!("{throughput:.0}"),
        fmt_duration(Duration::from_nanos(get("p50_ns"))),
        fmt_duration(Duration::from_nanos(get("p99_ns"))),
        format!(
            "{} / {}",
            fmt_duration(Duration::from_nanos(get("compacting_p50_ns"))),
            fmt_duration(Duration::from_nanos(get("compacting_p99_ns")))
        ),
        format!("{:.1} MiB", get("peak_rss") as f64 / 1048576.0),
        invalid.to_string(),
    ]);
    section.row(vec![
        "one at a time".into(),
        sequential.sessions.to_string(),
        sequential.turns.to_string(),
        format!("{} ({})", sequential.compactions, sequential.soft),
        fmt_duration(sequential.wall),
        format!("{:.0}", sequential.throughput()),
        fmt_duration(sequential.quantile(0.50)),
        fmt_duration(sequential.quantile(0.99)),
        format!(
            "{} / {}",
            fmt_duration(quantile(&sequential.compacting, 0.50)),
            fmt_duration(quantile(&sequential.compacting, 0.99))
        ),
        "-".into(),
        sequential.invalid.len().to_string(),
    ]);
    let small_peak = small["peak_rss"].as_u64().unwrap_or(0);
    let slope = get("peak_rss").saturating_sub(small_peak) as f64
        / 1024.0
        / (SESSIONS - SESSIONS / 10) as f64;
    section.note(format!(
        "Throughput all at once vs one at a time: {:.1}x. Every session crosses its threshold \
         on the same turn, so the compacting calls all wait on the mock at once: their p99 is \
         the queue of 1,000 summaries on one thread, not a stall. Peak RSS with {} sessions: \
         {:.1} MiB, so each further live session costs about {slope:.0} KiB (its log, surface \
         and meter in memory, and its connection).",
        throughput / sequential.throughput().max(1e-9),
        SESSIONS / 10,
        small_peak as f64 / 1048576.0,
    ));
    Ok(vec![section])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hundred sessions on one current-thread runtime finish (no lock
    /// held across an await stalls them), each compacts through the mock,
    /// and every file passes the invariant check.
    #[test]
    fn a_hundred_sessions_compact_concurrently_on_one_thread() {
        let dir = std::env::temp_dir().join(format!("abridge-load-{}", std::process::id()));
        let report = run_load(100, &dir, true).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(report.invalid.is_empty(), "{:?}", report.invalid);
        assert!(report.soft >= 100, "{report:?}");
        assert_eq!(report.sessions, 100);
    }
}
