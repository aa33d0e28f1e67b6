//! The mutation step of `cargo xtask ci`: cargo-mutants on the lines a
//! change touched in the four mutated crates, when that is cheap.
//!
//! The diff is taken against `$MUTANTS_BASE` when set, else the merge
//! base with origin/main (or HEAD~1 when there is no origin/main),
//! working-tree changes included. The step
//! is skipped, with the reason printed, when cargo-mutants is not
//! installed (`.ci/run` installs a pinned version, once per machine and
//! within a time box, so in CI it is), when the change touches none of
//! the crates, or when it has more than [`CAP`] mutants.
//! Otherwise the mutants run under [`BUDGET`]; a missed one fails CI,
//! since it is new code no test notices. The baseline test run is skipped:
//! `ci` has just run every test.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::Context;
use anyhow::bail;

use super::DEFAULT_CRATES;
use super::report::Report;

/// The most mutants the step tests; above it, it skips (each mutant is a
/// rebuild and a test run: a minute or so on two shared cores).
const CAP: usize = 6;

/// Wall time the step may take before it stops and reports what it
/// reached.
const BUDGET: Duration = Duration::from_secs(150);

/// Seconds one mutant's tests may take.
const TIMEOUT: u64 = 60;

/// Runs the step; `Ok` also when it skips.
pub(crate) fn run(root: &Path) -> anyhow::Result<()> {
    if !super::installed() {
        println!(
            "xtask ci: mutants skipped: cargo-mutants is not installed (cargo install --locked cargo-mutants)"
        );
        return Ok(());
    }
    let Some(base) = base(root) else {
        println!("xtask ci: mutants skipped: neither origin/main nor HEAD~1 to diff against");
        return Ok(());
    };
    let diff = git(root, &["diff", &base, "--"], &crate_sources())?;
    if diff.trim().is_empty() {
        println!("xtask ci: mutants skipped: no change to the mutated crates since {base}");
        return Ok(());
    }
    let dir = root.join("target").join("mutants").join("ci");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let patch = dir.join("diff.patch");
    std::fs::write(&patch, diff).with_context(|| format!("cannot write {}", patch.display()))?;

    let packages = packages(root)?;
    let mut list = Command::new("cargo");
    list.args(["mutants", "--list", "--in-diff"]).arg(&patch);
    for package in &packages {
        list.args(["--package", package]);
    }
    let listed = list.output().context("cannot run cargo mutants --list")?;
    if !listed.status.success() {
        println!(
            "xtask ci: mutants skipped: cargo mutants --list failed: {}",
            String::from_utf8_lossy(&listed.stderr).trim()
        );
        return Ok(());
    }
    let count = String::from_utf8_lossy(&listed.stdout).lines().count();
    if let Some(reason) = skip_reason(count) {
        println!("xtask ci: mutants skipped: {reason}");
        return Ok(());
    }

    let build = super::build_dir(root, Some("ci"));
    super::seed_build_dir(root, &build);
    let mut command = super::mutants_command(&build, 1, TIMEOUT, &dir);
    command
        .args(["--baseline", "skip", "--in-diff"])
        .arg(&patch);
    for package in &packages {
        command.args(["--package", package]);
    }
    let stopped = super::run_within(command, BUDGET)?;
    if !dir.join("mutants.out").join("mutants.json").exists() {
        println!("xtask ci: mutants skipped: cargo mutants did not start (see its error above)");
        return Ok(());
    }
    let report = Report::read(&dir.join("mutants.out"));
    println!(
        "xtask ci: mutants of the change since {base}: {} of {count} tested, {} caught, {} missed, {} timeout, {} unviable{}",
        report.tested(),
        report.caught,
        report.missed.len(),
        report.timeout,
        report.unviable,
        if stopped {
            " (stopped at the budget)"
        } else {
            ""
        }
    );
    if !report.missed.is_empty() {
        bail!(
            "no test notices these changes to the code this change touched (add a test of the behaviour, or list an equivalent mutant in .cargo/mutants.toml):\n{}",
            report.missed.join("\n")
        );
    }
    Ok(())
}

/// Why the step skips `count` mutants, if it does.
fn skip_reason(count: usize) -> Option<String> {
    match count {
        0 => Some("the change has no mutants".to_string()),
        n if n > CAP => Some(format!(
            "the change has {n} mutants, more than the {CAP} CI tests (run `cargo xtask mutants --file GLOB` instead)"
        )),
        _ => None,
    }
}

/// The `src` directories of the mutated crates.
fn crate_sources() -> Vec<String> {
    DEFAULT_CRATES
        .iter()
        .map(|dir| format!("{dir}/src"))
        .collect()
}

fn packages(root: &Path) -> anyhow::Result<Vec<String>> {
    DEFAULT_CRATES
        .iter()
        .map(|dir| super::package_name(root, dir))
        .collect()
}

/// The commit to diff against: `$MUTANTS_BASE` when set (a CI job that
/// knows its base), else the merge base with origin/main, else HEAD~1.
fn base(root: &Path) -> Option<String> {
    if let Ok(base) = std::env::var("MUTANTS_BASE")
        && !base.trim().is_empty()
    {
        return Some(base.trim().to_string());
    }
    if let Ok(base) = git(root, &["merge-base", "HEAD", "origin/main"], &[]) {
        let base = base.trim().to_string();
        let head = git(root, &["rev-parse", "HEAD"], &[]).unwrap_or_default();
        if !base.is_empty() && base != head.trim() {
            return Some(base);
        }
    }
    git(root, &["rev-parse", "--verify", "--quiet", "HEAD~1"], &[])
        .ok()
        .map(|commit| commit.trim().to_string())
        .filter(|commit| !commit.is_empty())
}

fn git(root: &Path, args: &[&str], paths: &[String]) -> anyhow::Result<String> {
    let output = Command::new("git")
        .args(args)
        .args(paths)
        .current_dir(root)
        .output()
        .with_context(|| format!("cannot run git {}", args.join(" ")))?;
    if !output.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_step_runs_only_between_one_mutant_and_the_cap() {
        assert!(skip_reason(0).is_some());
        assert_eq!(skip_reason(1), None);
        assert_eq!(skip_reason(CAP), None);
        let reason = skip_reason(CAP + 1).unwrap();
        assert!(reason.contains(&format!("{} mutants", CAP + 1)), "{reason}");
    }

    #[test]
    fn only_the_mutated_crates_sources_are_diffed() {
        let sources = crate_sources();
        assert_eq!(sources.len(), DEFAULT_CRATES.len());
        assert!(sources.iter().all(|s| s.ends_with("/src")));
    }
}
