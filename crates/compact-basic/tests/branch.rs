//! Branch summaries: leaving a branch records what was tried on it, at
//! the navigation target, within a budget taken newest first.

// Test helpers outside #[test] functions unwrap too: a failure is the test failing.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use abridge_compact::*;
use abridge_compact_basic::*;
use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_session::Session;
use async_trait::async_trait;

fn run<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

fn session_with_branch() -> (Session, u64) {
    let mut s = Session::in_memory("b");
    s.append_message(Message::user("Speed up the tokenizer."))
        .unwrap();
    let fork = s
        .append_message(Message::assistant("I will profile it first."))
        .unwrap();
    s.append_message(Message::user("Try a lookup table."))
        .unwrap();
    s.append_message(Message {
        role: Role::Assistant,
        content: vec![Block::ToolCall {
            id: "w1".into(),
            name: "write".into(),
            arguments: serde_json::json!({"path": "src/table.rs", "content": "x"}),
        }],
        meta: Default::default(),
    })
    .unwrap();
    s.append_message(Message::tool_result("w1", "written", false))
        .unwrap();
    s.append_message(Message::assistant(format!(
        "The table made it slower: 12% worse on the benchmark. {}",
        "detail ".repeat(30)
    )))
    .unwrap();
    (s, fork)
}

#[derive(Debug)]
struct Recording(std::sync::Mutex<Vec<SummaryRequest>>);

#[async_trait]
impl Summarizer for Recording {
    fn name(&self) -> &str {
        "recording"
    }
    async fn summarize(&self, request: &SummaryRequest) -> Result<Summary, CompactError> {
        self.0.lock().unwrap().push(request.clone());
        Ok(Summary::text(
            "- tried a lookup table in src/table.rs; 12% slower",
        ))
    }
}

#[test]
fn leaving_a_branch_appends_its_summary_at_the_target() {
    let (mut session, fork) = session_with_branch();
    let recorder = Arc::new(Recording(Default::default()));
    let counter = EstimateCounter::new();
    let (navigation, summary) = run(navigate_with_summary(
        &mut session,
        Some(fork),
        Some(recorder.clone()),
        &NoHooks,
        &counter,
        BranchConfig::default(),
    ))
    .unwrap();
    assert_eq!(navigation.abandoned.len(), 4);
    let seq = summary.unwrap();
    let surface = session.surface().seqs().to_vec();
    assert_eq!(surface, vec![0, fork, seq]);
    let message = session.message(seq).unwrap();
    assert_eq!(message.meta.origin, Some(Origin::BranchSummary));
    assert_eq!(
        message.content[0].as_text(),
        Some(BRANCH_OPENING.trim_end())
    );
    assert!(message.plain_text().contains("src/\n  table.rs (write)"));
    let requests = recorder.0.lock().unwrap();
    assert_eq!(requests[0].purpose, abridge_llm::Purpose::BranchSummary);
    assert_eq!(requests[0].messages.len(), 4);
}

#[test]
fn the_budget_keeps_the_newest_messages() {
    let (mut session, fork) = session_with_branch();
    let navigation = session.navigate(Some(fork)).unwrap();
    let counter = EstimateCounter::new();
    let picked = abandoned_messages(&session, &navigation, &counter, 10);
    // The newest message alone is over budget, and is still kept.
    assert_eq!(picked.len(), 1);
    assert!(
        picked[0]
            .plain_text()
            .starts_with("The table made it slower")
    );
    // With no summarizer, a digest of the branch is used.
    let seq = run(summarize_branch(
        &mut session,
        &navigation,
        None,
        &counter,
        BranchConfig::default(),
    ))
    .unwrap()
    .unwrap();
    let text = session.message(seq).unwrap().plain_text();
    assert!(text.contains("## Goal\nTry a lookup table."), "{text}");
}
