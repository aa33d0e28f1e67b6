//! Resume repair: tool calls left without results get an error result
//! saying the outcome is unknown; nothing is added when all are answered.

use abridge_llm::Message;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_session::FsyncPolicy;
use abridge_session::Session;
use abridge_session::UNKNOWN_OUTCOME;
use abridge_session::dangling_tool_calls;
use abridge_session::repair_dangling_tool_calls;

use crate::support;

fn ids(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| (*s).to_string()).collect()
}

#[test]
fn dangling_calls_at_the_tail_get_unknown_outcome_results() {
    let (_dir, path) = support::temp_session();
    let mut session = support::create(&path);
    session.append_message(Message::user("go")).unwrap();
    session
        .append_message(support::parallel_calls(
            "three reads",
            &ids(&["a", "b", "c"]),
        ))
        .unwrap();
    session
        .append_message(Message::tool_result("b", "done", false))
        .unwrap();
    drop(session);

    // The process died here; the next one resumes.
    let (mut session, _) = Session::open(support::jsonl(&path, FsyncPolicy::Never)).unwrap();
    assert_eq!(
        dangling_tool_calls(&session),
        vec![
            ("a".to_string(), "read".to_string()),
            ("c".to_string(), "read".to_string())
        ]
    );
    let added = repair_dangling_tool_calls(&mut session).unwrap();
    assert_eq!(added, vec![3, 4]);
    for (seq, id) in added.iter().zip(["a", "c"]) {
        let message = session.message(*seq).unwrap();
        assert_eq!(message.role, Role::Tool);
        let (call_id, content, is_error) = message.tool_result_block().unwrap();
        assert_eq!(call_id, id);
        assert!(is_error);
        assert_eq!(content[0].as_text(), Some(UNKNOWN_OUTCOME));
        assert_eq!(
            message.meta.origin,
            Some(Origin::Tool {
                call_id: id.to_string(),
                name: "read".into()
            })
        );
    }
    assert!(dangling_tool_calls(&session).is_empty());
    drop(session);

    // Repair is durable and idempotent.
    let (mut session, _) = Session::open(support::jsonl(&path, FsyncPolicy::Never)).unwrap();
    assert_eq!(session.len(), 5);
    let before = support::file_hash(&path);
    assert!(repair_dangling_tool_calls(&mut session).unwrap().is_empty());
    assert_eq!(session.len(), 5);
    assert_eq!(support::file_hash(&path), before);
}

#[test]
fn nothing_is_added_when_every_call_is_answered() {
    let mut session = Session::in_memory("r");
    session.append_message(Message::user("go")).unwrap();
    session
        .append_message(support::parallel_calls("", &ids(&["a", "b"])))
        .unwrap();
    session
        .append_message(Message::tool_result("b", "1", false))
        .unwrap();
    session
        .append_message(Message::tool_result("a", "2", true))
        .unwrap();
    assert!(dangling_tool_calls(&session).is_empty());
    assert!(repair_dangling_tool_calls(&mut session).unwrap().is_empty());
    assert_eq!(session.len(), 4);
}

#[test]
fn nothing_is_added_when_there_are_no_calls() {
    let mut session = Session::in_memory("r");
    assert!(repair_dangling_tool_calls(&mut session).unwrap().is_empty());
    session.append_message(Message::user("hi")).unwrap();
    session.append_message(Message::assistant("hello")).unwrap();
    assert!(repair_dangling_tool_calls(&mut session).unwrap().is_empty());
    assert_eq!(session.len(), 2);
}

/// Only what the model will see counts: calls on a branch left behind, or
/// hidden by a checkpoint, do not dangle.
#[test]
fn only_the_active_surface_is_repaired() {
    let mut session = Session::in_memory("r");
    session.append_message(Message::user("go")).unwrap();
    let call = session
        .append_message(support::parallel_calls("", &ids(&["x"])))
        .unwrap();
    assert_eq!(dangling_tool_calls(&session).len(), 1);
    // Back to the user message: the call is on the abandoned branch.
    session.navigate(Some(0)).unwrap();
    assert!(dangling_tool_calls(&session).is_empty());
    // Back to the call: it dangles again.
    session.navigate(Some(call)).unwrap();
    assert_eq!(dangling_tool_calls(&session).len(), 1);
    let added = repair_dangling_tool_calls(&mut session).unwrap();
    assert_eq!(added.len(), 1);
    assert_eq!(session.surface().seqs(), &[0, call, added[0]]);
}

#[test]
fn a_turn_that_moved_on_leaves_old_calls_alone() {
    let mut session = Session::in_memory("r");
    session
        .append_message(support::parallel_calls("", &ids(&["old"])))
        .unwrap();
    session.append_message(Message::user("never mind")).unwrap();
    assert!(dangling_tool_calls(&session).is_empty());
}
