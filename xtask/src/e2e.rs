//! `cargo xtask e2e`: compaction against a real llama.cpp server.

use std::path::Path;

/// Runs the end-to-end suite.
pub(crate) fn run(_root: &Path) -> anyhow::Result<()> {
    anyhow::bail!("e2e is not wired yet")
}
