//! Counts kept beside a JSONL session, for a harness that reopens it: read
//! when the harness is built, so reopening tokenizes no message counted
//! before, and written back at cheap points (after a pass that compacted,
//! on [`Harness::save_counts`], and when the harness is dropped), never
//! once per turn.

use abridge_meter::KeptFile;

use super::Harness;
use super::HarnessBuilder;
use crate::HarnessError;
use crate::Pass;
use crate::PassStatus;

impl HarnessBuilder {
    /// Keeps each message's count in `file` (usually
    /// [`KeptFile::beside`] the session's JSONL log): counts found there
    /// are used instead of tokenizing (each checked against its message's
    /// content hash), and the counts of new messages are written back.
    /// A file that cannot be used is replaced, with a warning in the log.
    /// Nothing is kept for a cost model that keeps no counts (a count
    /// endpoint, a custom tokenizer).
    pub fn kept_counts(mut self, file: KeptFile) -> Self {
        self.kept = Some(file);
        self
    }
}

impl Harness {
    /// Writes the counts of messages counted since the last write to the
    /// file given to [`HarnessBuilder::kept_counts`]. Returns whether it
    /// wrote (false without a file or with nothing new).
    ///
    /// # Errors
    /// [`HarnessError::Counts`] when the file cannot be written; the counts
    /// stay in memory for the next try.
    pub fn save_counts(&self) -> Result<bool, HarnessError> {
        let Some(file) = &self.kept else {
            return Ok(false);
        };
        Ok(self.counter.with_meter(|meter| file.save(meter))?)
    }

    /// After `pass`: saves the counts when it compacted (a cheap point:
    /// compaction itself costs far more). A failure is a warning: the
    /// counts are a cache.
    pub(super) fn save_counts_after(&self, pass: &Pass) {
        if pass.status == PassStatus::Succeeded {
            self.save_counts_warning();
        }
    }

    fn save_counts_warning(&self) {
        if let Err(error) = self.save_counts() {
            tracing::warn!(%error, "kept counts not written");
        }
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.save_counts_warning();
    }
}
