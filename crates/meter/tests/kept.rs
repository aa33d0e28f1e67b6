//! Counts kept between processes: a reopened session is measured without
//! tokenizing what was counted before, and a kept count is only used for
//! the content it was counted from.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering;

use abridge_llm::Block;
use abridge_llm::ImageBilling;
use abridge_llm::Message;
use abridge_meter::CostModel;
use abridge_meter::KeptCounts;
use abridge_meter::Tiktoken;
use abridge_meter::TokenMeter;
use abridge_meter::Tokenizer;
use abridge_meter::token_stats;
use abridge_session::Session;
use pretty_assertions::assert_eq;

/// o200k, counting how often it is asked.
#[derive(Debug, Default)]
struct Counting {
    calls: AtomicUsize,
}

impl Tokenizer for Counting {
    fn name(&self) -> &str {
        "counting-o200k"
    }

    fn count(&self, text: &str) -> usize {
        self.calls.fetch_add(1, Ordering::Relaxed);
        Tiktoken::o200k().count(text)
    }
}

fn meter(tokenizer: &Arc<Counting>) -> TokenMeter {
    TokenMeter::new(CostModel::new(tokenizer.clone(), ImageBilling::OpenAi))
}

/// A session of turns with tool calls; `edit` changes the text of the
/// third message.
fn session(edit: bool) -> Session {
    let mut s = Session::in_memory("kept");
    s.append_message(Message::user("read the config and fix the port"))
        .unwrap();
    for turn in 0..6 {
        let mut call = Message::assistant(format!("reading file {turn}"));
        call.content.push(Block::ToolCall {
            id: format!("c{turn}"),
            name: if turn % 2 == 0 { "read" } else { "grep" }.into(),
            arguments: serde_json::json!({"path": format!("src/{turn}.rs")}),
        });
        if edit && turn == 0 {
            call.content[0] = Block::Text {
                text: "an edited line that costs other tokens than the first".into(),
            };
        }
        s.append_message(call).unwrap();
        s.append_message(Message::tool_result(
            format!("c{turn}"),
            format!("fn port() -> u16 {{ {turn}080 }}\n").repeat(20),
            false,
        ))
        .unwrap();
    }
    s
}

/// The kept counts written and read back, as a process would find them.
fn round_trip(kept: &KeptCounts) -> KeptCounts {
    let mut copy = kept.clone();
    let mut bytes = Vec::new();
    copy.write(&mut bytes).unwrap();
    KeptCounts::read(bytes.as_slice(), kept.model()).unwrap()
}

#[test]
fn a_reopened_session_is_measured_without_tokenizing() {
    let s = session(false);
    let first = Arc::new(Counting::default());
    let mut m = meter(&first);
    m.keep_counts(KeptCounts::default());
    let before = m.measure(&s);
    assert!(first.calls.load(Ordering::Relaxed) > 0);
    let kept = m.kept_counts().unwrap();
    assert!(kept.changed());
    assert_eq!(kept.len(), s.len());

    let again = Arc::new(Counting::default());
    let mut reopened = meter(&again);
    reopened.keep_counts(round_trip(kept));
    assert_eq!(reopened.measure(&s), before);
    let stats = token_stats(&mut reopened, &s, 3);
    assert_eq!(again.calls.load(Ordering::Relaxed), 0);
    assert!(!reopened.kept_counts().unwrap().changed());
    assert_eq!(stats.by_tool["read"].calls, 3);
    assert!(stats.by_tool["grep"].call_tokens > 0);
}

#[test]
fn stats_count_each_block_once() {
    let s = session(false);
    let plain = Arc::new(Counting::default());
    meter(&plain).measure(&s);
    let with_stats = Arc::new(Counting::default());
    let mut m = meter(&with_stats);
    let stats = token_stats(&mut m, &s, 3);
    assert_eq!(
        with_stats.calls.load(Ordering::Relaxed),
        plain.calls.load(Ordering::Relaxed)
    );
    // The per-tool figures still add up to what a fresh count gives.
    let fresh = CostModel::new(Arc::new(Tiktoken::o200k()), ImageBilling::OpenAi);
    let mut calls = 0;
    for seq in 0..s.len() as u64 {
        for block in &s.message(seq).unwrap().content {
            if let Block::ToolCall { name, .. } = block
                && name == "read"
            {
                calls += fresh.block(block);
            }
        }
    }
    assert_eq!(stats.by_tool["read"].call_tokens, calls);
}

#[test]
fn an_edited_message_is_counted_again_not_read_from_its_stale_count() {
    let original = session(false);
    let counter = Arc::new(Counting::default());
    let mut m = meter(&counter);
    m.keep_counts(KeptCounts::default());
    m.measure(&original);
    let kept = round_trip(m.kept_counts().unwrap());

    // The same seqs, but seq 1 holds other text now.
    let edited = session(true);
    let again = Arc::new(Counting::default());
    let mut reopened = meter(&again);
    reopened.keep_counts(kept);
    let measured = reopened.measure(&edited);
    let truth = meter(&Arc::new(Counting::default())).measure(&edited);
    assert_eq!(measured, truth);
    // Only the edited message was tokenized (its text, the tool's name and
    // its arguments), and its kept count was replaced.
    assert_eq!(again.calls.load(Ordering::Relaxed), 3);
    let rebuilt = reopened.kept_counts().unwrap();
    assert!(rebuilt.changed());
    let third = Arc::new(Counting::default());
    let mut later = meter(&third);
    later.keep_counts(round_trip(rebuilt));
    assert_eq!(later.measure(&edited), truth);
    assert_eq!(third.calls.load(Ordering::Relaxed), 0);
}

#[test]
fn counts_for_another_model_are_never_used() {
    let s = session(false);
    let counter = Arc::new(Counting::default());
    let mut m = meter(&counter);
    m.keep_counts(KeptCounts::default());
    m.measure(&s);
    let kept = round_trip(m.kept_counts().unwrap());

    // The same tokenizer billed as Anthropic: another cost model.
    let other = Arc::new(Counting::default());
    let mut anthropic = TokenMeter::new(CostModel::new(other.clone(), ImageBilling::Anthropic));
    anthropic.keep_counts(kept);
    anthropic.measure(&s);
    assert!(other.calls.load(Ordering::Relaxed) > 0);
    let rebuilt = anthropic.kept_counts().unwrap();
    assert!(rebuilt.model().contains("Anthropic"));
    assert_eq!(rebuilt.len(), s.len());
}
