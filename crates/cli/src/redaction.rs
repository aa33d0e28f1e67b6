//! What the commands that write what a session holds (`report`, `render`,
//! `branch --summary`) redact: the settings beside the session (`redact`,
//! `redact_patterns`), unless `--no-redact` asks for the logged text.

use std::path::Path;
use std::sync::Arc;

use abridge::Settings;
use abridge_compact::host::Redactor;

/// The `--no-redact` flag of commands that write what a session holds.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct RedactArgs {
    /// Write secrets (API keys, tokens, private keys, passwords in
    /// addresses) as the log holds them instead of `[redacted: KIND]`.
    #[arg(long)]
    pub(crate) no_redact: bool,
}

impl RedactArgs {
    /// The redactor for `session`: `None` with `--no-redact` or when the
    /// settings beside it turn `redact` off.
    pub(crate) fn redactor(&self, session: &Path) -> anyhow::Result<Option<Arc<Redactor>>> {
        if self.no_redact {
            return Ok(None);
        }
        let settings =
            Settings::beside_using(session, crate::registry::registry())?.unwrap_or_default();
        Ok(settings.redactor()?)
    }
}
