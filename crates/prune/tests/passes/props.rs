//! Property: whatever the session and settings, every pass's rewrites
//! apply as one batch, pairing is never broken, the full and incremental
//! folds agree, and every original stays recoverable.

use abridge_compact::EstimateCounter;
use abridge_compact::check::check_invariants;
use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Role;
use abridge_session::Draft;
use abridge_session::Session;
use proptest::prelude::*;
use serde_json::json;

use crate::testkit::check_pairing;
use abridge_prune::*;

#[derive(Debug, Clone)]
struct Call {
    tool: usize,
    path: usize,
    ranged: bool,
    size: usize,
    fenced: bool,
    is_error: bool,
    useless: bool,
}

const TOOLS: [&str; 5] = ["read", "bash", "skill", "grep", "Read"];
const PATHS: [&str; 3] = ["a.rs", "b.rs", "src/c.rs"];

fn call() -> impl Strategy<Value = Call> {
    (
        0..TOOLS.len(),
        0..PATHS.len(),
        any::<bool>(),
        0usize..4000,
        any::<bool>(),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(tool, path, ranged, size, fenced, is_error, useless)| Call {
                tool,
                path,
                ranged,
                size,
                fenced,
                is_error,
                useless,
            },
        )
}

fn args(call: &Call) -> serde_json::Value {
    let path = PATHS[call.path];
    match TOOLS[call.tool] {
        "read" if call.ranged => json!({"path": format!("{path}:1-20")}),
        "read" => json!({"path": path}),
        "Read" if call.ranged => json!({"file_path": path, "offset": 5, "limit": 10}),
        "Read" => json!({"file_path": path}),
        "bash" => json!({"command": format!("cat {path}")}),
        _ => json!({"q": path}),
    }
}

fn body(call: &Call, index: usize) -> String {
    let filler = "é line of output\n".repeat(call.size / 17 + 1);
    if call.fenced {
        format!("head {index}\n```rust\n{filler}```\n<log>\n{filler}</log>\ntail")
    } else {
        format!("{index}: {filler}")
    }
}

fn build(turns: &[Vec<Call>], checkpoint_after: Option<usize>) -> Session {
    let mut session = Session::in_memory("prop");
    let mut id = 0;
    let mut turn_ends = Vec::new();
    for (t, calls) in turns.iter().enumerate() {
        session
            .append_message(Message::user(format!("turn {t}")))
            .unwrap();
        let mut content = vec![Block::text("working")];
        let mut ids = Vec::new();
        for call in calls {
            let call_id = format!("call{id}");
            id += 1;
            content.push(Block::ToolCall {
                id: call_id.clone(),
                name: TOOLS[call.tool].to_string(),
                arguments: args(call),
            });
            ids.push(call_id);
        }
        session
            .append_message(Message {
                role: Role::Assistant,
                content,
                meta: Meta::default(),
            })
            .unwrap();
        for (call, call_id) in calls.iter().zip(&ids) {
            let message =
                Message::tool_result(call_id, body(call, id), call.is_error).with_meta(Meta {
                    useless: call.useless,
                    ..Meta::default()
                });
            session.append_message(message).unwrap();
        }
        turn_ends.push(session.surface().len() - 1);
    }
    if let Some(k) = checkpoint_after
        && let Some(&end) = turn_ends.get(k)
    {
        {
            let hidden = session.surface().seqs()[..=end].to_vec();
            session
                .append(Draft::replace(
                    Message::user("[checkpoint] earlier work"),
                    0,
                    end,
                    hidden,
                ))
                .unwrap();
        }
    }
    session
}

fn settings() -> impl Strategy<Value = (PruneConfig, ShakeConfig, PassContext)> {
    (
        0u64..3000,
        0u64..3000,
        0u64..120,
        0u64..4000,
        0u64..3000,
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(protect, saving, floor, tail, keep, per_turn, record)| {
            let prune = PruneConfig {
                protect_tokens: protect,
                min_saving_tokens: saving,
                min_result_tokens: floor,
                cache_tail_tokens: tail,
                ..PruneConfig::default()
            };
            let shake = ShakeConfig {
                keep_recent_tokens: keep,
                cache_tail_tokens: tail,
                images: if record {
                    ImagePolicy::Record
                } else {
                    ImagePolicy::Keep
                },
                ..ShakeConfig::preset(ShakePreset::Rescue)
            };
            let context = if per_turn {
                PassContext::per_turn(None, None)
            } else {
                PassContext::compaction()
            };
            (prune, shake, context)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn passes_never_break_pairing(
        turns in prop::collection::vec(prop::collection::vec(call(), 0..4), 1..10),
        checkpoint_after in prop::option::of(0usize..4),
        (prune_config, shake_config, context) in settings(),
    ) {
        let mut session = build(&turns, checkpoint_after);
        let answered = check_pairing(&session);
        let before: Vec<Message> = session.surface_messages().iter().map(|m| (**m).clone()).collect();
        let counter = EstimateCounter::new();
        let trim_config = TrimConfig { max_chars: 600, head_chars: 300, tail_chars: 100, ..TrimConfig::default() };

        for pass in 0..3 {
            let snapshot = Snapshot::of_session(&session, &counter);
            let reclaim = match pass {
                0 => prune(&snapshot, &prune_config, &context, &counter),
                1 => shake(&snapshot, &shake_config, &context, &counter),
                _ => trim(&snapshot, &trim_config, &context, &counter).unwrap(),
            };
            for note in &reclaim.report.rewrites {
                prop_assert!(note.tokens_after < note.tokens_before);
            }
            session.append_batch(reclaim.drafts()).unwrap();
            prop_assert_eq!(&check_pairing(&session), &answered);
            prop_assert_eq!(session.fold_full(), session.surface().clone());
            prop_assert!(check_invariants(&session).is_ok());
        }

        // Every original is one walk away and unchanged.
        for (seq, original) in session.surface().seqs().iter().zip(&before) {
            let source = original_of(&session, *seq);
            prop_assert_eq!(&**session.message(source).unwrap(), original);
        }
    }
}
