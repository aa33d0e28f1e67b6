//! `Harness::append` and `record` refuse what `abridge check` would refuse:
//! a tool result whose call is not on the surface, a reused call id, a
//! second result for one call. Each refusal is typed, names the call and
//! the position, and writes nothing; the log stays one `check` accepts.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use abridge::Harness;
use abridge::HarnessError;
use abridge::compact::check::PairingFault;
use abridge::compact::check::check_invariants;
use abridge::compact::host::lock_session;
use abridge::llm::Message;
use abridge::llm::Response;
use abridge::llm::StopReason;
use abridge::llm::Usage;
use abridge::session::Session;
use serde_json::json;

fn harness() -> Harness {
    let harness = Harness::builder(Session::in_memory("pairing"), "gpt-4o")
        .build()
        .unwrap();
    harness.append(Message::user("read the file")).unwrap();
    harness
        .append(Message::tool_call(
            "call_1",
            "read",
            json!({"path": "a.rs"}),
        ))
        .unwrap();
    harness
}

fn events(harness: &Harness) -> usize {
    lock_session(harness.session()).len()
}

fn refused(result: Result<abridge::session::Seq, HarnessError>) -> (usize, PairingFault) {
    match result {
        Err(HarnessError::Pairing { position, fault }) => (position, fault),
        other => panic!("expected a pairing refusal, got {other:?}"),
    }
}

#[test]
fn a_result_whose_call_does_not_exist_is_refused_and_not_written() {
    let harness = harness();
    let before = events(&harness);
    let (position, fault) =
        refused(harness.append(Message::tool_result("call_9", "fn main() {}", false)));
    assert_eq!(position, 2);
    assert_eq!(
        fault,
        PairingFault::ResultWithoutCall {
            call_id: "call_9".into()
        }
    );
    assert_eq!(events(&harness), before, "a refused message left a trace");
    let shown = refused(harness.append(Message::tool_result("call_9", "x", false)));
    let error = HarnessError::Pairing {
        position: shown.0,
        fault: shown.1,
    };
    assert!(error.to_string().contains("\"call_9\""), "{error}");
    assert!(error.to_string().contains("position 2"), "{error}");

    harness
        .append(Message::tool_result("call_1", "fn main() {}", false))
        .unwrap();
    assert!(check_invariants(&lock_session(harness.session())).is_ok());
}

#[test]
fn a_second_result_for_one_call_is_refused() {
    let harness = harness();
    harness
        .append(Message::tool_result("call_1", "first", false))
        .unwrap();
    let before = events(&harness);
    let (_, fault) = refused(harness.append(Message::tool_result("call_1", "again", false)));
    assert_eq!(
        fault,
        PairingFault::AnsweredTwice {
            call_id: "call_1".into()
        }
    );
    assert_eq!(events(&harness), before);
}

#[test]
fn a_reply_reusing_a_call_id_is_refused_by_record() {
    let harness = harness();
    harness
        .append(Message::tool_result("call_1", "fn main() {}", false))
        .unwrap();
    let before = events(&harness);
    let reply = Response {
        message: Message::tool_call("call_1", "read", json!({"path": "b.rs"})),
        usage: Usage::default(),
        stop_reason: StopReason::ToolUse,
        model: "gpt-4o".into(),
        native: None,
    };
    let (position, fault) = refused(harness.record(&reply));
    assert_eq!(position, 3);
    assert_eq!(
        fault,
        PairingFault::DuplicateCall {
            call_id: "call_1".into()
        }
    );
    assert_eq!(events(&harness), before);
    assert!(check_invariants(&lock_session(harness.session())).is_ok());
}
