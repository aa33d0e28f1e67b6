//! The session's door to its store's cross-process compaction guard, for
//! the compaction transaction (which sees the session, not its store).

use super::Session;
use crate::error::StoreError;
use crate::store::CompactionHold;

impl Session {
    /// Takes the store's cross-process hold on compaction `compaction_id`
    /// (see [`SessionStore::hold_compaction`](crate::SessionStore::hold_compaction)):
    /// `None` for a store with one writer, where the session's
    /// [`leases`](Session::leases) suffice.
    ///
    /// # Errors
    /// [`StoreError::Held`] while another process compacts this session;
    /// the store's failures.
    pub fn hold_compaction(
        &mut self,
        compaction_id: &str,
    ) -> Result<Option<Box<dyn CompactionHold>>, StoreError> {
        self.store.hold_compaction(compaction_id)
    }

    /// True when a live hold of some process covers compaction
    /// `compaction_id` (see
    /// [`SessionStore::compaction_held`](crate::SessionStore::compaction_held)):
    /// its start is in flight elsewhere, not stale.
    ///
    /// # Errors
    /// The store's failures.
    pub fn compaction_held(&mut self, compaction_id: &str) -> Result<bool, StoreError> {
        self.store.compaction_held(compaction_id)
    }
}
