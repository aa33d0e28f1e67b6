//! Turning the surface into what a request sends: snapcompact frames are
//! drawn from their archives (the log stores source text, never pixels).

use abridge_llm::Message;
use abridge_session::Session;

use crate::error::HarnessError;

/// The surface's messages, with every snapcompact checkpoint's frame
/// references replaced by the drawn frames.
///
/// # Errors
/// [`HarnessError::Frames`] when a checkpoint has no summary event or its
/// archive cannot be read back or drawn.
pub fn expand_frames(session: &Session) -> Result<Vec<Message>, HarnessError> {
    let cache = abridge_snapcompact::FrameCache::default();
    let mut out = Vec::with_capacity(session.surface().len());
    for seq in session.surface().seqs() {
        let Some(message) = session.message(*seq) else {
            continue;
        };
        if !abridge_snapcompact::is_snapcompact_checkpoint(message) {
            out.push(message.as_ref().clone());
            continue;
        }
        let frames = |reason: String| HarnessError::Frames { seq: *seq, reason };
        let summary = abridge_compact::summary_of_checkpoint(session, *seq)
            .ok_or_else(|| frames("it has no compaction/summary event".to_string()))?;
        let archive =
            abridge_snapcompact::Archive::from_summary(&summary.summary, &summary.details)
                .ok_or_else(|| frames("its snapcompact archive cannot be read back".to_string()))?;
        let mut expanded = message.as_ref().clone();
        expanded.content = archive
            .expand(&message.content, &cache)
            .map_err(|e| frames(e.to_string()))?;
        out.push(expanded);
    }
    Ok(out)
}
