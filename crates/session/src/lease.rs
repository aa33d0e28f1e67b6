//! Leases: work in flight on a session that its log cannot show.
//!
//! A compaction appends `compaction/start`, runs a model for minutes, then
//! appends its end. While it runs, the start is *live* and a second
//! compaction must wait; once its owner is gone (a crash, a dropped
//! future) the same start is *stale* and must not block anything. The log
//! alone cannot tell the two apart, so the session keeps the set of ids
//! whose owners still hold a [`Lease`]. It belongs to the session, not to
//! the process: two sessions never see each other's leases, and a session
//! opened after a crash starts with none.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::PoisonError;

/// The ids held by live [`Lease`]s on one session. Clones share the set.
#[derive(Debug, Clone, Default)]
pub struct Leases {
    held: Arc<Mutex<HashSet<String>>>,
}

impl Leases {
    /// Takes a lease on `id`, held until the returned guard drops.
    pub fn take(&self, id: impl Into<String>) -> Lease {
        let id = id.into();
        self.lock().insert(id.clone());
        Lease {
            leases: self.clone(),
            id,
        }
    }

    /// True while a lease on `id` is held.
    pub fn is_held(&self, id: &str) -> bool {
        self.lock().contains(id)
    }

    /// A poisoned set is used anyway: inserting and removing an id cannot
    /// be left half-done by a panic.
    fn lock(&self) -> MutexGuard<'_, HashSet<String>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A held lease: the id is live until this is dropped.
#[derive(Debug)]
pub struct Lease {
    leases: Leases,
    id: String,
}

impl Lease {
    /// The leased id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.leases.lock().remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_held_until_dropped_and_clones_share_the_set() {
        let leases = Leases::default();
        let shared = leases.clone();
        let lease = leases.take("cmp-1");
        assert!(shared.is_held("cmp-1"));
        assert!(!shared.is_held("cmp-2"));
        drop(lease);
        assert!(!leases.is_held("cmp-1"));
        let _held = leases.take("cmp-3");
        assert!(
            !Leases::default().is_held("cmp-3"),
            "another session's set is its own"
        );
    }
}
