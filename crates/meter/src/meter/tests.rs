use std::sync::Arc;

use abridge_llm::ImageBilling;
use abridge_llm::Meta;
use abridge_llm::Usage;
use abridge_session::Draft;
use pretty_assertions::assert_eq;

use super::*;
use crate::tokenizer::Estimate;

/// bytes/4 with a 4-token message overhead and 2 per block: "abcd" costs
/// 4 + 2 + 1 = 7.
fn meter() -> TokenMeter {
    TokenMeter::new(CostModel::new(Arc::new(Estimate), ImageBilling::Anthropic))
}

fn assistant(text: &str, reported: u64) -> Message {
    Message::assistant(text).with_meta(Meta {
        usage: Some(Usage {
            input: reported.saturating_sub(1),
            output: reported.min(1),
            ..Usage::default()
        }),
        ..Meta::default()
    })
}

#[test]
fn estimate_without_reports() {
    let mut s = Session::in_memory("t");
    let mut m = meter();
    assert_eq!(m.measure(&s).tokens, 0);
    s.append_message(Message::user("abcd")).unwrap();
    s.append_message(Message::assistant("abcdabcd")).unwrap();
    let measure = m.measure(&s);
    assert_eq!(measure.estimate, 7 + 8);
    assert_eq!(measure.anchored, None);
    assert_eq!(measure.ratio, None);
    assert_eq!(measure.tokens, 15);
}

#[test]
fn anchoring_adds_what_came_after_the_report() {
    let mut s = Session::in_memory("t");
    let mut m = meter();
    s.append_message(Message::user("abcd")).unwrap(); // 7
    let a = s.append_message(assistant("abcd", 70)).unwrap(); // 7
    s.append_message(Message::user("abcdabcd")).unwrap(); // 8
    let measure = m.measure(&s);
    assert_eq!(measure.estimate, 22);
    assert_eq!(
        measure.anchor,
        Some(Anchor {
            seq: a,
            reported: 70,
            estimated: 14
        })
    );
    assert_eq!(measure.anchored, Some(78));
    assert_eq!(measure.tokens, 78);
    assert_eq!(measure.ratio, Some(5.0));
}

#[test]
fn a_report_below_the_estimate_never_lowers_the_figure() {
    let mut s = Session::in_memory("t");
    let mut m = meter();
    s.append_message(Message::user("abcd".repeat(10))).unwrap(); // 16
    s.append_message(assistant("abcd", 3)).unwrap(); // 7
    let measure = m.measure(&s);
    assert_eq!(measure.anchored, Some(3));
    assert_eq!(measure.tokens, 23);
    assert_eq!(measure.ratio, Some(3.0 / 23.0));
}

#[test]
fn zero_reports_are_no_reports() {
    let mut s = Session::in_memory("t");
    let mut m = meter();
    s.append_message(Message::user("abcd")).unwrap();
    let a = s.append_message(assistant("abcd", 50)).unwrap();
    s.append_message(assistant("abcd", 0)).unwrap();
    let measure = m.measure(&s);
    assert_eq!(measure.anchor.map(|a| a.seq), Some(a));
    assert_eq!(measure.anchored, Some(57));
    assert_eq!(m.measure_full(&s), measure);
}

#[test]
fn compaction_drops_the_stale_anchor() {
    let mut s = Session::in_memory("t");
    let mut m = meter();
    let u = s.append_message(Message::user("abcd".repeat(100))).unwrap();
    let a = s.append_message(assistant("abcd", 5000)).unwrap();
    assert_eq!(m.measure(&s).tokens, 5000);
    s.append(Draft::replace(Message::user("summary!"), 0, 1, vec![u, a]))
        .unwrap();
    let after = m.measure(&s);
    assert_eq!(after.anchor, None);
    assert_eq!(after.estimate, 8);
    // The overhead the report showed (5000 - 113) stays.
    assert_eq!(after.overhead, Some(5000 - 113));
    assert_eq!(after.tokens, 8 + 5000 - 113);
    assert_eq!(m.measure_full(&s), after);
    // The next reply anchors again.
    let b = s.append_message(assistant("abcd", 900)).unwrap();
    let later = m.measure(&s);
    assert_eq!(later.anchor.map(|a| a.seq), Some(b));
    assert_eq!(later.tokens, 900);
    assert_eq!(m.measure_full(&s), later);
}

/// Issue 16, point 2: a usage report far above our estimate (a system
/// prompt and tool definitions the log never holds), then a compaction
/// hiding most messages. Before and after must stand on one basis: the
/// figure after is the estimate after plus the overhead, not a bare
/// estimate, so "before -> after" reports what the compaction freed.
#[test]
fn compaction_keeps_the_unseen_overhead_until_the_next_report() {
    let mut s = Session::in_memory("t");
    let mut m = meter();
    let mut hidden = Vec::new();
    for _ in 0..10 {
        hidden.push(s.append_message(Message::user("abcd".repeat(400))).unwrap()); // 406
        hidden.push(
            s.append_message(Message::assistant("abcd".repeat(100)))
                .unwrap(),
        ); // 106
    }
    let kept = s.append_message(Message::user("abcd".repeat(40))).unwrap(); // 46
    let _ = kept;
    let overhead = 38_000;
    let estimate_before = 10 * (406 + 106) + 46 + 7;
    s.append_message(assistant("abcd", estimate_before + overhead))
        .unwrap();
    let before = m.measure(&s);
    assert_eq!(before.estimate, estimate_before);
    assert_eq!(before.tokens, estimate_before + overhead);
    assert_eq!(before.overhead, Some(overhead));

    // A compaction hides the first twenty messages behind a checkpoint.
    s.append(Draft::replace(Message::user("summary!"), 0, 19, hidden))
        .unwrap();
    let after = m.measure(&s);
    assert_eq!(after.anchor, None);
    assert_eq!(after.estimate, 8 + 46 + 7);
    assert_eq!(after.overhead, Some(overhead));
    assert_eq!(after.anchored, Some(after.estimate + overhead));
    assert_eq!(after.tokens, after.estimate + overhead);
    assert_eq!(m.measure_full(&s), after);
    // What the compaction freed is what it hid, on either basis.
    assert_eq!(
        before.tokens - after.tokens,
        before.estimate - after.estimate
    );

    // Appends before the next report stay on the same basis.
    s.append_message(Message::user("abcd")).unwrap();
    assert_eq!(m.measure(&s).tokens, after.tokens + 7);

    // The next report takes over, with its own overhead.
    s.append_message(assistant("abcd", 1000)).unwrap();
    let next = m.measure(&s);
    assert_eq!(next.anchor.map(|a| a.reported), Some(1000));
    assert_eq!(next.overhead, Some(1000 - (after.estimate + 7 + 7)));
    assert_eq!(next.tokens, 1000);
}

/// Issue 27, point 5: `compact` measured the overhead it carried across
/// its checkpoint, and the next command, opening the log with a fresh
/// meter, dropped it (106,061 -> 44,750 said compact; 2,624 said stats).
/// The overhead is read from the log, so every meter agrees, through
/// rewrites and a second checkpoint too.
#[test]
fn a_fresh_meter_carries_the_overhead_the_log_shows() {
    let mut s = Session::in_memory("t");
    let mut live = meter();
    let mut hidden = Vec::new();
    for _ in 0..4 {
        hidden.push(s.append_message(Message::user("abcd".repeat(400))).unwrap()); // 406
        hidden.push(s.append_message(Message::assistant("abcd")).unwrap()); // 7
    }
    let overhead = 30_000;
    let estimate = 4 * (406 + 7) + 7;
    let a = s
        .append_message(assistant("abcd", estimate + overhead))
        .unwrap();
    assert_eq!(live.measure(&s).tokens, estimate + overhead);
    hidden.push(a);
    s.append(Draft::replace(Message::user("summary!"), 0, 8, hidden))
        .unwrap();
    let call = s
        .append_message(Message::tool_call("c1", "read", serde_json::json!({})))
        .unwrap();
    let result = s
        .append_message(Message::tool_result("c1", "x".repeat(4000), false))
        .unwrap();
    let after = live.measure(&s);
    assert_eq!(after.overhead, Some(overhead));
    assert_eq!(after.tokens, after.estimate + overhead);
    assert_eq!(meter().measure(&s), after);

    // A rewrite and a second checkpoint keep the same overhead.
    s.append(Draft::rewrite(
        Message::tool_result("c1", "[pruned]", false),
        result,
    ))
    .unwrap();
    let rewritten = live.measure(&s);
    assert_eq!(rewritten.tokens, rewritten.estimate + overhead);
    assert_eq!(meter().measure(&s), rewritten);
    s.append(Draft::replace(
        Message::user("summary 2"),
        0,
        2,
        vec![s.surface().seqs()[0], call, result + 1],
    ))
    .unwrap();
    let twice = live.measure(&s);
    assert_eq!(twice.tokens, twice.estimate + overhead);
    assert_eq!(meter().measure(&s), twice);
    assert_eq!(meter().measure_full(&s), twice);
}

/// A host that knows its overhead (a replay that left the reports out)
/// fixes it; a report in the log takes over.
#[test]
fn a_fixed_overhead_counts_until_a_report_shows_one() {
    let mut s = Session::in_memory("t");
    let mut m = meter().with_fixed_overhead(1_000);
    s.append_message(Message::user("abcd")).unwrap();
    let measure = m.measure(&s);
    assert_eq!((measure.estimate, measure.tokens), (7, 1_007));
    assert_eq!(measure.overhead, Some(1_000));
    s.append_message(assistant("abcd", 500)).unwrap();
    assert_eq!(m.measure(&s).tokens, 500);
}

#[test]
fn earlier_turns_thinking_is_free_when_dropped() {
    let thinking = |text: &str| {
        let mut m = Message::assistant("abcd");
        m.content.insert(
            0,
            abridge_llm::Block::Thinking {
                thinking: text.into(),
                signature: Some("x".repeat(1600)),
            },
        );
        m
    };
    let mut s = Session::in_memory("t");
    let mut m = meter();
    s.append_message(Message::user("abcd")).unwrap(); // 7
    s.append_message(thinking("abcd")).unwrap(); // 7 + (2 + 300)
    // The current turn's thinking is read: the signature sizes it.
    assert_eq!(m.measure(&s).estimate, 7 + 7 + 302);
    // A tool result does not end the turn.
    s.append_message(Message::tool_result("c1", "abcd", false))
        .unwrap(); // 4 + 2 + 10 + 2 + 1 = 19
    assert_eq!(m.measure(&s).estimate, 7 + 7 + 302 + 19);
    // A user message does: the thinking before it costs nothing.
    s.append_message(Message::user("abcd")).unwrap();
    let dropped = m.measure(&s);
    assert_eq!(dropped.estimate, 7 + 7 + 19 + 7);
    assert_eq!(m.measure_full(&s), dropped);

    // Lines that keep earlier thinking count it.
    let mut kept = TokenMeter::new(
        CostModel::new(Arc::new(Estimate), ImageBilling::Anthropic)
            .with_prior_thinking(PriorThinking::Kept),
    );
    assert_eq!(kept.measure(&s).estimate, 7 + 7 + 302 + 19 + 7);
}

#[test]
fn rewrites_swap_costs() {
    let mut s = Session::in_memory("t");
    let mut m = meter();
    let mut call = Message::assistant("");
    call.content = vec![abridge_llm::Block::ToolCall {
        id: "c1".into(),
        name: "read".into(),
        arguments: serde_json::json!({}),
    }];
    s.append_message(call).unwrap();
    let r = s
        .append_message(Message::tool_result("c1", "x".repeat(4000), false))
        .unwrap();
    let before = m.measure(&s).estimate;
    s.append(Draft::rewrite(
        Message::tool_result("c1", "[pruned]", false),
        r,
    ))
    .unwrap();
    let after = m.measure(&s);
    assert_eq!(before - after.estimate, 1000 - 2);
    assert_eq!(m.measure_full(&s), after);
}

#[test]
fn another_session_is_recounted() {
    let mut a = Session::in_memory("a");
    a.append_message(Message::user("abcd")).unwrap();
    let mut b = Session::in_memory("b");
    b.append_message(Message::user("abcdabcd")).unwrap();
    let mut m = meter();
    assert_eq!(m.measure(&a).estimate, 7);
    // Same seqs and journal position, other session: nothing cached
    // for `a` may leak into `b`.
    assert_eq!(m.measure(&b).estimate, 8);
    assert_eq!(m.seq_tokens(&a, 0), 7);
}
