//! The idle trigger's clock: when the session was last active, and
//! whether its quiet stretch has had its idle pass.
//!
//! The Harness keeps no timer of its own (it runs on the host's executor
//! and in the host's process lifetime); a host's timer asks
//! [`Harness::tick`](crate::Harness::tick) with the time, and this clock
//! answers whether a pass is due.

use std::time::Duration;
use std::time::Instant;

use abridge_compact::Trigger;
use abridge_compact::host::lock_session;

use crate::Harness;
use crate::error::HarnessError;
use crate::pass::Pass;
use crate::pass::PassStatus;

/// Last activity and the idle pass that followed it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IdleClock {
    /// The log's length when activity was last seen.
    seen: usize,
    /// When it was seen.
    since: Instant,
    /// An idle pass ran after it (one per quiet stretch).
    ran: bool,
}

impl IdleClock {
    /// A clock whose last activity is now, on a log of `len` events.
    pub(crate) fn new(len: usize) -> Self {
        IdleClock {
            seen: len,
            since: Instant::now(),
            ran: false,
        }
    }

    /// Activity at `now`, leaving the log at `len` events.
    pub(crate) fn active(&mut self, len: usize, now: Instant) {
        *self = IdleClock {
            seen: len,
            since: now,
            ran: false,
        };
    }

    /// An idle pass ran, leaving the log at `len` events: what it wrote is
    /// not activity.
    pub(crate) fn ran(&mut self, len: usize) {
        self.seen = len;
        self.ran = true;
    }

    /// Whether a pass is due at `now` after `quiet`, the log now holding
    /// `len` events. A log that grew unseen is activity at `now`.
    pub(crate) fn due(&mut self, len: usize, now: Instant, quiet: Duration) -> bool {
        if len != self.seen {
            self.active(len, now);
            return false;
        }
        !self.ran && now.saturating_duration_since(self.since) >= quiet
    }
}

impl Harness {
    /// An idle pass now, whatever the clock says: for a host that decides
    /// itself that the user is away. Does nothing when `idle_minutes` is
    /// not set. Most hosts call [`tick`](Self::tick) instead.
    ///
    /// # Errors
    /// Only when the session cannot be written.
    pub async fn idle(&self) -> Result<Pass, HarnessError> {
        if self.settings.idle_minutes.is_none() {
            return Ok(self.not_run(Trigger::Idle));
        }
        self.prime_counts().await;
        let pass = self.maintenance.run(&self.session, Trigger::Idle).await?;
        let seen = lock_session(&self.session).len();
        self.idle_clock().ran(seen);
        Ok(pass)
    }

    /// Whether the idle trigger is due at `now`: `idle_minutes` is set,
    /// the session has had no activity for that long, and no idle pass has
    /// run since its last activity. Activity is an append or a reply
    /// through this Harness, [`note_activity`](Self::note_activity), or
    /// any growth of the log this Harness had not seen (appends made
    /// through [`session`](Self::session) or by another worker), which
    /// counts from the call that notices it.
    pub fn idle_due(&self, now: Instant) -> bool {
        let Some(minutes) = self.settings.idle_minutes else {
            return false;
        };
        let len = lock_session(&self.session).len();
        self.idle_clock()
            .due(len, now, Duration::from_secs(minutes.saturating_mul(60)))
    }

    /// What a host's timer calls, as often as it likes (every minute is
    /// plenty): an idle pass when [`idle_due`](Self::idle_due), else a
    /// pass that reports `not_needed` (or `disabled` without
    /// `idle_minutes`) and does nothing. One idle pass runs per quiet
    /// stretch, whatever it achieved.
    ///
    /// # Errors
    /// Only when the session cannot be written.
    pub async fn tick(&self, now: Instant) -> Result<Pass, HarnessError> {
        if self.settings.idle_minutes.is_none() {
            return Ok(self.not_run(Trigger::Idle));
        }
        if !self.idle_due(now) {
            return Ok(Pass::idle(
                Trigger::Idle,
                PassStatus::NotNeeded,
                self.tokens(),
                self.maintenance.goal(Trigger::Idle),
            ));
        }
        self.idle().await
    }

    /// Records activity at `now` for the idle trigger, for a host that
    /// appends through [`session`](Self::session) instead of
    /// [`append`](Self::append).
    pub fn note_activity(&self, now: Instant) {
        let len = lock_session(&self.session).len();
        self.idle_clock().active(len, now);
    }

    fn idle_clock(&self) -> std::sync::MutexGuard<'_, IdleClock> {
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUIET: Duration = Duration::from_secs(30 * 60);

    #[test]
    fn a_quiet_stretch_is_due_once_and_new_activity_starts_another() {
        let start = Instant::now();
        let mut clock = IdleClock::new(4);
        clock.active(4, start);
        assert!(!clock.due(4, start + QUIET - Duration::from_secs(1), QUIET));
        assert!(clock.due(4, start + QUIET, QUIET));
        clock.ran(6);
        assert!(
            !clock.due(6, start + QUIET * 3, QUIET),
            "one pass a stretch"
        );
        // The log grew unseen: activity as of the call that noticed it.
        let noticed = start + QUIET * 4;
        assert!(!clock.due(7, noticed, QUIET));
        assert!(!clock.due(7, noticed + QUIET / 2, QUIET));
        assert!(clock.due(7, noticed + QUIET, QUIET));
    }
}
