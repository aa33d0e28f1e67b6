//! Reopening a long session and measuring it: a plain open, an open plus a
//! cold measure (every message tokenized), and an open plus a measure that
//! reads the counts kept beside the log (abridge-meter's `KeptCounts`),
//! in process and as whole `abridge stats` processes; then planning and a
//! digest compaction on the reopened session. pi runs beside it in the
//! same run on a pi copy of the same session (see [`super::pi`]).

use std::fs::File;
use std::io::BufReader;
use std::io::BufWriter;
use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;

use abridge_compact::Policy;
use abridge_compact::Trigger;
use abridge_compact::compact_session;
use abridge_compact::host::MeterCounter;
use abridge_compact::host::plan;
use abridge_compact_basic::DigestMethod;
use abridge_llm::Catalog;
use abridge_meter::KeptCounts;
use abridge_meter::KeptFile;
use abridge_meter::KeptLoad;
use abridge_meter::TokenMeter;
use abridge_session::Header;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::Session;

use anyhow::Context;

use super::Section;
use super::fmt_duration;
use super::pi;
use super::pi::PiFigures;

/// pi-mono's in-process open + prepareCompaction of its 38k-entry file,
/// measured for issue 15: the figure quoted when pi cannot be run here
/// (no node or npm, or the install failed).
const PI_OPEN_AND_PLAN: Duration = Duration::from_millis(940);

/// Runs of each of pi's steps in its timing script.
const PI_RUNS: u32 = 5;

/// The window pi's compaction trigger is checked against, and the one
/// `abridge compact` is given (pi's settings do not depend on it).
const WINDOW: u64 = 200_000;

/// The model the session is measured for (o200k, exact).
const MODEL: &str = "gpt-4o";

/// Runs this area's benchmarks; each returned section becomes a table.
pub(crate) fn run() -> anyhow::Result<Vec<Section>> {
    let dir = std::env::temp_dir().join(format!("abridge-bench-reopen-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = reopen(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(vec![result?])
}

/// Median of `runs` timings of `f`.
fn median_of(runs: usize, mut f: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<Duration> {
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let start = Instant::now();
        f()?;
        samples.push(start.elapsed());
    }
    samples.sort();
    Ok(samples[samples.len() / 2])
}

fn counts_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".counts");
    name.into()
}

/// Median of `runs` timings of `step`, each given what an untimed
/// `prepare` made for it (a fresh copy of a file to append to).
fn median_prepared<T>(
    runs: usize,
    mut prepare: impl FnMut() -> anyhow::Result<T>,
    mut step: impl FnMut(T) -> anyhow::Result<()>,
) -> anyhow::Result<Duration> {
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let input = prepare()?;
        let start = Instant::now();
        step(input)?;
        samples.push(start.elapsed());
    }
    samples.sort();
    Ok(samples[samples.len() / 2])
}

/// A copy of the log at `path` and its counts file at `to`, for a run
/// that appends.
fn fresh_copy(path: &Path, to: &Path) -> anyhow::Result<PathBuf> {
    std::fs::copy(path, to)?;
    std::fs::copy(counts_path(path), counts_path(to))?;
    Ok(to.to_path_buf())
}

/// A meter for [`MODEL`] holding the counts kept beside `path`, checked
/// to have been read (not refused, not missing).
fn kept_meter(path: &Path) -> anyhow::Result<TokenMeter> {
    let entry = Catalog::builtin().lookup(MODEL).entry;
    let mut meter = TokenMeter::for_model(&entry);
    let load = KeptFile::beside(path).load(&mut meter);
    anyhow::ensure!(
        matches!(load, KeptLoad::Read(_)),
        "the kept counts were not read: {load:?}"
    );
    Ok(meter)
}

/// Open, measure with the kept counts, and plan a compaction under the
/// default policy (20000 tokens kept verbatim, as pi keeps).
fn open_and_plan(path: &Path) -> anyhow::Result<usize> {
    let session = super::session::open(path)?;
    let counter = Arc::new(MeterCounter::new(kept_meter(path)?));
    counter.measure(&session);
    let policy = Policy::new(counter);
    let plan = plan(&session, &policy).context("nothing to plan")?;
    Ok(plan.seqs().len())
}

/// Open for writing, measure with the kept counts, a whole `digest`
/// compaction (plan, begin, digest, commit), the log synced and the counts
/// saved: what `abridge compact --method digest` does in process.
fn open_and_compact(path: &Path) -> anyhow::Result<u64> {
    let store = JsonlStore::open(path, JsonlOptions::default())?;
    let (mut session, _) = Session::open(Box::new(store))?;
    let counter = Arc::new(MeterCounter::new(kept_meter(path)?));
    counter.measure(&session);
    let policy = Policy::new(counter.clone());
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let outcome = runtime.block_on(compact_session(
        &mut session,
        &DigestMethod,
        &policy,
        Trigger::Manual,
    ))?;
    session.sync()?;
    counter.with_meter(|meter| KeptFile::beside(path).save(meter))?;
    Ok(outcome.tokens_after)
}

/// pi's figures from the same run, or why there are none.
fn pi_figures(session: &Session, dir: &Path) -> Result<PiFigures, String> {
    let copy = dir.join("38k.pi.jsonl");
    let measured = pi::write_copy(session, &copy).and_then(|_| {
        let package = pi::ensure_installed()?;
        pi::measure(&package, &copy, PI_RUNS)
    });
    let _ = std::fs::remove_file(&copy);
    let figures = measured.map_err(|error| format!("{error:#}"))?;
    let surface = session.surface().len() as u64;
    if figures.messages != surface {
        return Err(format!(
            "pi saw {} messages in its copy, abridge {surface} on its surface",
            figures.messages
        ));
    }
    Ok(figures)
}

/// All abridge figures of the section.
struct Ours {
    plain: Duration,
    cold: Duration,
    build: Duration,
    kept: Duration,
    plan: Duration,
    compact: Duration,
    compact_cli: Duration,
    stats_cold: Duration,
    stats_kept: Duration,
    tokens: u64,
    planned: usize,
}

fn measure_ours(path: &Path, dir: &Path) -> anyhow::Result<Ours> {
    let entry = Catalog::builtin().lookup(MODEL).entry;
    let kept_path = counts_path(path);
    let load = super::session::open;

    let plain = median_of(5, || load(path).map(drop))?;
    let mut tokens = 0;
    let cold = median_of(3, || {
        let session = load(path)?;
        tokens = TokenMeter::for_model(&entry).measure(&session).tokens;
        Ok(())
    })?;
    // Count once and keep the counts, as `abridge import` or a first
    // `abridge compact` does.
    let build = median_of(1, || {
        let session = load(path)?;
        let mut meter = TokenMeter::for_model(&entry);
        let model = meter.cost_model().kept_id().unwrap_or_default();
        meter.keep_counts(KeptCounts::new(model));
        meter.measure(&session);
        let mut kept = meter.take_kept_counts().unwrap_or_default();
        kept.write(BufWriter::new(File::create(&kept_path)?))?;
        Ok(())
    })?;
    let mut kept_tokens = 0;
    let kept = median_of(5, || {
        let session = load(path)?;
        let mut meter = TokenMeter::for_model(&entry);
        let model = meter.cost_model().kept_id().unwrap_or_default();
        let counts = KeptCounts::read(BufReader::new(File::open(&kept_path)?), &model)?;
        meter.keep_counts(counts);
        kept_tokens = meter.measure(&session).tokens;
        anyhow::ensure!(
            !meter.kept_counts().is_some_and(KeptCounts::changed),
            "a kept count was not used"
        );
        Ok(())
    })?;
    anyhow::ensure!(
        kept_tokens == tokens,
        "kept counts measure {kept_tokens}, not {tokens}"
    );
    let mut planned = 0;
    let plan = median_of(5, || {
        planned = open_and_plan(path)?;
        Ok(())
    })?;
    let copy = dir.join("38k.copy.jsonl");
    let compact = median_prepared(
        3,
        || fresh_copy(path, &copy),
        |p| open_and_compact(&p).map(drop),
    )?;

    // Whole processes: `abridge compact` with the counts kept, `abridge
    // stats` without and with them.
    let root = std::env::current_dir()?;
    let cli = crate::release_cli::build_cli(&root)?;
    let window = WINDOW.to_string();
    let compact_cli = median_prepared(
        3,
        || fresh_copy(path, &copy),
        |p| {
            let status = Command::new(&cli)
                .args(["compact", "--method", "digest", "--model", MODEL])
                .args(["--window", &window])
                .arg(&p)
                .stdout(Stdio::null())
                .status()?;
            anyhow::ensure!(status.success(), "abridge compact failed");
            Ok(())
        },
    )?;
    let stats = |fresh: bool| {
        median_of(3, || {
            if fresh {
                let _ = std::fs::remove_file(&kept_path);
            }
            let status = Command::new(&cli)
                .args(["stats", "--model", MODEL])
                .arg(path)
                .stdout(Stdio::null())
                .status()?;
            anyhow::ensure!(status.success(), "abridge stats failed");
            Ok(())
        })
    };
    // `stats` reads counts and writes none: put them back after the cold
    // runs removed them.
    let kept_bytes = std::fs::read(&kept_path)?;
    let stats_cold = stats(true)?;
    std::fs::write(&kept_path, &kept_bytes)?;
    let stats_kept = stats(false)?;
    Ok(Ours {
        plain,
        cold,
        build,
        kept,
        plan,
        compact,
        compact_cli,
        stats_cold,
        stats_kept,
        tokens,
        planned,
    })
}

fn reopen(dir: &Path) -> anyhow::Result<Section> {
    let path = dir.join("38k.jsonl");
    {
        let store = JsonlStore::open(&path, JsonlOptions::default())?;
        let mut session = Session::create(Box::new(store), Header::new("path"))?;
        super::session::fill_38k(&mut session)?;
    }
    let bytes = std::fs::metadata(&path)?.len();
    let session = super::session::open(&path)?;
    let (events, surface) = (session.len(), session.surface().len());
    let pi = pi_figures(&session, dir);
    drop(session);
    let ours = measure_ours(&path, dir)?;
    let sidecar = std::fs::metadata(counts_path(&path))?.len();

    let mut section = Section::new(
        "Open and measure with kept counts",
        &format!(
            "The 38k-entry synthetic session of the active-path and simulate benches ({events} events, {surface} messages on the surface, {:.1} MB as JSONL, {} o200k tokens for {MODEL}), opened from its file and measured by a fresh `TokenMeter`. Cold: every surface message tokenized. Kept: the counts file beside the log (`<session>.counts`, {:.1} MB) read and every count checked against its message's content hash, nothing tokenized. Open + plan: open, measure with the counts kept, and `plan` a compaction keeping the newest 20000 tokens. Compact: open for writing, measure with the counts kept, a whole `digest` compaction (plan, begin, digest, commit) appended to a fresh copy of the log and its counts, the counts saved; in process, and as the whole `abridge compact --method digest --window {WINDOW}` process. `abridge stats` is the whole process (open, measure, the breakdown by role and tool, print), cold with the counts file deleted first (`stats` reads counts and writes none) and then with it kept. Medians of 3-5 runs.",
            bytes as f64 / 1e6,
            ours.tokens,
            sidecar as f64 / 1e6,
        ),
        &[
            "measure",
            "abridge",
            "vs plain open",
            "pi, same run",
            "pi / abridge",
            "target",
        ],
    );
    let ratio = |d: Duration| format!("{:.2}x", d.as_secs_f64() / ours.plain.as_secs_f64());
    let faster =
        |theirs: Duration, d: Duration| format!("{:.1}x", theirs.as_secs_f64() / d.as_secs_f64());
    let figures = pi.as_ref().ok();
    let pi_plan = figures.map_or(PI_OPEN_AND_PLAN, |f| f.plan);
    let pi_cell = |step: Option<Duration>| step.map(fmt_duration).unwrap_or_default();
    let vs = |step: Option<Duration>, d: Duration| step.map(|t| faster(t, d)).unwrap_or_default();
    let mut row = |name: &str, d: Duration, theirs: Option<Duration>, target: String| {
        section.row(vec![
            name.to_string(),
            fmt_duration(d),
            ratio(d),
            pi_cell(theirs),
            vs(theirs, d),
            target,
        ]);
    };
    let met = |ok: bool| if ok { "met" } else { "missed" };
    let faster_than_pi = |theirs: Option<Duration>, d: Duration| match theirs {
        Some(t) => format!("faster than pi ({})", met(d < t)),
        None => String::new(),
    };
    row(
        "open (pi: `SessionManager.open` + `buildSessionContext`)",
        ours.plain,
        figures.map(|f| f.open),
        faster_than_pi(figures.map(|f| f.open), ours.plain),
    );
    row("open + measure, cold", ours.cold, None, String::new());
    row(
        "open + measure, keeping the counts (once)",
        ours.build,
        None,
        String::new(),
    );
    let kept_met = ours.kept.as_secs_f64() <= ours.plain.as_secs_f64() * 1.3;
    let five = pi_plan.as_secs_f64() >= 5.0 * ours.kept.as_secs_f64();
    row(
        "open + measure, counts kept (pi: open + `prepareCompaction`)",
        ours.kept,
        Some(pi_plan),
        format!(
            "< 1.3x plain open ({}); >= 5x faster than pi ({})",
            met(kept_met),
            met(five)
        ),
    );
    let plan_theirs = Some(pi_plan);
    row(
        "open + measure, counts kept, + `plan` (pi: open + `prepareCompaction`)",
        ours.plan,
        plan_theirs,
        faster_than_pi(plan_theirs, ours.plan),
    );
    let compact_theirs = figures.map(|f| f.compact);
    row(
        "compact in process: open, measure, digest, commit (pi: open, prepare, append its compaction entry, rebuild)",
        ours.compact,
        compact_theirs,
        faster_than_pi(compact_theirs, ours.compact),
    );
    row(
        "`abridge compact --method digest`, whole process, counts kept (pi: as above, in process)",
        ours.compact_cli,
        compact_theirs,
        faster_than_pi(compact_theirs, ours.compact_cli),
    );
    row(
        "`abridge stats`, no counts file",
        ours.stats_cold,
        None,
        String::new(),
    );
    row(
        "`abridge stats`, counts kept",
        ours.stats_kept,
        None,
        String::new(),
    );
    match &pi {
        Ok(f) => section.note(format!(
            "pi {} (`{}`, pinned) ran in the same run on a pi v3 copy of the same session ({} entries with ids and parentIds, the navigations as parents further back; pi builds {} messages from it, as many as abridge's surface), in one node {} process by `xtask/pi-bench/bench.mjs`: medians of {} runs of each step, module loading and node's start-up excluded, a garbage collection before each run. pi's default compaction settings (keepRecentTokens {}, reserveTokens {}; they do not depend on the window, which only decides pi's trigger and was {WINDOW}); its `prepareCompaction` chose {} messages to summarize of an estimated {} tokens, abridge's `plan` {} messages. pi's compaction is timed without its model call: the summary is a fixed text (abridge's digest needs no model). The synthetic session carries no reported usage, so both estimate every message.",
            f.version, super::pi::PACKAGE, f.entries, f.messages, f.node, f.runs, f.keep_recent_tokens, f.reserve_tokens, f.to_summarize, f.tokens_before, ours.planned,
        )),
        Err(why) => section.note(format!(
            "pi could not be run here ({why}); its figure is the one quoted in issue 15 (its in-process open + prepareCompaction of its own 38k-entry file, 940 ms)."
        )),
    }
    section.note(format!(
        "The 1-minute load average on this machine's 2 cores was {} when this ran.",
        super::simulate::load_average()
    ));
    Ok(section)
}
