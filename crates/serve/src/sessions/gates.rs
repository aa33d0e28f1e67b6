//! One gate per session while it changes hands: held while the session is
//! created, opened from its store or closed, so two requests never open
//! one session twice and a session is never reopened before its closing
//! let go of the store (a JSONL file's writer lock).
//!
//! Only keys in transition are in the set: a gate is gone once released,
//! so ids looked up and never opened (a 404) leave nothing behind.

use std::collections::HashSet;
use std::sync::Condvar;
use std::sync::Mutex;
use std::sync::MutexGuard;
use std::sync::PoisonError;

use super::Key;

/// The sessions in transition.
#[derive(Debug, Default)]
pub(crate) struct Gates {
    busy: Mutex<HashSet<Key>>,
    freed: Condvar,
}

/// A held gate; released when dropped.
#[derive(Debug)]
pub(crate) struct Gate<'a> {
    gates: &'a Gates,
    key: Key,
}

impl Gates {
    fn busy(&self) -> MutexGuard<'_, HashSet<Key>> {
        self.busy.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds the gate of `key`, waiting while another holds it. Blocks
    /// its thread: call it off the async workers.
    pub(crate) fn hold(&self, key: &Key) -> Gate<'_> {
        let mut busy = self.busy();
        while busy.contains(key) {
            busy = self
                .freed
                .wait(busy)
                .unwrap_or_else(PoisonError::into_inner);
        }
        busy.insert(key.clone());
        Gate {
            gates: self,
            key: key.clone(),
        }
    }

    /// Holds the gate of `key` if nobody does.
    pub(crate) fn try_hold(&self, key: &Key) -> Option<Gate<'_>> {
        let mut busy = self.busy();
        if !busy.insert(key.clone()) {
            return None;
        }
        Some(Gate {
            gates: self,
            key: key.clone(),
        })
    }

    /// How many gates are held (what the set holds).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.busy().len()
    }
}

impl Drop for Gate<'_> {
    fn drop(&mut self) {
        self.gates.busy().remove(&self.key);
        self.gates.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::auth::Tenant;

    fn key(id: &str) -> Key {
        (Tenant::new("t").expect("tenant"), id.to_string())
    }

    #[test]
    fn a_gate_is_exclusive_and_gone_once_released() {
        let gates = Gates::default();
        let held = gates.hold(&key("a"));
        assert!(gates.try_hold(&key("a")).is_none());
        let other = gates.try_hold(&key("b")).expect("another key is free");
        assert_eq!(gates.len(), 2);
        drop((held, other));
        assert_eq!(gates.len(), 0);
    }

    #[test]
    fn a_waiter_gets_the_gate_when_it_is_released() {
        let gates = Arc::new(Gates::default());
        let held = gates.hold(&key("a"));
        let waiter = std::thread::spawn({
            let gates = Arc::clone(&gates);
            move || {
                let _gate = gates.hold(&key("a"));
            }
        });
        drop(held);
        waiter.join().expect("the waiter got the gate");
        assert_eq!(gates.len(), 0);
    }
}
