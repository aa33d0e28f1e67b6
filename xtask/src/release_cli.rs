//! The release `abridge` binary, built once for the e2e checks and the
//! benches that time whole commands. Its own module so that a bench does
//! not reach into the e2e suite for it.

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;

use anyhow::Context;
use anyhow::bail;

/// Builds the release `abridge` binary and returns its path.
pub(crate) fn build_cli(root: &Path) -> anyhow::Result<PathBuf> {
    let mut command = Command::new("cargo");
    command.args(["build", "--quiet", "--release", "-p", "abridge-cli"]);
    let status = command
        .status()
        .with_context(|| format!("cannot run {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed with {status}");
    }
    Ok(root.join("target").join("release").join("abridge"))
}
