//! Project automation for abridge.
//!
//! - `cargo xtask ci`: format check, clippy with warnings denied, every
//!   test, and the docs build: what CI runs.
//! - `cargo xtask e2e`: compaction against a real llama.cpp
//!   OpenAI-compatible server on 127.0.0.1.
//! - `cargo xtask bench`: speed and memory figures, written to
//!   BENCHMARKS.md.
//! - `cargo xtask eval`: frame legibility (OCR) and density, appended to
//!   BENCHMARKS.md.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

use anyhow::Context;
use anyhow::bail;

mod bench;
mod e2e;
mod e2e_checks;
mod eval;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = workspace_root();
    std::env::set_current_dir(&root).context("cannot enter the workspace root")?;
    match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("e2e") => e2e::run(&root),
        Some("bench") => release_only("bench", &args).and_then(|()| run_bench(&root, &args[1..])),
        Some("eval") => release_only("eval", &args).and_then(|()| run_eval(&root)),
        Some("bench-child") => bench::session::child(&args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask <ci|e2e|bench [AREA...]|eval>\n\n  ci     format, clippy, tests, docs (what CI runs)\n  e2e    compaction against a real llama.cpp server on 127.0.0.1\n  bench  speed and memory figures into BENCHMARKS.md\n  eval   frame legibility and density into BENCHMARKS.md"
            );
            bail!("unknown or missing command")
        }
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Benchmarks mean nothing in a debug build: re-run ourselves in release.
fn release_only(command: &str, args: &[String]) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        println!("xtask {command}: rebuilding in release mode first");
        let status = Command::new("cargo")
            .args(["run", "--quiet", "--release", "--package", "xtask", "--"])
            .args(args)
            .status()
            .context("cannot run cargo")?;
        std::process::exit(status.code().unwrap_or(1));
    }
    Ok(())
}

fn cargo(args: &[&str]) -> anyhow::Result<()> {
    println!("$ cargo {}", args.join(" "));
    let status = Command::new("cargo")
        .args(args)
        .status()
        .context("cannot run cargo")?;
    if !status.success() {
        bail!("`cargo {}` failed", args.join(" "));
    }
    Ok(())
}

fn ci() -> anyhow::Result<()> {
    cargo(&["fmt", "--all", "--check"])?;
    cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])?;
    cargo(&["test", "--workspace", "--no-fail-fast"])?;
    // SAFETY of intent: only this child process sees the flag.
    let status = Command::new("cargo")
        .args(["doc", "--workspace", "--no-deps"])
        .env("RUSTDOCFLAGS", "-D warnings")
        .status()
        .context("cannot run cargo doc")?;
    if !status.success() {
        bail!("`cargo doc` failed");
    }
    println!("xtask ci: all checks passed");
    Ok(())
}

fn run_bench(root: &Path, areas: &[String]) -> anyhow::Result<()> {
    type Area = (&'static str, fn() -> anyhow::Result<Vec<bench::Section>>);
    let all: [Area; 6] = [
        ("session", bench::session::run),
        ("meter", bench::meter::run),
        ("compact", bench::compact::run),
        ("prune", bench::prune::run),
        ("llm", bench::llm::run),
        ("snapcompact", bench::snapcompact::run),
    ];
    let mut sections = Vec::new();
    for (name, run) in all {
        if !areas.is_empty() && !areas.iter().any(|a| a == name) {
            continue;
        }
        println!("bench {name} ...");
        let started = std::time::Instant::now();
        match run() {
            Ok(mut found) => sections.append(&mut found),
            Err(error) => {
                let mut failed =
                    bench::Section::new(name, "This area's benchmark failed.", &["error"]);
                failed.row(vec![format!("{error:#}")]);
                sections.push(failed);
            }
        }
        println!("bench {name}: {:.1}s", started.elapsed().as_secs_f64());
    }
    let command = if areas.is_empty() {
        "cargo xtask bench".to_string()
    } else {
        format!("cargo xtask bench {}", areas.join(" "))
    };
    write_report(root, "BENCHMARKS.md", "Benchmarks", &command, &sections)
}

fn run_eval(root: &Path) -> anyhow::Result<()> {
    let sections = eval::run()?;
    write_report(
        root,
        "EVAL.md",
        "Frame legibility and density",
        "cargo xtask eval",
        &sections,
    )
}

fn write_report(
    root: &Path,
    file: &str,
    title: &str,
    command: &str,
    sections: &[bench::Section],
) -> anyhow::Result<()> {
    let mut out = format!(
        "# {title}\n\nProduced by `{command}` on {}.\n\nMachine: {}.\n\n",
        abridge_session::time::now_rfc3339(),
        machine()
    );
    for section in sections {
        out.push_str(&section.to_markdown());
    }
    let path = root.join(file);
    std::fs::write(&path, out).with_context(|| format!("cannot write {}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(())
}

fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("MemTotal"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or_else(
            || "unknown".to_string(),
            |kb| format!("{:.0} GiB", kb as f64 / 1048576.0),
        );
    format!(
        "{cpu}, {cores} cores, {memory} RAM, {} {}",
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}
