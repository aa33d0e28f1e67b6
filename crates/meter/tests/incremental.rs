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
use abridge_meter::PriorThinking;
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
    Thinking(String, usize, u64),
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
        3 => (text, 0usize..3000, prop_oneof![Just(0u64), 1u64..100_000]).prop_map(|(t, s, u)| Step::Thinking(t, s, u)),
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
        Step::Thinking(text, signature, reported) => {
            let mut message = Message::assistant("ok");
            message.content.insert(
                0,
                Block::Thinking {
                    thinking: text.clone(),
                    signature: (*signature > 0).then(|| "Eq".repeat(*signature / 2)),
                },
            );
            if *signature % 3 == 0 {
                message.content.push(Block::RedactedThinking {
                    data: "x".repeat(*signature),
                });
            }
            let _ = session.append_message(with_usage(message, *reported));
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

fn meter(tokenizer: Arc<dyn Tokenizer>, prior: PriorThinking) -> TokenMeter {
    TokenMeter::new(CostModel::new(tokenizer, ImageBilling::Anthropic).with_prior_thinking(prior))
}

fn check(steps: &[Step], tokenizer: &Arc<dyn Tokenizer>) -> Result<(), TestCaseError> {
    check_with(steps, tokenizer, PriorThinking::Dropped)
}

fn check_with(
    steps: &[Step],
    tokenizer: &Arc<dyn Tokenizer>,
    prior: PriorThinking,
) -> Result<(), TestCaseError> {
    let mut session = Session::in_memory("prop");
    let mut live = meter(tokenizer.clone(), prior);
    let mut counter = 0;
    for (i, step) in steps.iter().enumerate() {
        apply(&mut session, step, &mut counter);
        let incremental: Measure = live.measure(&session);
        // The overhead carried past a dropped anchor is the live meter's
        // own state: its recount must agree exactly; a fresh meter's agrees
        // on everything the surface shows, and on all of it while an
        // anchor stands.
        let own = live.measure_full(&session);
        prop_assert_eq!(incremental, own, "after step {} {:?}", i, step);
        let full = meter(tokenizer.clone(), prior).measure_full(&session);
        prop_assert_eq!(
            incremental.estimate,
            full.estimate,
            "after step {} {:?}",
            i,
            step
        );
        prop_assert_eq!(
            incremental.anchor,
            full.anchor,
            "after step {} {:?}",
            i,
            step
        );
        if full.anchor.is_some() {
            prop_assert_eq!(incremental, full, "after step {} {:?}", i, step);
        }
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
    fn incremental_equals_full_recount_when_thinking_is_kept(steps in proptest::collection::vec(step(), 1..40)) {
        check_with(&steps, &(Arc::new(Estimate) as Arc<dyn Tokenizer>), PriorThinking::Kept)?;
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
    let mut m = meter(Arc::new(Tiktoken::o200k()), PriorThinking::Dropped);
    let first = m.measure(&session);
    assert_eq!(m.measure(&session), first);
}
