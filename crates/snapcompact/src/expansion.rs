//! How a snapcompact checkpoint becomes what a request sends: its frame
//! references drawn as PNG frames from the archive in its
//! `compaction/summary` record (the log keeps source text, never pixels).

use abridge_compact::host::CheckpointExpansion;
use abridge_compact::host::Destination;
use abridge_compact::host::ExpansionError;
use abridge_compact::host::SurfaceMessage;
use abridge_llm::Message;

use crate::frame_cache::FrameCache;
use crate::method::is_snapcompact_checkpoint;
use crate::record::archive_from_summary;

/// Draws snapcompact checkpoints' frames at send time; every other message
/// is left alone. Frames are drawn into a cache that lives for one
/// message, as they were when the request builder drew them itself.
#[derive(Debug, Default, Clone, Copy)]
pub struct FrameExpansion;

impl CheckpointExpansion for FrameExpansion {
    fn expand(
        &self,
        at: SurfaceMessage<'_>,
        _destination: Option<Destination<'_>>,
    ) -> Result<Option<Message>, ExpansionError> {
        if !is_snapcompact_checkpoint(at.message) {
            return Ok(None);
        }
        let summary = abridge_compact::host::summary_of_checkpoint(at.session, at.seq)
            .ok_or_else(|| ExpansionError::new("it has no compaction/summary event"))?;
        let archive = archive_from_summary(&summary.summary, &summary.details)
            .ok_or_else(|| ExpansionError::new("its snapcompact archive cannot be read back"))?;
        let mut expanded = at.message.clone();
        expanded.content = archive
            .expand(&at.message.content, &FrameCache::default())
            .map_err(|e| ExpansionError::new(e.to_string()))?;
        Ok(Some(expanded))
    }
}
