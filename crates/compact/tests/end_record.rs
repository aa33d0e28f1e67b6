//! A method's failure reaches `compaction/end` through the host's error
//! unchanged: the same kind, the same text and the same cost as when the
//! seam had one error type, so logs written before and after read alike.

// Test helpers outside #[test] functions unwrap too: a failure is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use abridge_compact::host::*;
use abridge_compact::*;
use abridge_llm::Message;
use abridge_llm::Usage;
use abridge_session::Session;
use async_trait::async_trait;

/// Fails every run with the error it holds a recipe for.
#[derive(Debug)]
struct Failing {
    error: fn() -> MethodError,
}

#[async_trait]
impl CompactionMethod for Failing {
    fn name(&self) -> &str {
        "failing"
    }
    async fn run(&self, _plan: &Plan) -> Result<MethodOutput, MethodError> {
        Err((self.error)())
    }
}

fn cost() -> Usage {
    Usage {
        input: 900,
        output: 40,
        ..Usage::default()
    }
}

fn session() -> Session {
    let mut session = Session::in_memory("end-record");
    for i in 0..6 {
        session
            .append_message(Message::user(format!("request {i}: {}", "x".repeat(400))))
            .unwrap();
        session.append_message(Message::assistant("ok")).unwrap();
    }
    session
}

/// Runs `method` to its failure and returns the error and the one
/// `compaction/end` it wrote.
fn fail(method: &Failing) -> (CompactError, EndData) {
    let mut session = session();
    let policy = Policy::default().with_keep_recent_tokens(150);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let error = runtime
        .block_on(compact_session(
            &mut session,
            method,
            &policy,
            Trigger::Manual,
        ))
        .unwrap_err();
    let ends: Vec<EndData> = session
        .events()
        .iter()
        .filter_map(|e| e.log())
        .filter(|l| l.kind == TYPE_COMPACTION_END)
        .map(|l| serde_json::from_value(l.data.clone()).unwrap())
        .collect();
    assert_eq!(ends.len(), 1, "one end per failed attempt");
    (error, ends.into_iter().next().unwrap())
}

#[test]
fn a_spent_summary_failure_is_recorded_as_it_always_was() {
    let (error, end) = fail(&Failing {
        error: || {
            MethodError::Summary {
                method: "failing".into(),
                reason: "the answer was cut at the output limit".into(),
            }
            .with_usage(cost())
        },
    });
    let text = "method failing: no usable summary: the answer was cut at the output limit";
    assert_eq!(end.status, EndStatus::Error);
    assert_eq!(end.kind.as_deref(), Some("summary"));
    assert_eq!(end.error.as_deref(), Some(text));
    assert_eq!(end.usage, Some(cost()));
    assert!(matches!(
        error.method_error(),
        Some(MethodError::Summary { .. })
    ));
    assert_eq!(error.to_string(), text);
    assert!(!error.stops_fallthrough());
}

#[test]
fn a_cancelled_method_is_recorded_as_cancelled_and_stops_the_fall_through() {
    let (error, end) = fail(&Failing {
        error: || MethodError::Cancelled {
            by: "the model call".into(),
        },
    });
    assert_eq!(end.kind.as_deref(), Some("cancelled"));
    assert_eq!(
        end.error.as_deref(),
        Some("compaction cancelled by the model call")
    );
    assert_eq!(end.usage, None);
    assert!(error.stops_fallthrough());
}
