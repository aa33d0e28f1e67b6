//! How a checkpoint written by a provider's native compaction goes back
//! to that provider: as its own output items, which the call paid for,
//! instead of the text summary every other provider receives.

use abridge_compact::host::CheckpointExpansion;
use abridge_compact::host::Destination;
use abridge_compact::host::ExpansionError;
use abridge_compact::host::SurfaceMessage;
use abridge_llm::Message;
use abridge_llm::Origin;

use crate::record::replayed_checkpoint;

/// Replays native compaction output to the dialect and account that wrote
/// it (see [`native_replay`](crate::native_replay)); every other
/// destination, and a request with none, gets the checkpoint's text.
#[derive(Debug, Default, Clone, Copy)]
pub struct NativeReplay;

impl CheckpointExpansion for NativeReplay {
    fn expand(
        &self,
        at: SurfaceMessage<'_>,
        destination: Option<Destination<'_>>,
    ) -> Result<Option<Message>, ExpansionError> {
        let Some(destination) = destination else {
            return Ok(None);
        };
        if !matches!(at.message.meta.origin, Some(Origin::Checkpoint { .. })) {
            return Ok(None);
        }
        let Some(summary) = abridge_compact::host::summary_of_checkpoint(at.session, at.seq) else {
            return Ok(None);
        };
        Ok(replayed_checkpoint(
            at.message,
            &summary.details,
            destination.dialect,
            destination.account,
        ))
    }
}
