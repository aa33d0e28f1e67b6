//! Property: after any sequence of appends and compactions (including
//! compactions in the middle of a turn, with tool results still to come),
//! the messages the model would receive never hold a tool result without
//! its call or a call without its result, and replaying the stored log
//! gives the same messages.

// Test helpers outside #[test] functions unwrap too: a failure is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use abridge_compact::check::*;
use abridge_compact::*;
use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Role;
use abridge_session::Header;
use abridge_session::MemoryStore;
use abridge_session::Session;
use async_trait::async_trait;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    User(usize),
    Assistant(usize),
    /// An assistant message with `n` calls, then each result.
    ToolTurn(Vec<usize>),
    /// An assistant message with calls whose results come later.
    OpenCalls(usize),
    /// Compact keeping this many tokens.
    Compact(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (1usize..400).prop_map(Op::User),
        (1usize..400).prop_map(Op::Assistant),
        prop::collection::vec(1usize..1500, 1..4).prop_map(Op::ToolTurn),
        (1usize..4).prop_map(Op::OpenCalls),
        (0u64..800).prop_map(Op::Compact),
    ]
}

#[derive(Debug)]
struct Fixed;

#[async_trait]
impl CompactionMethod for Fixed {
    fn name(&self) -> &str {
        "fixed"
    }
    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        let text = format!("{} messages summarized", plan.messages().len());
        Ok(MethodOutput::Checkpoint(Checkpoint::new(text)))
    }
}

fn calls(ids: &[String]) -> Message {
    Message {
        role: Role::Assistant,
        content: ids
            .iter()
            .map(|id| Block::ToolCall {
                id: id.clone(),
                name: "bash".into(),
                arguments: serde_json::json!({"command": "ls"}),
            })
            .collect(),
        meta: Default::default(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn pairing_holds_and_replay_agrees(ops in prop::collection::vec(op(), 1..40)) {
        let store = MemoryStore::new();
        let mut session = Session::create(Box::new(store.clone()), Header::new("p")).unwrap();
        let methods: Vec<Arc<dyn CompactionMethod>> = vec![Arc::new(Fixed)];
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let mut next_id = 0;
        let mut open: Vec<String> = Vec::new();
        for op in ops {
            // Open calls must be answered before anyone else speaks.
            if !matches!(op, Op::Compact(_)) {
                for id in open.drain(..) {
                    session.append_message(Message::tool_result(id, "late", false)).unwrap();
                }
            }
            match op {
                Op::User(n) => { session.append_message(Message::user("u".repeat(n))).unwrap(); }
                Op::Assistant(n) => { session.append_message(Message::assistant("a".repeat(n))).unwrap(); }
                Op::ToolTurn(sizes) => {
                    let ids: Vec<String> = sizes.iter().map(|_| { next_id += 1; format!("t{next_id}") }).collect();
                    session.append_message(calls(&ids)).unwrap();
                    for (id, size) in ids.iter().zip(sizes) {
                        session.append_message(Message::tool_result(id.clone(), "r".repeat(size), false)).unwrap();
                    }
                }
                Op::OpenCalls(n) => {
                    let ids: Vec<String> = (0..n).map(|_| { next_id += 1; format!("o{next_id}") }).collect();
                    session.append_message(calls(&ids)).unwrap();
                    open = ids;
                }
                Op::Compact(keep) => {
                    let policy = Policy::default().with_keep_recent_tokens(keep);
                    // Failing is fine; what matters is what it leaves.
                    let landed = rt.block_on(compact_session(&mut session, &methods[0], &policy, Trigger::MidTurn));
                    // Head-anchored: a landed checkpoint always sits first.
                    if let Ok(outcome) = landed {
                        prop_assert_eq!(Some(session.surface().seqs()[0]), outcome.checkpoint_seq);
                    }
                }
            }
            let report = check_invariants(&session);
            prop_assert!(report.is_ok(), "{:?}", report.violations);
        }
        let (replayed, _) = Session::open(Box::new(store)).unwrap();
        prop_assert_eq!(replayed.surface_messages(), session.surface_messages());
        prop_assert_eq!(replayed.surface(), session.surface());
    }
}
