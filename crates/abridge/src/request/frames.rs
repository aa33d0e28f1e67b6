//! What stands in for snapcompact's frame drawing when abridge is built
//! without its `snapcompact` feature. The log keeps only the archive's
//! text, so nothing here can draw the frames; a log that already holds
//! such a checkpoint gets a typed error from `request()` rather than a
//! request that silently lacks that history.

use abridge_compact::host::CheckpointExpansion;
use abridge_compact::host::Destination;
use abridge_compact::host::ExpansionError;
use abridge_compact::host::SurfaceMessage;
use abridge_llm::Message;

/// The name snapcompact writes its checkpoints under.
const SNAPCOMPACT: &str = "snapcompact";

/// Refuses snapcompact checkpoints; answers `None` for everything else.
#[derive(Debug, Default)]
pub(crate) struct NoFrameRenderer;

impl CheckpointExpansion for NoFrameRenderer {
    fn expand(
        &self,
        at: SurfaceMessage<'_>,
        _destination: Option<Destination<'_>>,
    ) -> Result<Option<Message>, ExpansionError> {
        let written_by_snapcompact = matches!(
            &at.message.meta.origin,
            Some(abridge_llm::Origin::Checkpoint { method, .. }) if method == SNAPCOMPACT
        );
        if written_by_snapcompact {
            return Err(ExpansionError::new(
                "this checkpoint is snapcompact frames, and abridge was built \
                 without its `snapcompact` feature",
            ));
        }
        Ok(None)
    }
}
