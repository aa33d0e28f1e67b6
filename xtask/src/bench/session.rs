//! Benchmarks for the session area.

use super::Section;

/// Runs this area's benchmarks; each returned section becomes a table.
pub(crate) fn run() -> anyhow::Result<Vec<Section>> {
    Ok(Vec::new())
}

/// Hidden `bench-child` entry: measurements that need a fresh process
/// (peak memory).
pub(crate) fn child(_args: &[String]) -> anyhow::Result<()> {
    anyhow::bail!("no child measurement named")
}
