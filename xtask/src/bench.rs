//! `cargo xtask bench`: every speed and memory figure, written to
//! BENCHMARKS.md with the command, the machine and a ratio to the
//! alternative a user would pick.

use std::ffi::OsStr;
use std::process::Command;
use std::time::Duration;
use std::time::Instant;

use anyhow::Context;

pub(crate) mod claude_counts;
pub(crate) mod compact;
pub(crate) mod import;
pub(crate) mod llm;
pub(crate) mod load;
pub(crate) mod maintenance;
pub(crate) mod meter;
pub(crate) mod order;
pub(crate) mod pi;
pub(crate) mod proxy;
pub(crate) mod prune;
pub(crate) mod recall;
pub(crate) mod reopen;
pub(crate) mod serve;
pub(crate) mod serve_reads;
pub(crate) mod session;
pub(crate) mod simulate;
pub(crate) mod snapcompact;
pub(crate) mod wait;

/// One table in BENCHMARKS.md.
#[derive(Debug, Default)]
pub(crate) struct Section {
    /// Heading, for example "Session log".
    pub(crate) title: String,
    /// What is measured and how, in a sentence or two.
    pub(crate) intro: String,
    /// Column names.
    pub(crate) columns: Vec<String>,
    /// One row per measurement, as display strings.
    pub(crate) rows: Vec<Vec<String>>,
    /// Lines under the table: targets met or missed, caveats.
    pub(crate) notes: Vec<String>,
}

impl Section {
    pub(crate) fn new(title: &str, intro: &str, columns: &[&str]) -> Self {
        Section {
            title: title.to_string(),
            intro: intro.to_string(),
            columns: columns.iter().map(|c| (*c).to_string()).collect(),
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub(crate) fn note(&mut self, note: impl Into<String>) {
        self.notes.push(note.into());
    }

    pub(crate) fn to_markdown(&self) -> String {
        let mut out = format!("## {}\n\n{}\n\n", self.title, self.intro);
        out.push_str(&format!("| {} |\n", self.columns.join(" | ")));
        out.push_str(&format!("|{}\n", "---|".repeat(self.columns.len())));
        for row in &self.rows {
            out.push_str(&format!("| {} |\n", row.join(" | ")));
        }
        for note in &self.notes {
            out.push_str(&format!("\n{note}\n"));
        }
        out.push('\n');
        out
    }
}

/// Runs `f` repeatedly for at least `min_time` (and at least once) and
/// returns the median time of one run.
pub(crate) fn median_time<T>(min_time: Duration, mut f: impl FnMut() -> T) -> Duration {
    let mut samples = Vec::new();
    let start = Instant::now();
    while samples.is_empty() || (start.elapsed() < min_time && samples.len() < 10_000) {
        let t = Instant::now();
        std::hint::black_box(f());
        samples.push(t.elapsed());
    }
    samples.sort();
    samples[samples.len() / 2]
}

/// Formats bytes per second as MB/s with one decimal.
pub(crate) fn mb_per_s(bytes: usize, time: Duration) -> String {
    format!(
        "{:.1} MB/s",
        bytes as f64 / 1e6 / time.as_secs_f64().max(1e-12)
    )
}

/// Formats a duration with a unit that keeps three significant figures.
pub(crate) fn fmt_duration(d: Duration) -> String {
    let ns = d.as_nanos() as f64;
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.2} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// Peak resident memory of this process so far, in bytes (Linux `VmHWM`).
pub(crate) fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Current resident memory of this process, in bytes (Linux `VmRSS`).
pub(crate) fn rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Hidden `cargo xtask bench-child MEASUREMENT ...`: measurements that
/// need a process of their own, because `VmHWM` only ever grows and so
/// says nothing about a second measurement in the same process.
pub(crate) fn child(args: &[String]) -> anyhow::Result<()> {
    let rest = args.get(1..).unwrap_or_default();
    match args.first().map(String::as_str) {
        Some("load-peak") => session::load_peak(rest),
        Some("import-peak") => import::child(rest),
        Some("load") => load::child(rest),
        Some("simulate") => simulate::child(rest),
        Some("first-count") => meter::first_count(rest),
        other => anyhow::bail!("unknown bench-child measurement {other:?}"),
    }
}

/// Runs `bench-child ARGS` and reads the `N` whole numbers it prints on
/// one line (byte counts, nanoseconds, event counts).
///
/// # Errors
/// The child's failure, or output that is not exactly `N` numbers.
pub(crate) fn child_figures<const N: usize>(args: &[&OsStr]) -> anyhow::Result<[u64; N]> {
    let printed = run_child(args)?;
    let figures: Vec<u64> = printed
        .split_whitespace()
        .map(str::parse)
        .collect::<Result<_, _>>()
        .with_context(|| format!("bench child {args:?} printed {printed:?}"))?;
    figures
        .try_into()
        .map_err(|_| anyhow::anyhow!("bench child {args:?} printed {printed:?}, not {N} numbers"))
}

/// Runs `bench-child ARGS` in a fresh copy of this binary and returns what
/// it printed.
pub(crate) fn run_child(args: &[&OsStr]) -> anyhow::Result<String> {
    let exe = std::env::current_exe()?;
    let out = Command::new(exe)
        .arg("bench-child")
        .args(args)
        .output()
        .context("cannot run the bench child")?;
    anyhow::ensure!(
        out.status.success(),
        "bench child {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(String::from_utf8(out.stdout)?)
}
