//! The split keeps what the log and callers see: every kind's stable
//! name, every text, and the fall-through rule.

use abridge_llm::LlmError;
use abridge_llm::Usage;
use abridge_session::SessionError;

use super::*;
use crate::details::DetailsError;

fn usage() -> Usage {
    Usage {
        input: 120,
        output: 30,
        ..Usage::default()
    }
}

#[test]
fn messages_name_the_values() {
    let error = MethodError::NotSmaller {
        method: "digest".into(),
        checkpoint_tokens: 900,
        hidden_tokens: 800,
    };
    assert_eq!(
        error.to_string(),
        "method digest: checkpoint costs 900 tokens but hides only 800; rejected"
    );
    assert_eq!(error.kind(), ErrorKind::NotSmaller);
    let all = CompactError::AllFailed {
        failures: vec![
            MethodFailure::new("soft", ErrorKind::Summary, "x"),
            MethodFailure::new("digest", ErrorKind::NotSmaller, "y"),
        ],
    };
    assert_eq!(all.to_string(), "every method failed: soft: x; digest: y");
}

#[test]
fn overflow_from_llm_stays_overflow() {
    let error = MethodError::from_llm(
        "soft",
        LlmError::ContextOverflow {
            provider: "p".into(),
            message: "too long".into(),
        },
    );
    assert_eq!(error.kind(), ErrorKind::Overflow);
    assert_eq!(
        MethodError::from_llm("soft", LlmError::Cancelled).kind(),
        ErrorKind::Cancelled
    );
    assert_eq!(
        serde_json::to_value(ErrorKind::NothingToCompact).unwrap(),
        "nothing_to_compact"
    );
}

/// Each host failure, the kind name `compaction/end` has always carried
/// for it, and its text.
#[test]
fn host_failures_keep_their_kind_names_and_text() {
    let cases: Vec<(CompactError, &str, &str)> = vec![
        (
            CompactError::Busy {
                compaction_id: "c1".into(),
                start_seq: 7,
            },
            "busy",
            "compaction c1 (started at seq 7) is still running; wait for it to end",
        ),
        (
            CompactError::Changed {
                reason: "position 3 moved".into(),
            },
            "changed",
            "the session changed while compacting: position 3 moved",
        ),
        (
            CompactError::TooLittle {
                method: "prune".into(),
                reclaimed: 10,
                floor: 500,
            },
            "too_little",
            "method prune: reclaims only 10 tokens, under the floor of 500 that pays for the prompt-cache break; rejected",
        ),
        (
            CompactError::OverWindow {
                method: "soft".into(),
                after: 9000,
                ceiling: 8000,
            },
            "over_window",
            "method soft: would leave 9000 tokens, over the 8000-token window; rejected",
        ),
        (
            CompactError::Commit {
                reason: "seq 4 is rewritten twice".into(),
            },
            "commit",
            "cannot commit: seq 4 is rewritten twice",
        ),
        (
            CompactError::Persistence(SessionError::UnknownSeq { seq: 9, len: 3 }),
            "persistence",
            "session write failed: no event with seq 9 (the log has 3 events)",
        ),
        (
            CompactError::AllFailed {
                failures: vec![MethodFailure::new("soft", ErrorKind::Llm, "down")],
            },
            "all_failed",
            "every method failed: soft: down",
        ),
    ];
    for (error, kind, text) in cases {
        assert_eq!(error.kind().as_str(), kind, "{error:?}");
        assert_eq!(error.to_string(), text, "{error:?}");
        assert_eq!(error.usage(), None);
        assert!(error.method_error().is_none());
    }
}

/// Each method failure, its kind name and its text, alone and wrapped
/// by the host: wrapping changes neither, nor the usage it records.
#[test]
fn a_wrapped_method_failure_keeps_its_kind_and_text() {
    let llm_text = format!("method soft: model call failed: {}", LlmError::Cancelled);
    let cases: Vec<(MethodError, &str, &str)> = vec![
        (
            MethodError::Cancelled { by: "hook".into() },
            "cancelled",
            "compaction cancelled by hook",
        ),
        (
            MethodError::Summary {
                method: "soft".into(),
                reason: "empty".into(),
            },
            "summary",
            "method soft: no usable summary: empty",
        ),
        (
            MethodError::Overflow {
                method: "soft".into(),
                message: "too long".into(),
            },
            "overflow",
            "method soft: summarizer input does not fit the model: too long",
        ),
        (
            MethodError::Llm {
                method: "soft".into(),
                source: LlmError::Cancelled,
            },
            "llm",
            &llm_text,
        ),
        (
            MethodError::NotSmaller {
                method: "snap".into(),
                checkpoint_tokens: 5,
                hidden_tokens: 4,
            },
            "not_smaller",
            "method snap: checkpoint costs 5 tokens but hides only 4; rejected",
        ),
        (
            MethodError::NothingToCompact {
                reason: "no tool results".into(),
            },
            "nothing_to_compact",
            "nothing to compact: no tool results",
        ),
        (
            MethodError::Unavailable {
                method: "remote".into(),
                reason: "no key".into(),
            },
            "unavailable",
            "method remote is unavailable: no key",
        ),
        (
            MethodError::Details(DetailsError::Serialize {
                key: "windows",
                message: "bad".into(),
            }),
            "details",
            "details section windows: cannot serialize: bad",
        ),
    ];
    for (error, kind, text) in cases {
        let text = text.to_string();
        assert_eq!(error.kind().as_str(), kind, "{error:?}");
        assert_eq!(error.to_string(), text);
        let spent = error.with_usage(usage());
        assert_eq!(spent.kind().as_str(), kind, "usage changes no kind");
        assert_eq!(spent.to_string(), text, "usage changes no text");
        let host = CompactError::from(spent);
        assert_eq!(host.kind().as_str(), kind, "wrapping changes no kind");
        assert_eq!(host.to_string(), text, "wrapping changes no text");
        assert_eq!(host.usage(), Some(&usage()));
        assert_eq!(
            host.method_error().map(MethodError::kind),
            Some(host.kind())
        );
        let failure = MethodFailure::from_error("m", &host);
        assert_eq!(
            (failure.kind.as_str(), failure.message.as_str()),
            (kind, text.as_str())
        );
    }
}

#[test]
fn only_busy_persistence_and_cancel_stop_the_fall_through() {
    let busy = CompactError::Busy {
        compaction_id: "c".into(),
        start_seq: 1,
    };
    let persistence = CompactError::Persistence(SessionError::UnknownSeq { seq: 1, len: 0 });
    let cancelled =
        CompactError::from(MethodError::Cancelled { by: "hook".into() }.with_usage(usage()));
    assert!(busy.stops_fallthrough());
    assert!(persistence.stops_fallthrough());
    assert!(cancelled.stops_fallthrough(), "usage hides no cancel");
    assert!(CompactError::cancelled("caller").stops_fallthrough());
    let summary = MethodError::Summary {
        method: "soft".into(),
        reason: "empty".into(),
    };
    assert!(!summary.stops_fallthrough());
    assert!(!CompactError::from(summary).stops_fallthrough());
    assert!(!CompactError::Changed { reason: "x".into() }.stops_fallthrough());
    assert!(!CompactError::nothing_to_compact("x").stops_fallthrough());
}
