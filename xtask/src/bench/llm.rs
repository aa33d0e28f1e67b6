//! Benchmarks for the llm area.

use super::Section;

/// Runs this area's benchmarks; each returned section becomes a table.
pub(crate) fn run() -> anyhow::Result<Vec<Section>> {
    Ok(Vec::new())
}
