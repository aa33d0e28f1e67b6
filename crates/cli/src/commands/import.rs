//! `abridge import`: another agent's session file to an abridge log.

use std::path::PathBuf;

/// Arguments of `abridge import`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The session file to convert.
    file: PathBuf,
    /// Where to write the abridge log (default: FILE with `.abridge.jsonl`).
    #[arg(short, long)]
    out: Option<PathBuf>,
    /// The source format, when detection guesses wrong
    /// (pi, claude-code, codex, swe-agent).
    #[arg(long)]
    format: Option<String>,
    /// Print the import report as JSON.
    #[arg(long)]
    json: bool,
}

pub(crate) fn run(_args: &Args) -> anyhow::Result<()> {
    anyhow::bail!("import is being wired")
}
