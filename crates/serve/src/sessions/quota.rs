//! The tenants' byte quotas: what each session's log holds and what all
//! of a tenant's sessions hold together.
//!
//! A session's bytes are read from its store when it is opened (and
//! again when it catches up with another worker), then grow with every
//! batch appended here. A tenant's total is read from the store on first
//! use and again once it is older than [`RESEED`], so the appends of other
//! workers on a shared store are counted within that time; in between it
//! grows with this worker's appends. An append is checked against both
//! limits before anything is written, and refused whole.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::PoisonError;
use std::time::Duration;
use std::time::Instant;

use crate::auth::Tenant;
use crate::error::ApiError;
use crate::error::Quota;
use crate::limits::ServiceLimits;
use crate::stores::SessionStores;

/// How long a tenant's total read from the store is trusted.
const RESEED: Duration = Duration::from_secs(60);

/// One tenant's bytes, as last read from the store plus what was booked
/// since.
#[derive(Debug, Clone, Copy)]
struct Account {
    total: u64,
    read: Instant,
}

/// Every tenant's bytes.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    tenants: Mutex<HashMap<Tenant, Account>>,
}

impl Ledger {
    fn tenants(&self) -> MutexGuard<'_, HashMap<Tenant, Account>> {
        self.tenants.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Books `add` bytes for a session of `tenant` that holds
    /// `session_bytes` now, when both quotas allow it.
    ///
    /// # Errors
    /// [`ApiError::Quota`] naming the quota that would be passed (nothing
    /// is booked); the store's failure to say what the tenant holds.
    pub(crate) fn book(
        &self,
        stores: &dyn SessionStores,
        limits: &ServiceLimits,
        tenant: &Tenant,
        session_bytes: u64,
        add: u64,
    ) -> Result<(), ApiError> {
        let used = session_bytes.saturating_add(add);
        if used > limits.session_bytes {
            return Err(ApiError::Quota {
                quota: Quota::SessionBytes,
                limit: limits.session_bytes,
                used,
            });
        }
        let fresh = self
            .tenants()
            .get(tenant)
            .is_some_and(|account| account.read.elapsed() < RESEED);
        if !fresh {
            // Read without the lock: a store call may take a while.
            let total = stores
                .usage(tenant)
                .map_err(|e| ApiError::Internal(e.to_string()))?;
            self.tenants().insert(
                tenant.clone(),
                Account {
                    total,
                    read: Instant::now(),
                },
            );
        }
        let mut tenants = self.tenants();
        let account = tenants.entry(tenant.clone()).or_insert(Account {
            total: 0,
            read: Instant::now(),
        });
        let used = account.total.saturating_add(add);
        if used > limits.tenant_bytes {
            return Err(ApiError::Quota {
                quota: Quota::TenantBytes,
                limit: limits.tenant_bytes,
                used,
            });
        }
        account.total = used;
        Ok(())
    }

    /// Gives back bytes booked for a write that did not happen.
    pub(crate) fn unbook(&self, tenant: &Tenant, bytes: u64) {
        if let Some(account) = self.tenants().get_mut(tenant) {
            account.total = account.total.saturating_sub(bytes);
        }
    }
}
