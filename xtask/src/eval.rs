//! `cargo xtask eval`: legibility and density of snapcompact frames.

use crate::bench::Section;

/// Runs the evaluation; each section becomes a table.
pub(crate) fn run() -> anyhow::Result<Vec<Section>> {
    anyhow::bail!("the frame evaluation is not wired yet")
}
