//! Pins as the log holds them: on the branch they were written on, once
//! per message or text, and a pin that cannot be honoured named as a
//! fault rather than sent.

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_session::Draft;
use abridge_session::Pin;
use abridge_session::Session;
use abridge_session::TYPE_PIN;

#[test]
fn a_pin_lives_on_its_branch_and_counts_once() {
    let mut session = Session::in_memory("pins");
    let rule = session.append_message(Message::user("never push")).unwrap();
    let fork = session.append_message(Message::assistant("ok")).unwrap();
    session.append(Pin::message(rule, "user").draft()).unwrap();
    session.append(Pin::message(rule, "user").draft()).unwrap();
    session
        .append(Pin::text("be brief", "user").draft())
        .unwrap();
    session
        .append(Pin::text("be brief", "user").draft())
        .unwrap();
    let texts: Vec<String> = session.pins().into_iter().map(|p| p.text).collect();
    assert_eq!(texts, vec!["never push", "be brief"]);
    // Only the text pin is hidden from the surface; the message is there.
    let pinned = session.pinned_message().unwrap();
    assert_eq!(pinned.content.len(), 2, "the header and one text");
    assert_eq!(pinned.content[1], Block::text("be brief"));

    session.navigate(Some(fork)).unwrap();
    assert!(
        session.pins().is_empty(),
        "the pins were on the other branch"
    );
    assert!(session.pinned_message().is_none());
}

#[test]
fn pins_that_cannot_be_honoured_are_faults_and_checked_before_writing() {
    let mut session = Session::in_memory("faults");
    let reply = session.append_message(Message::assistant("")).unwrap();
    for data in [
        serde_json::json!({"origin": "user"}),
        serde_json::json!({"seq": reply, "text": "x", "origin": "user"}),
        serde_json::json!({"seq": 99, "origin": "user"}),
        serde_json::json!({"seq": reply, "origin": "user"}),
        serde_json::json!({"text": "x", "origin": "user", "block": 0, "seq": reply}),
        serde_json::json!("not an object"),
    ] {
        session.append(Draft::log(TYPE_PIN, data)).unwrap();
    }
    let faults: Vec<String> = session
        .pin_faults()
        .into_iter()
        .map(|f| format!("{}: {}", f.at, f.reason))
        .collect();
    assert_eq!(faults.len(), 6, "{faults:#?}");
    assert!(
        faults[0].ends_with("names neither a seq nor a text"),
        "{faults:#?}"
    );
    assert!(
        faults[2].ends_with("seq 99 is not an earlier message"),
        "{faults:#?}"
    );
    assert!(faults[3].ends_with("pins no text"), "{faults:#?}");
    assert!(session.pins().is_empty());
    assert!(session.check_pin(&Pin::message(99, "user")).is_err());
    assert!(session.check_pin(&Pin::text(" ", "user")).is_err());
    assert!(session.check_pin(&Pin::text("ok", "user")).is_ok());
}
