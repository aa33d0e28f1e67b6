//! Drawing a snapcompact checkpoint's frames when a request is built: the
//! log keeps only the archive's text, so the PNGs are rendered here (and
//! cached for the request). Without the `snapcompact` feature nothing can
//! draw them, and a log holding such a checkpoint gets a typed error
//! rather than a request that silently lacks its history.

use abridge_llm::Message;
use abridge_session::Seq;
use abridge_session::Session;

use crate::error::HarnessError;

/// The frames drawn so far for one request.
#[derive(Default)]
pub(super) struct Frames {
    #[cfg(feature = "snapcompact")]
    cache: abridge_snapcompact::FrameCache,
}

impl Frames {
    /// The checkpoint at `seq` with its frames drawn; `None` when it is not
    /// a snapcompact checkpoint (the message goes out as it is).
    #[cfg(feature = "snapcompact")]
    pub(super) fn expand(
        &self,
        session: &Session,
        seq: Seq,
        message: &Message,
    ) -> Result<Option<Message>, HarnessError> {
        if !abridge_snapcompact::is_snapcompact_checkpoint(message) {
            return Ok(None);
        }
        let frames = |reason: String| HarnessError::Frames { seq, reason };
        let summary = abridge_compact::summary_of_checkpoint(session, seq)
            .ok_or_else(|| frames("it has no compaction/summary event".to_string()))?;
        let archive = abridge_snapcompact::archive_from_summary(&summary.summary, &summary.details)
            .ok_or_else(|| frames("its snapcompact archive cannot be read back".to_string()))?;
        let mut expanded = message.clone();
        expanded.content = archive
            .expand(&message.content, &self.cache)
            .map_err(|e| frames(e.to_string()))?;
        Ok(Some(expanded))
    }

    /// Without the renderer a snapcompact checkpoint cannot be sent.
    #[cfg(not(feature = "snapcompact"))]
    pub(super) fn expand(
        &self,
        session: &Session,
        seq: Seq,
        message: &Message,
    ) -> Result<Option<Message>, HarnessError> {
        let _ = session;
        let written_by_snapcompact = matches!(
            &message.meta.origin,
            Some(abridge_llm::Origin::Checkpoint { method, .. }) if method == SNAPCOMPACT
        );
        if written_by_snapcompact {
            return Err(HarnessError::Frames {
                seq,
                reason: "this checkpoint is snapcompact frames, and abridge was built \
                         without its `snapcompact` feature"
                    .to_string(),
            });
        }
        Ok(None)
    }
}

/// The name snapcompact writes its checkpoints under.
#[cfg(not(feature = "snapcompact"))]
const SNAPCOMPACT: &str = "snapcompact";
