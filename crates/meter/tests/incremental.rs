//! The incremental total always equals a full recount.
//!
//! Random sessions are built through the session API (appends with and
//! without usage reports, tool calls and results, replaces, rewrites,
//! navigation, rejected drafts); after every step one long-lived meter's
//! `measure` must equal a fresh meter's full recount.

use std::sync::Arc;

use abridge_llm::Block;
use abridge_llm::ImageBilling;
use abridge_llm::ImageSource;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Role;
use abridge_llm::Usage;
use abridge_meter::CostModel;
use abridge_meter::Estimate;
use abridge_meter::Measure;
use abridge_meter::Tiktoken;
use abridge_meter::TokenMeter;
use abridge_meter::Tokenizer;
use abridge_session::Draft;
use abridge_session::Session;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Step {
    User(String),
    Assistant(String, u64),
    ToolRound(String, usize, bool),
    Image(u32, u32),
    Replace(usize, usize),
    Rewrite(usize),
    Navigate(usize),
    Invalid,
}

fn step() -> impl Strategy<Value = Step> {
    let text = "[a-z中 ]{0,40}";
    prop_oneof![
        4 => text.prop_map(Step::User),
        4 => (text, prop_oneof![Just(0u64), 1u64..100_000]).prop_map(|(t, u)| Step::Assistant(t, u)),
        3 => ("[a-z]{1,8}", 0usize..2000, any::<bool>()).prop_map(|(n, len, e)| Step::ToolRound(n, len, e)),
        1 => (0u32..4000, 0u32..4000).prop_map(|(w, h)| Step::Image(w, h)),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Step::Replace(a, b)),
        2 => any::<usize>().prop_map(Step::Rewrite),
        1 => any::<usize>().prop_map(Step::Navigate),
        1 => Just(Step::Invalid),
    ]
}

fn with_usage(message: Message, reported: u64) -> Message {
    message.with_meta(Meta {
        usage: Some(Usage {
            input: reported / 2,
            output: reported / 4,
            cache_read: reported - reported / 2 - reported / 4,
            cache_write: 0,
        }),
        ..Meta::default()
    })
}

/// Applies one step; steps that the session rejects are fine (a rejected
/// draft leaves no trace, which is part of what is tested).
fn apply(session: &mut Session, step: &Step, counter: &mut u64) {
    *counter += 1;
    match step {
        Step::User(text) => {
            let _ = session.append_message(Message::user(text.clone()));
        }
        Step::Assistant(text, reported) => {
            let _ = session.append_message(with_usage(Message::assistant(text.clone()), *reported));
        }
        Step::ToolRound(name, len, is_error) => {
            let id = format!("call{counter}");
            let mut call = Message::assistant("");
            call.content = vec![Block::ToolCall {
                id: id.clone(),
                name: name.clone(),
                arguments: serde_json::json!({ "n": len }),
            }];
            let _ = session.append_message(with_usage(call, 10 * *len as u64));
            let _ = session.append_message(Message::tool_result(id, "x ".repeat(*len), *is_error));
        }
        Step::Image(w, h) => {
            let message = Message {
                role: Role::User,
                content: vec![Block::Image {
                    source: ImageSource::Url {
                        url: "https://example.com/i.png".into(),
                    },
                    width: (*w > 0).then_some(*w),
                    height: (*h > 0).then_some(*h),
                }],
                meta: Meta::default(),
            };
            let _ = session.append_message(message);
        }
        Step::Replace(a, b) => {
            let len = session.surface().len();
            if len == 0 {
                return;
            }
            let (start, end) = ((*a % len).min(*b % len), (*a % len).max(*b % len));
            let sources = session.surface().seqs()[start..=end].to_vec();
            let summary = with_usage(Message::assistant("summary of earlier work"), 123);
            let _ = session.append(Draft::replace(summary, start, end, sources));
        }
        Step::Rewrite(pick) => {
            let tools: Vec<u64> = session
                .surface()
                .seqs()
                .iter()
                .copied()
                .filter(|&s| session.message(s).is_some_and(|m| m.role == Role::Tool))
                .collect();
            if tools.is_empty() {
                return;
            }
            let target = tools[pick % tools.len()];
            let Some(call_id) = session
                .message(target)
                .and_then(|m| m.tool_result_block())
                .map(|b| b.0.to_string())
            else {
                return;
            };
            let _ = session.append(Draft::rewrite(
                Message::tool_result(call_id, "[pruned]", false),
                target,
            ));
        }
        Step::Navigate(pick) => {
            let len = session.len();
            if len == 0 {
                return;
            }
            let _ = session.navigate(Some((*pick % len) as u64));
        }
        Step::Invalid => {
            // Hides a span without listing it: rejected, no trace.
            let _ = session.append(Draft::replace(Message::user("bad"), 0, 0, vec![]));
        }
    }
}

fn meter(tokenizer: Arc<dyn Tokenizer>) -> TokenMeter {
    TokenMeter::new(CostModel::new(tokenizer, ImageBilling::Anthropic))
}

fn check(steps: &[Step], tokenizer: &Arc<dyn Tokenizer>) -> Result<(), TestCaseError> {
    let mut session = Session::in_memory("prop");
    let mut live = meter(tokenizer.clone());
    let mut counter = 0;
    for (i, step) in steps.iter().enumerate() {
        apply(&mut session, step, &mut counter);
        let incremental: Measure = live.measure(&session);
        let full = meter(tokenizer.clone()).measure_full(&session);
        prop_assert_eq!(incremental, full, "after step {} {:?}", i, step);
        prop_assert!(incremental.tokens >= incremental.estimate);
        if let Some(anchored) = incremental.anchored {
            prop_assert!(incremental.tokens >= anchored);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn incremental_equals_full_recount(steps in proptest::collection::vec(step(), 1..40)) {
        check(&steps, &(Arc::new(Estimate) as Arc<dyn Tokenizer>))?;
    }

    #[test]
    fn incremental_equals_full_recount_exact(steps in proptest::collection::vec(step(), 1..25)) {
        check(&steps, &(Arc::new(Tiktoken::o200k()) as Arc<dyn Tokenizer>))?;
    }
}

#[test]
fn measuring_twice_without_changes_is_stable() {
    let mut session = Session::in_memory("s");
    session.append_message(Message::user("hello")).unwrap();
    let mut m = meter(Arc::new(Tiktoken::o200k()));
    let first = m.measure(&session);
    assert_eq!(m.measure(&session), first);
}
