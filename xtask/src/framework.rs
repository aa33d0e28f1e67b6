//! `cargo xtask framework`: the adoption check of issue 34. Builds and runs
//! `examples/framework` (a crate outside the workspace on `abridge` with
//! default features off: a 200-turn loop with a custom method, under tokio
//! and under `futures::executor::block_on`), then prints what the minimal
//! feature set costs beside the full facade: the crates `cargo tree`
//! lists for each, and the example's clean debug build time on each (its
//! `full` feature turns abridge's default features on), one after the
//! other in the same run, so the ratio is measured on one machine in one
//! state.
//!
//! Each build goes to an emptied target directory under `target/` so its
//! time is a clean build's, and the directory is removed afterwards (a
//! full facade build is over a gigabyte). The figures are printed, and
//! BENCHMARKS.md records them by hand with the machine they came from.

use std::collections::BTreeSet;
use std::path::Path;
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
    let manifest = root.join("examples/framework/Cargo.toml");
    let target = root.join("target/framework-clean");
    let minimal_build = clean_build(&manifest, &target, &[])?;
    cargo_example(&manifest, &target, "run", &[])?;
    let full_build = clean_build(&manifest, &target, &["--features", "full"])?;
    remove_dir(&target)?;
    println!(
        "framework: the example's clean debug build on abridge --no-default-features: \
         {} crates, {:.0} s; on the full facade (--features full): {} crates, {:.0} s ({:.1}x)",
        minimal.len(),
        minimal_build.as_secs_f64(),
        full.len(),
        full_build.as_secs_f64(),
        full_build.as_secs_f64() / minimal_build.as_secs_f64().max(1.0),
    );
    Ok(())
}

/// Builds the example with `flags` into an emptied `target` and returns
/// how long it took. The example is its own workspace, so the build uses
/// the profile a framework author's crate has, not ours (which optimises
/// dependencies for the test suite's sake).
fn clean_build(manifest: &Path, target: &Path, flags: &[&str]) -> anyhow::Result<Duration> {
    remove_dir(target)?;
    let started = Instant::now();
    cargo_example(manifest, target, "build", flags)?;
    Ok(started.elapsed())
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

fn cargo_example(
    manifest: &Path,
    target: &Path,
    command: &str,
    flags: &[&str],
) -> anyhow::Result<()> {
    println!(
        "$ cargo {command} --manifest-path {} {}",
        manifest.display(),
        flags.join(" ")
    );
    let status = Command::new("cargo")
        .arg(command)
        .args(flags)
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
