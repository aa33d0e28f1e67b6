//! `cargo xtask framework`: the adoption check of issue 34. Builds and runs
//! `examples/framework` (a crate outside the workspace on `abridge` with
//! default features off: a 200-turn loop with a custom method, under tokio
//! and under `futures::executor::block_on`), then prints what the minimal
//! feature set costs beside the full facade: the crates `cargo tree`
//! lists for each, and the clean debug build time of each, one after the
//! other in the same run, so the ratio is measured on one machine in one
//! state.
//!
//! Each build goes to a fresh target directory under `target/` so its
//! time is a clean build's, and the directory is removed afterwards (a
//! full facade build is over a gigabyte). The figures are printed, and
//! BENCHMARKS.md records them by hand with the machine they came from.

use std::collections::BTreeSet;
use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;
use std::time::Instant;

use anyhow::Context;
use anyhow::bail;

/// The crates that must not appear in the minimal set: HTTP, TLS, the
/// async runtime, image encoding and font rendering.
pub(crate) const HEAVY: &[&str] = &[
    "reqwest", "hyper", "rustls", "ring", "tokio", "png", "ab_glyph",
];

pub(crate) fn run(root: &Path) -> anyhow::Result<()> {
    let minimal = crates_of(&["--no-default-features"])?;
    let full = crates_of(&[])?;
    let heavy: Vec<&str> = HEAVY
        .iter()
        .copied()
        .filter(|name| minimal.iter().any(|c| c == name))
        .collect();
    if !heavy.is_empty() {
        bail!("abridge without default features pulls in {heavy:?}");
    }
    let minimal_build = clean_build(root, "facade-minimal", &["--no-default-features"])?;
    let full_build = clean_build(root, "facade-full", &[])?;
    let manifest = root.join("examples/framework/Cargo.toml");
    let target = fresh_dir(&root.join("target/framework-clean"))?;
    let started = Instant::now();
    cargo_example(&manifest, &target, "build")?;
    let example_build = started.elapsed();
    cargo_example(&manifest, &target, "run")?;
    remove_dir(&target)?;
    println!(
        "framework: abridge --no-default-features: {} crates, clean debug build {:.0} s; \
         the full facade: {} crates, {:.0} s ({:.1}x); the example's clean debug build: {:.0} s",
        minimal.len(),
        minimal_build.as_secs_f64(),
        full.len(),
        full_build.as_secs_f64(),
        full_build.as_secs_f64() / minimal_build.as_secs_f64().max(1.0),
        example_build.as_secs_f64()
    );
    Ok(())
}

/// Builds the facade's library with `flags` into an empty target
/// directory and returns how long it took; the directory is removed.
fn clean_build(root: &Path, name: &str, flags: &[&str]) -> anyhow::Result<Duration> {
    let target = fresh_dir(&root.join("target").join(name))?;
    println!("$ cargo build -p abridge --lib {} (clean)", flags.join(" "));
    let started = Instant::now();
    let status = Command::new("cargo")
        .args(["build", "-p", "abridge", "--lib"])
        .args(flags)
        .arg("--target-dir")
        .arg(&target)
        .status()
        .context("cannot run cargo")?;
    let took = started.elapsed();
    if !status.success() {
        bail!("the clean build of abridge {flags:?} failed");
    }
    remove_dir(&target)?;
    Ok(took)
}

/// `path`, emptied: a clean build must not find an earlier one's output.
fn fresh_dir(path: &Path) -> anyhow::Result<PathBuf> {
    remove_dir(path)?;
    Ok(path.to_path_buf())
}

fn remove_dir(path: &Path) -> anyhow::Result<()> {
    if path.exists() {
        std::fs::remove_dir_all(path)
            .with_context(|| format!("cannot clear {}", path.display()))?;
    }
    Ok(())
}

/// The distinct crates (name and version) `cargo tree` lists for abridge's
/// normal dependencies with `flags`, abridge itself included.
fn crates_of(flags: &[&str]) -> anyhow::Result<BTreeSet<String>> {
    let output = Command::new("cargo")
        .args(["tree", "-p", "abridge", "-e", "normal", "--prefix", "none"])
        .args(flags)
        .output()
        .context("cannot run cargo tree")?;
    if !output.status.success() {
        bail!(
            "`cargo tree` failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(distinct_crates(&String::from_utf8_lossy(&output.stdout)))
}

/// Each line's crate name, once; repeats marked `(*)` are the same crate.
pub(crate) fn distinct_crates(tree: &str) -> BTreeSet<String> {
    tree.lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_string)
        .collect()
}

fn cargo_example(manifest: &Path, target: &Path, command: &str) -> anyhow::Result<()> {
    println!("$ cargo {command} --manifest-path {}", manifest.display());
    let status = Command::new("cargo")
        .arg(command)
        .arg("--manifest-path")
        .arg(manifest)
        .arg("--target-dir")
        .arg(target)
        .status()
        .context("cannot run cargo")?;
    if !status.success() {
        bail!("`cargo {command}` of the framework example failed");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_crates_count_once() {
        let tree = "abridge v0.1.0 (/x)\nserde v1.0.1\nserde v1.0.1 (*)\nthiserror v2.0.0\n";
        let names: Vec<String> = distinct_crates(tree).into_iter().collect();
        assert_eq!(names, ["abridge", "serde", "thiserror"]);
    }
}
