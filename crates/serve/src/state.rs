//! What every handler reaches: the tokens, the open sessions, the running
//! passes and the shutdown flag.

use std::sync::Arc;

use abridge::MethodSources;
use abridge_compact::Redactor;
use tokio::sync::watch;

use crate::auth::Tokens;
use crate::sessions::Registry;
use crate::tasks::Compactions;

/// What every handler reaches.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) tokens: Tokens,
    pub(crate) registry: Registry,
    pub(crate) tasks: Compactions,
    pub(crate) sources: MethodSources,
    /// What `/v1/summarize` passes a prompt through before it goes to the
    /// summarizer model: the service's settings' (`redact`,
    /// `redact_patterns`), as its sessions' requests are.
    pub(crate) redactor: Option<Arc<Redactor>>,
    /// Flips to true when shutdown begins; event streams end on it.
    pub(crate) closing: watch::Sender<bool>,
}

/// The state handlers get.
pub(crate) type AppState = Arc<Shared>;
