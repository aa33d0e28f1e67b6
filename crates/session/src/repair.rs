//! Repairs after a crash. Resume repair: a session whose model asked for
//! tools and then stopped (a crash, a kill) gets results saying the
//! outcome is unknown, so the next request is well-formed. Torn-tail
//! repair: the complete events of a batch a crash cut short, once set
//! aside (see [`JsonlStore::set_aside_torn`](crate::JsonlStore::set_aside_torn)),
//! can be appended again, checked as any append is.

use std::collections::HashSet;

use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Origin;
use abridge_llm::Role;

use crate::error::Place;
use crate::error::SessionError;
use crate::event::Draft;
use crate::event::Seq;
use crate::session::Session;
use crate::store::SetAside;

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

/// An error result saying `text` for every dangling call, in call order,
/// ready to append. Whoever appends something other than a result after
/// an open call (a resumed session, a branch summary) answers the calls
/// with these first, so the call is never followed by anything else.
pub fn dangling_call_results(session: &Session, text: &str) -> Vec<Draft> {
    dangling_tool_calls(session)
        .into_iter()
        .map(|(id, name)| {
            Draft::message(
                Message::tool_result(id.clone(), text, true).with_meta(Meta {
                    origin: Some(Origin::Tool { call_id: id, name }),
                    ..Meta::default()
                }),
            )
        })
        .collect()
}

/// Appends an error result with [`UNKNOWN_OUTCOME`] for every dangling call,
/// in one batch. Returns the new seqs (empty when nothing dangles).
///
/// # Errors
/// The store's.
pub fn repair_dangling_tool_calls(session: &mut Session) -> Result<Vec<Seq>, SessionError> {
    let drafts = dangling_call_results(session, UNKNOWN_OUTCOME);
    if drafts.is_empty() {
        return Ok(Vec::new());
    }
    tracing::info!(count = drafts.len(), "answered dangling tool calls");
    session.append_batch(drafts)
}

/// Appends the complete events of a torn batch that
/// [`JsonlStore::set_aside_torn`](crate::JsonlStore::set_aside_torn) set
/// aside, in one batch, with their parents and times, checked by the
/// session's rules as any append is. Each must take the seq it had (the
/// log's next ones), so what refers to it still does. Returns their seqs
/// (empty when there were none). The sidecar keeps its copy either way.
///
/// # Errors
/// [`SessionError::Invalid`] naming the event's line in the torn batch
/// when its seq does not follow the log, or when the session refuses it
/// (nothing is appended then); the store's.
pub fn keep_torn_events(
    session: &mut Session,
    set_aside: &SetAside,
) -> Result<Vec<Seq>, SessionError> {
    let first = session.len() as Seq;
    let line = |index: usize| Place::Line {
        location: set_aside.sidecar.display().to_string(),
        line: index as u64 + 1,
    };
    let mut drafts = Vec::with_capacity(set_aside.complete.len());
    for (index, event) in set_aside.complete.iter().enumerate() {
        let expected = first + index as Seq;
        if event.seq != expected {
            return Err(SessionError::Invalid {
                place: line(index),
                field: "seq",
                reason: format!(
                    "the event is seq {} but would be appended as seq {expected}: the torn batch does not follow the log",
                    event.seq
                ),
            });
        }
        drafts.push(Draft {
            parent: Some(event.parent),
            time: Some(event.time.clone()),
            body: event.body.clone(),
        });
    }
    if drafts.is_empty() {
        return Ok(Vec::new());
    }
    session.append_batch(drafts).map_err(|error| match error {
        SessionError::Invalid {
            place: Place::Draft { index },
            field,
            reason,
        } => SessionError::Invalid {
            place: line(index),
            field,
            reason,
        },
        other => other,
    })
}
