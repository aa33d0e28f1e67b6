//! The bundled real sessions (assets/sessions, each with its provenance
//! in that folder's README), by name.

use std::path::PathBuf;

/// A pi session: long, with compactions and branch summaries.
pub const PI: &str = "pi-mono__large-session.jsonl";
/// A Claude Code session with sub-agents and injected reminders.
pub const CLAUDE: &str = "claude-code__spotter__4d5611e5.jsonl";
/// A Codex rollout with encrypted reasoning and usage reports.
pub const CODEX: &str = "codex__localpush__rollout-2026-02-23T12-54-34-redacted.jsonl";
/// A SWE-agent trajectory with function calling.
pub const SWE: &str = "swe-agent__marshmallow-1867__function_calling_replace_from_source.traj";
/// Every bundled sample.
pub const ALL: [&str; 4] = [PI, CLAUDE, CODEX, SWE];

/// The folder of bundled samples.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../assets/sessions")
}

/// The path of the bundled sample `name` (one of [`ALL`]). Panics naming
/// the file when it is missing, so a bad name fails the test at once.
pub fn sample(name: &str) -> PathBuf {
    let path = dir().join(name);
    assert!(
        path.is_file(),
        "no bundled sample {name:?} in {}",
        dir().display()
    );
    path
}
