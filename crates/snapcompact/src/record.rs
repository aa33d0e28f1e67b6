//! What a snapcompact checkpoint records: its archive without the text,
//! so a request builder can render the same frames again.
//!
//! The archive's text is the checkpoint's summary ([`Archive::full_text`]),
//! so the log holds it once; the record keeps the archive's plan, the
//! lengths of its three parts and its id, and [`archive_from_summary`]
//! joins them again.

use abridge_compact::DetailSection;
use abridge_compact::Details;
use serde::Deserialize;
use serde::Serialize;

use crate::archive::Archive;

/// The key of the archive inside a checkpoint's details.
pub(crate) const DETAILS_KEY: &str = "snapcompact";

/// A snapcompact checkpoint's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArchiveRecord {
    /// The archive with empty text parts.
    pub plan: Archive,
    /// Characters in the head, middle and tail, in the summary's order.
    pub lengths: [usize; 3],
    /// The full archive's id, to check the join.
    pub id: String,
    /// What the frames cost when the checkpoint was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<FrameStats>,
}

/// Figures of the frames a checkpoint was made of, for reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameStats {
    /// Frames printed.
    pub frames: usize,
    /// What the frames cost, as billed for the target model.
    pub frame_tokens: u64,
    /// What the hidden text cost.
    pub hidden_tokens: u64,
    /// The frames' size as base64 in a request.
    pub base64_bytes: u64,
    /// What limited the number of frames.
    pub limited_by: String,
}

impl DetailSection for ArchiveRecord {
    const KEY: &'static str = DETAILS_KEY;
    const VERSION: u32 = 1;
}

impl ArchiveRecord {
    /// The record of `archive`, without figures.
    pub fn of(archive: &Archive) -> Self {
        let lengths = [&archive.head, &archive.middle, &archive.tail].map(|t| t.chars().count());
        let plan = Archive {
            head: String::new(),
            middle: String::new(),
            tail: String::new(),
            ..archive.clone()
        };
        ArchiveRecord {
            plan,
            lengths,
            id: archive.id(),
            stats: None,
        }
    }

    /// The archive again, its text taken from `summary`. `None` when the
    /// lengths or the id do not match the text.
    pub fn restore(self, summary: &str) -> Option<Archive> {
        let mut archive = self.plan;
        let mut chars = summary.chars();
        let mut take = |n: usize| -> Option<String> {
            let text: String = chars.by_ref().take(n).collect();
            (text.chars().count() == n).then_some(text)
        };
        archive.head = take(self.lengths[0])?;
        take(1)?;
        archive.middle = take(self.lengths[1])?;
        take(1)?;
        archive.tail = take(self.lengths[2])?;
        if chars.next().is_some() {
            return None;
        }
        (self.id == archive.id()).then_some(archive)
    }
}

/// The archive of a snapcompact checkpoint, from its summary text and its
/// details (both in the `compaction/summary` event). `None` when the
/// details hold no archive, or it does not read back or match the text.
pub fn archive_from_summary(summary: &str, details: &Details) -> Option<Archive> {
    match details.get::<ArchiveRecord>() {
        Ok(record) => record?.restore(summary),
        Err(error) => {
            tracing::warn!(%error, "snapcompact archive record unreadable");
            None
        }
    }
}
