use abridge::compact::check::check_invariants;
use abridge_llm::Message;

use super::*;

/// A log whose branch after seq 4 holds an appended message, a rewrite
/// and a checkpoint inside the shared part, then a checkpoint over the
/// appended message.
fn branched_log() -> Session {
    let mut session = Session::in_memory("branch");
    for message in [
        Message::user("go"),
        Message::tool_call("a", "read", json!({})),
        Message::tool_result("a", "a long file", false),
        Message::user("next"),
        Message::assistant("ok"),
        Message::user("more, and a reminder"),
    ] {
        session.append_message(message).unwrap();
    }
    let drafts = [
        Draft::rewrite(Message::tool_result("a", "[pruned]", false), 2),
        // The surface is [0, 1, 6, 3, 4, 5]: this hides 0, 1 and 6.
        Draft::replace(Message::user("summary of the start"), 0, 2, vec![0, 1, 6]),
        // The surface is [7, 3, 4, 5]: this hides 3, 4 and 5, the last of
        // which the new branch does not have.
        Draft::replace(Message::user("summary of the rest"), 1, 3, vec![3, 4, 5]),
    ];
    for draft in drafts {
        session.append(draft).unwrap();
    }
    session
}

#[test]
fn what_lies_inside_the_shared_part_is_carried_and_the_first_that_does_not_stops_it() {
    let mut session = branched_log();
    let navigation = session.navigate(Some(4)).unwrap();
    assert_eq!(navigation.abandoned, vec![5, 6, 7, 8]);
    let carried = carry_over(&mut session, &navigation.abandoned).unwrap();
    // The leaf event is 9; the rewrite and the first checkpoint are
    // written again as 10 and 11; the second checkpoint stays behind.
    assert_eq!(carried, vec![[6, 10], [7, 11]]);
    assert_eq!(session.surface().seqs(), &[11, 3, 4]);
    assert_eq!(
        session.message(11).unwrap().plain_text(),
        "summary of the start"
    );
    let report = check_invariants(&session);
    assert!(report.is_ok(), "{:?}", report.violations);
}

#[test]
fn a_branch_before_a_checkpoint_span_carries_nothing() {
    let mut session = branched_log();
    // At seq 1 the surface is [0, 1]: the rewrite's target (2) is not
    // on it, so nothing after it is carried either.
    let navigation = session.navigate(Some(1)).unwrap();
    let carried = carry_over(&mut session, &navigation.abandoned).unwrap();
    assert!(carried.is_empty(), "{carried:?}");
    assert_eq!(session.surface().seqs(), &[0, 1]);
    assert!(check_invariants(&session).is_ok());
}
