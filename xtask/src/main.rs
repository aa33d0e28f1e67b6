//! Project automation for abridge.
//!
//! - `cargo xtask ci`: format check, the architecture lint, clippy with
//!   warnings denied, every test (the gated ones too when their service
//!   is there, and a list of every test that did not run), the fidelity
//!   floors (`eval fidelity --check`), the docs
//!   build, and mutation testing of the lines a change touched when
//!   cheap: what CI runs.
//! - `cargo xtask lint-arch`: crate layers, import circles inside crates
//!   and file sizes against docs/architecture.md (see `arch`).
//! - `cargo xtask e2e`: compaction against a real llama.cpp
//!   OpenAI-compatible server on 127.0.0.1.
//! - `cargo xtask wire`: every request body the encoders write, checked
//!   against the providers' own request types (see `wire`).
//! - `cargo xtask framework`: `examples/framework` (abridge without default
//!   features, a custom method, two executors) built clean and run, with
//!   the minimal set's and the full facade's crate counts, and the
//!   example's clean build time on each, in the same run; `ci` runs it.
//! - `cargo xtask bench`: speed and memory figures, written to
//!   BENCHMARKS.md.
//! - `cargo xtask eval`: frame legibility (OCR) and density, written to
//!   BENCHMARKS.md beside the bench figures.
//! - `cargo xtask eval fidelity [SESSION...] [--check]`: what the model
//!   still knows after each method compacts a session, model-free (see
//!   `fidelity`); with `--llm URL --llm-model NAME`, asked of that model.
//! - `cargo xtask fuzz [--minutes N] [--target T] [--seed S]`:
//!   structure-aware fuzzing of the loader, importers, validator and
//!   snapcompact on the stable toolchain (see `fuzz`); `ci` runs a short
//!   pass.
//! - `cargo xtask mutants`: mutation testing of the compaction core under
//!   a time budget, into docs/mutants.md and BENCHMARKS.md. `ci` runs it
//!   only on the lines a change touched, when that is a few mutants.
//! - `cargo xtask soak --kills N`: SIGKILL trials on a JSONL writer,
//!   including kills mid-compaction, into BENCHMARKS.md (`ci` runs 100).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

use anyhow::Context;
use anyhow::bail;

mod arch;
mod bench;
mod ci_tests;
mod e2e;
mod e2e_aider;
mod e2e_cache;
mod e2e_checks;
mod e2e_faults;
mod e2e_fidelity;
mod e2e_serve;
mod eval;
mod fault_proxy;
mod fidelity;
mod framework;
mod fuzz;
#[cfg(test)]
mod fuzz_doc;
mod fuzz_mutate;
mod fuzz_targets;
mod mutants;
mod release_cli;
#[cfg(test)]
mod replay_doc;
mod soak;
mod soak_child;
mod wire;
mod wire_case;
mod wire_corpus;
mod wire_proxy;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = workspace_root();
    std::env::set_current_dir(&root).context("cannot enter the workspace root")?;
    match args.first().map(String::as_str) {
        Some("ci") => ci(&root),
        Some("lint-arch") => arch::run(&args.get(1).map_or(root, PathBuf::from)),
        Some("e2e") => e2e::run(&root, args.get(1).map(String::as_str)),
        Some("wire") => wire::run(&root),
        Some("framework") => framework::run(&root),
        Some("bench") if sizes_only(&args[1..]) => run_bench(&root, &args[1..]),
        Some("bench") => release_only("bench", &args).and_then(|()| run_bench(&root, &args[1..])),
        // Sizes and shares only: any build gives the same figures.
        Some("eval") if args.get(1).is_some_and(|a| a == "fidelity") => {
            fidelity::run(&root, &args[2..])
        }
        Some("eval") => release_only("eval", &args).and_then(|()| run_eval(&root)),
        Some("bench-child") => bench::child(&args[1..]),
        Some("mutants") => mutants::run(&root, &args[1..]),
        Some("soak") => soak::run(&root, &args[1..]),
        Some("soak-child") => soak_child::run(&args[1..]),
        Some("fuzz") => release_only("fuzz", &args).and_then(|()| fuzz::run(&root, &args[1..])),
        Some("fuzz-child") => fuzz::child(&args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask <ci|lint-arch|e2e [FILTER]|wire|framework|bench [AREA...]|eval [fidelity]|mutants|soak [--kills N]|fuzz>\n\n  ci     format, clippy, tests, docs (what CI runs)\n  lint-arch [DIR]  crate layers, import circles, file sizes (docs/architecture.md)\n  e2e [FILTER]  compaction against a real llama.cpp server on 127.0.0.1, faults through a proxy\n  wire   every request body checked against the providers' own request types\n  framework  the minimal-feature example crate built clean and run, then built clean on the full facade; crate counts and build times\n  bench  speed and memory figures into BENCHMARKS.md\n  eval   frame legibility and density into BENCHMARKS.md\n  eval fidelity [SESSION...] [--window N] [--block NAME] [--probes] [--check] [--llm URL --llm-model NAME [--methods a,b]]  what the model still knows after compaction (model-free, or asked of a model)\n  mutants  mutation testing under a budget into docs/mutants.md and BENCHMARKS.md\n  soak   SIGKILL trials on a session writer (default 1000) into BENCHMARKS.md\n  fuzz [--minutes N] [--target T] [--seed S]  fuzz loader, importers, check, snapcompact"
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

/// Bench areas whose figures are the same in any build, so they run in
/// the build at hand rather than paying for a release build of the whole
/// tree: sizes and shares (`order`), and waits on tokio's paused clock
/// (`wait`).
const SIZE_ONLY_AREAS: &[&str] = &["order", "wait"];

/// True when every requested bench area measures sizes only.
fn sizes_only(areas: &[String]) -> bool {
    !areas.is_empty() && areas.iter().all(|a| SIZE_ONLY_AREAS.contains(&a.as_str()))
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

fn ci(root: &Path) -> anyhow::Result<()> {
    cargo(&["fmt", "--all", "--check"])?;
    println!("$ cargo xtask lint-arch");
    arch::run(root)?;
    cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ])?;
    ci_tests::run()?;
    // Model-free fidelity of the bundled sessions against its floors.
    println!("$ cargo xtask eval fidelity --check");
    fidelity::run(root, &["--check".into()])?;
    // Issue 34: the minimal feature set builds outside the workspace and
    // runs its loop under two executors.
    println!("$ cargo xtask framework");
    framework::run(root)?;
    // The facade's own tests with the minimal set: a test that needs a
    // feature says so in its manifest (`required-features`) or its cfg.
    cargo(&["test", "-q", "-p", "abridge", "--no-default-features"])?;
    // Kill trials, short: the figure in BENCHMARKS.md comes from 1000.
    println!("$ cargo xtask soak --kills 100 (not written)");
    soak::soak(100, None)?;
    // A short fuzz pass: a few seconds per target, figures not written.
    println!("$ cargo xtask fuzz --seconds 54 --no-report");
    fuzz::run(
        root,
        &["--seconds".into(), "54".into(), "--no-report".into()],
    )?;
    // SAFETY of intent: only this child process sees the flag.
    let status = Command::new("cargo")
        .args(["doc", "--workspace", "--no-deps"])
        .env("RUSTDOCFLAGS", "-D warnings")
        .status()
        .context("cannot run cargo doc")?;
    if !status.success() {
        bail!("`cargo doc` failed");
    }
    // Issue 31: every publishable crate packages. `--no-verify` because
    // verifying rebuilds each crate from its package (minutes on 2 cores);
    // lint-arch's packaging rule checks what verifying would catch first:
    // files included from outside the crate.
    cargo(&[
        "package",
        "--workspace",
        "--no-verify",
        "--allow-dirty",
        "--quiet",
    ])?;
    mutants::ci::run(root)?;
    println!("xtask ci: all checks passed");
    Ok(())
}

fn run_bench(root: &Path, areas: &[String]) -> anyhow::Result<()> {
    type Area = (&'static str, fn() -> anyhow::Result<Vec<bench::Section>>);
    let all: &[Area] = &[
        ("session", bench::session::run),
        ("meter", bench::meter::run),
        ("reopen", bench::reopen::run),
        ("import", bench::import::run),
        ("claude", bench::claude_counts::run),
        ("compact", bench::compact::run),
        ("maintenance", bench::maintenance::run),
        ("wait", bench::wait::run),
        ("order", bench::order::run),
        ("simulate", bench::simulate::run),
        ("prune", bench::prune::run),
        ("recall", bench::recall::run),
        ("llm", bench::llm::run),
        ("load", bench::load::run),
        ("snapcompact", bench::snapcompact::run),
        ("serve", bench::serve::run),
        ("serve-reads", bench::serve_reads::run),
        ("proxy", bench::proxy::run),
    ];
    let mut sections = Vec::new();
    for &(name, run) in all {
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
    if areas.is_empty() {
        return write_report(root, "bench", "Benchmarks", "cargo xtask bench", &sections);
    }
    // A partial run replaces only its own sections, so the figures of the
    // areas it did not run are kept; each says which command made it.
    let command = format!("cargo xtask bench {}", areas.join(" "));
    let path = root.join("BENCHMARKS.md");
    let mut text = std::fs::read_to_string(&path).unwrap_or_default();
    for section in &sections {
        let mut markdown = section.to_markdown();
        markdown.push_str(&format!(
            "Re-run alone by `{command}` on {}.\n\n",
            abridge_session::time::now_rfc3339()
        ));
        text = replace_section(&text, &section.title, &markdown);
    }
    std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
    println!(
        "updated {} section(s) of {}",
        sections.len(),
        path.display()
    );
    Ok(())
}

/// Replaces the `## title` section of the bench block (up to the next
/// `## ` heading or the block's end), or adds it at the block's end.
fn replace_section(text: &str, title: &str, markdown: &str) -> String {
    let heading = format!("## {title}\n");
    let end_marker = "<!-- end bench -->";
    let Some(block_end) = text.find(end_marker) else {
        return format!(
            "{}\n<!-- begin bench -->\n{markdown}{end_marker}\n",
            text.trim_end()
        );
    };
    match text[..block_end].find(&heading) {
        Some(start) => {
            let rest = &text[start + heading.len()..block_end];
            let stop = rest
                .find("\n## ")
                .map_or(block_end, |i| start + heading.len() + i + 1);
            format!("{}{markdown}{}", &text[..start], &text[stop..])
        }
        None => format!("{}{markdown}{}", &text[..block_end], &text[block_end..]),
    }
}

fn run_eval(root: &Path) -> anyhow::Result<()> {
    let sections = eval::run()?;
    write_report(
        root,
        "eval",
        "Frame legibility and density",
        "cargo xtask eval",
        &sections,
    )
}

/// Writes `sections` into BENCHMARKS.md as the block named `block`
/// (between `<!-- begin block -->` and `<!-- end block -->`), keeping the
/// other commands' blocks: `bench` and `eval` each own one.
fn write_report(
    root: &Path,
    block: &str,
    title: &str,
    command: &str,
    sections: &[bench::Section],
) -> anyhow::Result<()> {
    let mut body = format!(
        "# {title}\n\nProduced by `{command}` on {}.\n\nMachine: {}.\n\n",
        abridge_session::time::now_rfc3339(),
        machine()
    );
    for section in sections {
        body.push_str(&section.to_markdown());
    }
    let path = root.join("BENCHMARKS.md");
    let existing = std::fs::read_to_string(&path).unwrap_or_default();
    let merged = replace_block(&existing, block, &body);
    std::fs::write(&path, merged).with_context(|| format!("cannot write {}", path.display()))?;
    println!("wrote the {block} block of {}", path.display());
    Ok(())
}

/// `text` with the block named `name` replaced by `body`, or `body`
/// appended as a new block when there is none.
fn replace_block(text: &str, name: &str, body: &str) -> String {
    let begin = format!("<!-- begin {name} -->");
    let end = format!("<!-- end {name} -->");
    let block = format!("{begin}\n{body}{end}\n");
    match (text.find(&begin), text.find(&end)) {
        (Some(start), Some(stop)) if stop > start => {
            let after = &text[stop + end.len()..];
            format!(
                "{}{block}{}",
                &text[..start],
                after.trim_start_matches('\n')
            )
        }
        _ if text.trim().is_empty() => block,
        _ => format!("{}\n{block}", text.trim_end()),
    }
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

#[cfg(test)]
mod tests {
    use super::replace_block;

    #[test]
    fn blocks_are_replaced_in_place_and_others_kept() {
        let first = replace_block("", "bench", "B1\n");
        assert_eq!(first, "<!-- begin bench -->\nB1\n<!-- end bench -->\n");
        let both = replace_block(&first, "eval", "E1\n");
        assert!(
            both.starts_with(&first)
                && both.ends_with("<!-- begin eval -->\nE1\n<!-- end eval -->\n")
        );
        let updated = replace_block(&both, "bench", "B2\n");
        assert_eq!(updated, both.replace("B1", "B2"));
    }
}
