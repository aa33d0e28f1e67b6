//! What every handler reaches: the tokens, the open sessions, the running
//! passes, the limits and the shutdown flag.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::PoisonError;

use abridge::MethodSources;
use abridge_compact::host::Redactor;
use tokio::sync::watch;

use crate::auth::Tenant;
use crate::auth::Tokens;
use crate::error::ApiError;
use crate::heavy::HeavyReads;
use crate::limits::ServiceLimits;
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
    /// What one client or tenant may take.
    pub(crate) limits: Arc<ServiceLimits>,
    /// Turns for heavy reads.
    pub(crate) heavy: HeavyReads,
    /// Event streams open per tenant.
    pub(crate) streams: Streams,
}

/// The state handlers get.
pub(crate) type AppState = Arc<Shared>;

/// How many event streams each tenant has open.
#[derive(Debug, Default)]
pub(crate) struct Streams {
    open: Arc<Mutex<HashMap<Tenant, usize>>>,
}

/// One open event stream; counted until dropped (when the stream ends or
/// its client goes away).
#[derive(Debug)]
pub(crate) struct StreamSlot {
    open: Arc<Mutex<HashMap<Tenant, usize>>>,
    tenant: Tenant,
}

impl Streams {
    /// A slot for one more stream of `tenant`, when it has fewer than
    /// `limit` open.
    ///
    /// # Errors
    /// [`ApiError::TooMany`] at the limit.
    pub(crate) fn open(&self, tenant: &Tenant, limit: usize) -> Result<StreamSlot, ApiError> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(tenant.clone()).or_insert(0);
        if *count >= limit {
            return Err(ApiError::TooMany {
                what: "event streams",
                limit,
            });
        }
        *count += 1;
        Ok(StreamSlot {
            open: Arc::clone(&self.open),
            tenant: tenant.clone(),
        })
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.tenant) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.tenant);
            }
        }
    }
}
