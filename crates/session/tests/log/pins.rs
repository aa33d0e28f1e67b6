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

/// Issue 32: an unpin takes a pin back without touching the pin event;
/// it takes back what the pin kept (every earlier pin of the same
/// message), a later pin restores it, and an unpin naming no live pin is
/// a fault that changes nothing.
#[test]
fn an_unpin_takes_back_what_its_pin_kept_and_a_bad_one_is_a_fault() {
    use abridge_session::TYPE_UNPIN;
    use abridge_session::Unpin;

    let mut session = Session::in_memory("unpins");
    let rule = session.append_message(Message::user("never push")).unwrap();
    let first = session.append(Pin::message(rule, "user").draft()).unwrap();
    let again = session.append(Pin::message(rule, "user").draft()).unwrap();
    let brief = session
        .append(Pin::text("be brief", "user").draft())
        .unwrap();
    let texts = |s: &Session| -> Vec<String> { s.pins().into_iter().map(|p| p.text).collect() };
    assert_eq!(texts(&session), vec!["never push", "be brief"]);

    assert!(session.check_unpin(&Unpin::new(again)).is_ok());
    let events = session.len();
    session.append(Unpin::new(again).draft()).unwrap();
    assert_eq!(texts(&session), vec!["be brief"], "both pins of it go");
    assert!(
        session.event(first).is_some(),
        "the pin event stays in the log"
    );
    assert_eq!(session.len(), events + 1);
    assert_eq!(
        session.check_unpin(&Unpin::new(first)),
        Err(format!("names pin {first}, which is already unpinned"))
    );
    assert_eq!(
        session.check_unpin(&Unpin::new(rule)),
        Err(format!(
            "names seq {rule}, which is not a pin on the active path"
        ))
    );
    session.append(Unpin::new(brief).draft()).unwrap();
    assert!(session.pins().is_empty());
    assert!(session.pinned_message().is_none(), "nothing is sent");
    assert!(session.pin_faults().is_empty());

    let back = session.append(Pin::message(rule, "user").draft()).unwrap();
    assert_eq!(texts(&session), vec!["never push"]);
    assert_eq!(session.pins()[0].at, back);

    // Unpins that name nothing live: faults, naming the event and the pin.
    session.append(Unpin::new(rule).draft()).unwrap();
    session.append(Unpin::new(brief).draft()).unwrap();
    session
        .append(Draft::log(TYPE_UNPIN, serde_json::json!({"seq": back})))
        .unwrap();
    let faults = session.pin_faults();
    assert_eq!(faults.len(), 3, "{faults:#?}");
    assert_eq!(faults[0].unpin_of, Some(rule));
    assert_eq!(faults[1].unpin_of, Some(brief));
    assert_eq!(faults[2].unpin_of, None);
    assert!(faults[2].reason.starts_with("not an unpin's data"));
    assert_eq!(texts(&session), vec!["never push"], "and change nothing");
}
