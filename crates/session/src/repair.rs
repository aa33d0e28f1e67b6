//! Resume repair: a session whose model asked for tools and then stopped
//! (a crash, a kill) gets results saying the outcome is unknown, so the
//! next request is well-formed.

use std::collections::HashSet;

use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Origin;
use abridge_llm::Role;

use crate::error::SessionError;
use crate::event::Draft;
use crate::event::Seq;
use crate::session::Session;

/// The text of a result added for a call whose outcome was never recorded.
/// Providers reject a call without a result; this says plainly that the
/// tool may or may not have run, so the model checks before repeating it.
pub const UNKNOWN_OUTCOME: &str = "[abridge] This tool call has no recorded result: the session stopped before it was written. The tool may or may not have run; check its effects before repeating it.";

/// Tool calls at the end of the surface that no result answers:
/// `(call id, tool name)` in call order. Only the trailing assistant turn
/// is considered, because results must directly follow their call.
pub fn dangling_tool_calls(session: &Session) -> Vec<(String, String)> {
    let messages = session.surface_messages();
    let Some(last_assistant) = messages.iter().rposition(|m| m.role == Role::Assistant) else {
        return Vec::new();
    };
    let answered: HashSet<&str> = messages[last_assistant + 1..]
        .iter()
        .filter_map(|m| m.tool_result_block().map(|(id, _, _)| id))
        .collect();
    if messages[last_assistant + 1..]
        .iter()
        .any(|m| m.role != Role::Tool)
    {
        // Someone spoke after the tools: the turn moved on, nothing trails.
        return Vec::new();
    }
    messages[last_assistant]
        .tool_calls()
        .filter(|(id, _, _)| !answered.contains(id))
        .map(|(id, name, _)| (id.to_string(), name.to_string()))
        .collect()
}

/// Appends an error result with [`UNKNOWN_OUTCOME`] for every dangling call,
/// in one batch. Returns the new seqs (empty when nothing dangles).
///
/// # Errors
/// The store's.
pub fn repair_dangling_tool_calls(session: &mut Session) -> Result<Vec<Seq>, SessionError> {
    let drafts: Vec<Draft> = dangling_tool_calls(session)
        .into_iter()
        .map(|(id, name)| {
            Draft::message(
                Message::tool_result(id.clone(), UNKNOWN_OUTCOME, true).with_meta(Meta {
                    origin: Some(Origin::Tool { call_id: id, name }),
                    ..Meta::default()
                }),
            )
        })
        .collect();
    if drafts.is_empty() {
        return Ok(Vec::new());
    }
    tracing::info!(count = drafts.len(), "answered dangling tool calls");
    session.append_batch(drafts)
}
