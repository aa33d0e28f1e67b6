//! Passes over whole sessions: thresholds at, below and above their
//! limits, protected tools, superseded reads, useless results, the cache
//! guard, checkpoints, restore, shake and trim.

use std::collections::BTreeSet;
use std::time::Duration;

use abridge_compact::EstimateCounter;
use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_meter::estimate_tokens;
use abridge_session::Draft;
use abridge_session::Reference;
use abridge_session::Seq;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::testkit::Builder;
use crate::testkit::check_pairing;
use crate::testkit::result_text;
use crate::testkit::text_for;
use abridge_prune::*;

fn run_prune(b: &Builder, config: &PruneConfig) -> Reclaim {
    prune(
        &Snapshot::of_session(&b.session, &EstimateCounter::new()),
        config,
        &PassContext::compaction(),
        &EstimateCounter::new(),
    )
}

fn targets(reclaim: &Reclaim, rule: Rule) -> BTreeSet<Seq> {
    reclaim
        .report
        .rewrites
        .iter()
        .filter(|r| r.rule == rule)
        .map(|r| r.target)
        .collect()
}

fn loose() -> PruneConfig {
    PruneConfig {
        protect_tokens: 0,
        min_saving_tokens: 0,
        ..PruneConfig::default()
    }
}

/// Five bash results of 100 tokens each, oldest first.
fn five_outputs() -> (Builder, Vec<Seq>) {
    let mut b = Builder::new();
    let seqs = (0..5).map(|_| b.output(100)).collect();
    (b, seqs)
}

#[test]
fn protection_at_below_and_above_the_budget() {
    let (b, r) = five_outputs();
    let with = |protect| {
        let config = PruneConfig {
            protect_tokens: protect,
            ..loose()
        };
        targets(&run_prune(&b, &config), Rule::Pruned)
    };
    // r[2], r[3], r[4] are the newest 300 tokens; r[1] has exactly 300
    // newer tokens after it.
    assert_eq!(with(300), BTreeSet::from([r[0], r[1]]));
    assert_eq!(with(299), BTreeSet::from([r[0], r[1]]));
    assert_eq!(with(301), BTreeSet::from([r[0]]));
    assert_eq!(with(0), r.iter().copied().collect());
}

#[test]
fn minimum_saving_at_below_and_above() {
    let (b, _) = five_outputs();
    let all = run_prune(&b, &loose());
    let saving = all.report.saved();
    assert!(saving > 0);
    let with = |min| {
        run_prune(
            &b,
            &PruneConfig {
                min_saving_tokens: min,
                ..loose()
            },
        )
    };
    assert_eq!(with(saving).report.saved(), saving);
    assert_eq!(with(saving - 1).report.saved(), saving);
    let above = with(saving + 1);
    assert!(above.is_empty());
    assert_eq!(above.report.below_minimum_saving, saving);
}

#[test]
fn defaults_protect_40k_and_require_20k() {
    let mut b = Builder::new();
    let old: Vec<Seq> = (0..4).map(|_| b.output(5_000)).collect();
    let _recent: Vec<Seq> = (0..8).map(|_| b.output(5_000)).collect();
    // 20000 old tokens less four placeholders saves just under 20000.
    let reclaim = run_prune(&b, &PruneConfig::default());
    assert!(reclaim.is_empty());
    assert!(reclaim.report.below_minimum_saving > 19_000);
    let mut b2 = Builder::new();
    let old2: Vec<Seq> = (0..5).map(|_| b2.output(5_000)).collect();
    for _ in 0..8 {
        b2.output(5_000);
    }
    let reclaim = run_prune(&b2, &PruneConfig::default());
    assert_eq!(targets(&reclaim, Rule::Pruned), old2.into_iter().collect());
    assert!(reclaim.report.saved() >= 20_000);
    let _ = old;
}

#[test]
fn result_size_floor_at_below_and_above() {
    for (tokens, pruned) in [(49, false), (50, true), (51, true)] {
        let mut b = Builder::new();
        let seq = b.output(tokens);
        let reclaim = run_prune(&b, &loose());
        assert_eq!(
            targets(&reclaim, Rule::Pruned).contains(&seq),
            pruned,
            "{tokens} tokens"
        );
    }
}

#[test]
fn pruned_placeholder_is_exact_and_keeps_the_call_id() {
    let (mut b, r) = five_outputs();
    let reclaim = run_prune(&b, &loose());
    b.session.append_batch(reclaim.drafts()).unwrap();
    let visible = b.session.surface().seqs()[2];
    assert_ne!(visible, r[0]);
    assert_eq!(
        result_text(&b.session, visible),
        placeholder::pruned(r[0], 100)
    );
    let message = b.session.message(visible).unwrap();
    assert_eq!(message.tool_result_block().unwrap().0, "c0");
    assert_eq!(check_pairing(&b.session), ["c0", "c1", "c2", "c3", "c4"]);
}

#[test]
fn protected_tools_are_never_touched() {
    let mut b = Builder::new();
    let text = text_for("c0", 500);
    let skill = b.call("Skill", json!({"name": "x"}), &text);
    let plan = b.call("update_plan", json!({}), &text_for("c1", 500));
    let other = b.call("grep", json!({}), &text_for("c2", 500));
    let custom = b.call("notes", json!({}), &text_for("c3", 500));
    let reclaim = run_prune(&b, &loose());
    assert_eq!(
        targets(&reclaim, Rule::Pruned),
        BTreeSet::from([other, custom])
    );
    let mut config = loose();
    config.protected_tools.push("NOTES".into());
    assert_eq!(
        targets(&run_prune(&b, &config), Rule::Pruned),
        BTreeSet::from([other])
    );
    let _ = (skill, plan);
}

#[allow(clippy::needless_pass_by_value)]
fn read(b: &mut Builder, path: &str, extra: serde_json::Value) -> Seq {
    let mut args = json!({ "path": path });
    if let (Some(args), Some(extra)) = (args.as_object_mut(), extra.as_object()) {
        args.extend(extra.clone());
    }
    b.call("read", args, &"line of code\n".repeat(40))
}

fn superseded_of(b: &Builder) -> BTreeSet<Seq> {
    let config = PruneConfig {
        old_outputs: false,
        ..PruneConfig::default()
    };
    targets(&run_prune(b, &config), Rule::Superseded)
}

#[test]
fn full_read_supersedes_ranged_but_not_the_reverse() {
    let mut b = Builder::new();
    let ranged = read(&mut b, "src/a.rs:10-20", json!({}));
    let full = read(&mut b, "src/a.rs", json!({}));
    let ranged_after = read(&mut b, "./src/a.rs", json!({"offset": 5, "limit": 10}));
    assert_eq!(superseded_of(&b), BTreeSet::from([ranged]));
    let _ = (full, ranged_after);
}

#[test]
fn later_full_read_supersedes_earlier_full_read() {
    let mut b = Builder::new();
    let first = read(&mut b, "a.rs", json!({}));
    let _other_file = read(&mut b, "b.rs", json!({}));
    let second = read(&mut b, "a.rs", json!({}));
    assert_eq!(superseded_of(&b), BTreeSet::from([first]));
    let reclaim = run_prune(
        &b,
        &PruneConfig {
            old_outputs: false,
            ..PruneConfig::default()
        },
    );
    let tokens = reclaim.report.rewrites[0].tokens_before;
    b.session.append_batch(reclaim.drafts()).unwrap();
    let visible = b.session.surface().seqs()[2];
    assert_eq!(
        result_text(&b.session, visible),
        placeholder::superseded(first, "a.rs", tokens)
    );
    let _ = second;
}

/// Issue 16, point 13: the read that supersedes another is the copy the
/// placeholder points the model to, so the same pass must not prune it as
/// an old output (nor blank it as useless). The accepted snapshot
/// `what_the_model_sees_after_prune_then_shake` showed both reads gone.
#[test]
fn the_read_that_supersedes_another_is_never_pruned_in_the_same_pass() {
    let mut b = Builder::new();
    let first = read(&mut b, "src/lib.rs", json!({}));
    let second = read(&mut b, "src/lib.rs", json!({}));
    let newest = b.output(100);
    // Everything but the newest output is old enough to prune.
    let config = PruneConfig {
        protect_tokens: 50,
        min_saving_tokens: 0,
        ..PruneConfig::default()
    };
    let reclaim = run_prune(&b, &config);
    assert_eq!(targets(&reclaim, Rule::Superseded), BTreeSet::from([first]));
    let touched: BTreeSet<Seq> = reclaim.report.rewrites.iter().map(|r| r.target).collect();
    assert!(!touched.contains(&second), "{touched:?}");
    assert!(!touched.contains(&newest), "{touched:?}");
    b.session.append_batch(reclaim.drafts()).unwrap();
    assert_eq!(result_text(&b.session, second), "line of code\n".repeat(40));

    // Without an earlier read to supersede, the same read is an old output
    // like any other.
    let mut alone = Builder::new();
    let only = read(&mut alone, "src/lib.rs", json!({}));
    alone.output(100);
    assert_eq!(
        targets(&run_prune(&alone, &config), Rule::Pruned),
        BTreeSet::from([only])
    );
}

#[test]
fn a_read_already_replaced_by_a_placeholder_supersedes_nothing() {
    let mut b = Builder::new();
    let first = read(&mut b, "a.rs", json!({}));
    let second = read(&mut b, "a.rs", json!({}));
    assert_eq!(superseded_of(&b), BTreeSet::from([first]));
    let call_id = b
        .session
        .message(second)
        .and_then(|m| m.tool_result_block())
        .map(|(id, _, _)| id.to_string())
        .unwrap();
    b.session
        .append(Draft::rewrite(
            Message::tool_result(call_id, placeholder::pruned(second, 200), false),
            second,
        ))
        .unwrap();
    assert_eq!(superseded_of(&b), BTreeSet::new());
}

#[test]
fn ranges_supersede_only_ranges_they_contain() {
    let mut b = Builder::new();
    let inner = read(&mut b, "a.rs", json!({"offset": 10, "limit": 5}));
    let outer_before = read(&mut b, "a.rs", json!({"offset": 1, "limit": 100}));
    let _outer = read(&mut b, "a.rs", json!({"offset": 1, "limit": 200}));
    let _disjoint = read(&mut b, "a.rs", json!({"offset": 500, "limit": 5}));
    assert_eq!(superseded_of(&b), BTreeSet::from([inner, outer_before]));
}

#[test]
fn failed_reads_supersede_nothing_and_are_kept() {
    let mut b = Builder::new();
    let first = read(&mut b, "a.rs", json!({}));
    b.call_with(
        "read",
        json!({"path": "a.rs"}),
        &"no such file\n".repeat(30),
        true,
        false,
    );
    assert_eq!(superseded_of(&b), BTreeSet::new());
    let _ = first;
}

#[test]
fn shell_and_other_agents_reads_are_recognised() {
    let mut b = Builder::new();
    let sed = b.call(
        "Bash",
        json!({"command": "sed -n '1,40p' lib/x.ex"}),
        &"y\n".repeat(200),
    );
    let claude = b.call(
        "Read",
        json!({"file_path": "lib/x.ex", "offset": 1, "limit": 40}),
        &"y\n".repeat(200),
    );
    let codex = b.call(
        "shell",
        json!({"command": ["bash", "-lc", "cat lib/x.ex"]}),
        &"y\n".repeat(200),
    );
    assert_eq!(superseded_of(&b), BTreeSet::from([sed, claude]));
    let _ = codex;
}

#[test]
fn useless_results_are_blanked_but_errors_never() {
    let mut b = Builder::new();
    let useless = b.call_with(
        "grep",
        json!({}),
        &"nothing found\n".repeat(10),
        false,
        true,
    );
    let error = b.call_with("grep", json!({}), &"bad regex\n".repeat(10), true, true);
    let config = PruneConfig {
        old_outputs: false,
        ..PruneConfig::default()
    };
    let reclaim = run_prune(&b, &config);
    assert_eq!(targets(&reclaim, Rule::Useless), BTreeSet::from([useless]));
    b.session.append_batch(reclaim.drafts()).unwrap();
    let visible = b.session.surface().seqs()[2];
    assert_eq!(
        result_text(&b.session, visible),
        placeholder::useless(useless)
    );
    assert!(b.session.surface().contains(error));
}

#[test]
fn cache_guard_holds_old_rewrites_until_the_cache_is_cold() {
    let mut b = Builder::new();
    let stale = read(&mut b, "a.rs", json!({}));
    read(&mut b, "a.rs", json!({}));
    let config = PruneConfig {
        old_outputs: false,
        cache_tail_tokens: 100,
        ..PruneConfig::default()
    };
    let pass = |b: &Builder, context: PassContext| {
        prune(
            &Snapshot::of_session(&b.session, &EstimateCounter::new()),
            &config,
            &context,
            &EstimateCounter::new(),
        )
    };
    // About 150 tokens follow the stale read: over the guard of 100.
    let warm = pass(
        &b,
        PassContext::per_turn(
            Some(Duration::from_secs(10)),
            Some(Duration::from_secs(300)),
        ),
    );
    assert!(warm.is_empty());
    assert_eq!(warm.report.held_for_cache, 1);
    let cold = pass(
        &b,
        PassContext::per_turn(
            Some(Duration::from_secs(301)),
            Some(Duration::from_secs(300)),
        ),
    );
    assert_eq!(targets(&cold, Rule::Superseded), BTreeSet::from([stale]));
    assert_eq!(
        targets(&pass(&b, PassContext::compaction()), Rule::Superseded),
        BTreeSet::from([stale])
    );
    let roomy = PruneConfig {
        cache_tail_tokens: 8_000,
        ..config.clone()
    };
    let near_tail = prune(
        &Snapshot::of_session(&b.session, &EstimateCounter::new()),
        &roomy,
        &PassContext::per_turn(None, None),
        &EstimateCounter::new(),
    );
    assert_eq!(
        targets(&near_tail, Rule::Superseded),
        BTreeSet::from([stale])
    );
}

#[test]
fn what_a_checkpoint_hides_and_checkpoints_are_never_touched() {
    let (mut b, r) = five_outputs();
    // Hide the first two calls and results behind a checkpoint.
    let hidden: Vec<Seq> = b.session.surface().seqs()[1..5].to_vec();
    b.session
        .append(Draft::replace(
            Message {
                role: Role::User,
                content: vec![Block::text("summary ".repeat(400))],
                meta: Meta {
                    origin: Some(Origin::Checkpoint {
                        compaction_id: "k1".into(),
                        method: "soft".into(),
                    }),
                    ..Meta::default()
                },
            },
            1,
            4,
            hidden,
        ))
        .unwrap();
    let reclaim = run_prune(&b, &loose());
    assert_eq!(
        targets(&reclaim, Rule::Pruned),
        BTreeSet::from([r[2], r[3], r[4]])
    );
    b.session.append_batch(reclaim.drafts()).unwrap();
    assert_eq!(check_pairing(&b.session), ["c2", "c3", "c4"]);
}

#[test]
fn elided_results_are_left_alone_by_the_next_pass() {
    let (mut b, _) = five_outputs();
    let reclaim = run_prune(&b, &loose());
    b.session.append_batch(reclaim.drafts()).unwrap();
    let again = run_prune(
        &b,
        &PruneConfig {
            min_result_tokens: 0,
            ..loose()
        },
    );
    assert!(again.is_empty(), "{:?}", again.report);
}

#[test]
fn restore_brings_back_the_original_bytes() {
    let (mut b, r) = five_outputs();
    let original = (**b.session.message(r[0]).unwrap()).clone();
    let reclaim = run_prune(&b, &loose());
    let written = b.session.append_batch(reclaim.drafts()).unwrap();
    assert_eq!(original_of(&b.session, written[0]), r[0]);
    let draft = restore(&b.session, written[0]).unwrap();
    let restored = b.session.append(draft).unwrap();
    assert_eq!(**b.session.message(restored).unwrap(), original);
    assert_eq!(b.session.surface().seqs()[2], restored);
    assert!(
        restore(&b.session, r[1]).is_none(),
        "r[1] is hidden, not visible"
    );
}

fn shake_with(b: &Builder, config: &ShakeConfig) -> Reclaim {
    shake(
        &Snapshot::of_session(&b.session, &EstimateCounter::new()),
        config,
        &PassContext::compaction(),
        &EstimateCounter::new(),
    )
}

fn shake_rescue(b: &Builder) -> Reclaim {
    shake_with(
        b,
        &ShakeConfig {
            keep_recent_tokens: 50,
            ..ShakeConfig::preset(ShakePreset::Rescue)
        },
    )
}

/// Every recall reference in `text`.
fn references_in(text: &str) -> Vec<Reference> {
    text.split(|c: char| c.is_whitespace() || c == ')' || c == ']')
        .filter(|w| w.starts_with(abridge_session::RECALL_SCHEME))
        .map(|w| w.parse().unwrap())
        .collect()
}

/// What a reference names, read from the log as the recall tool reads it:
/// the event's tool result text, or characters of it.
fn read_back(session: &abridge_session::Session, reference: Reference) -> String {
    let (seq, range) = match reference {
        Reference::Event(seq) => (seq, None),
        Reference::Part { seq, start, end } => (seq, Some((start, end))),
        Reference::Range { .. } => panic!("a placeholder names one result"),
    };
    let message = session.message(seq).unwrap();
    let text = abridge_prune::result_text(message.tool_result_block().unwrap().1);
    match range {
        None => text,
        Some((start, end)) => text.chars().skip(start).take(end - start).collect(),
    }
}

#[test]
fn shake_moves_a_large_result_whole_and_reads_it_back() {
    let mut b = Builder::new();
    let big_text = "αβγ log line\n".repeat(200);
    let big = b.call("bash", json!({"command": "make"}), &big_text);
    b.say("recent ".repeat(100).as_str());
    let reclaim = shake_rescue(&b);
    assert_eq!(targets(&reclaim, Rule::Shaken), BTreeSet::from([big]));
    b.session.append_batch(reclaim.drafts()).unwrap();
    let visible = b.session.surface().seqs()[2];
    let text = result_text(&b.session, visible);
    let references = references_in(&text);
    let reference = references[0];
    assert_eq!(
        reference,
        Reference::Part {
            seq: big,
            start: 0,
            end: big_text.chars().count()
        }
    );
    assert_eq!(read_back(&b.session, reference), big_text);
    assert_eq!(
        text,
        placeholder::shaken("tool output", reference, estimate_tokens(big_text.len()))
    );
}

#[test]
fn shake_moves_fenced_and_xml_blocks_and_keeps_the_rest() {
    let mut b = Builder::new();
    let fence = format!("```rust\n{}```", "let x = 1; // é\n".repeat(80));
    let xml = format!("<file path=\"a\">\n{}</file>", "data\n".repeat(150));
    let text = format!("before\n{fence}\nmiddle\n{xml}\nafter");
    // Under the whole-result size, so blocks move one by one.
    let config = ShakeConfig {
        keep_recent_tokens: 10,
        min_result_tokens: 100_000,
        min_block_tokens: 150,
        ..ShakeConfig::preset(ShakePreset::Manual)
    };
    let seq = b.call("bash", json!({"command": "cat a"}), &text);
    b.say("and now the next step");
    let reclaim = shake_with(&b, &config);
    assert_eq!(targets(&reclaim, Rule::Shaken), BTreeSet::from([seq]));
    b.session.append_batch(reclaim.drafts()).unwrap();
    let visible = b.session.surface().seqs()[2];
    let shaken = result_text(&b.session, visible);
    assert!(
        shaken.starts_with("before\n[abridge: fenced rust code block ("),
        "{shaken}"
    );
    assert!(
        shaken.contains("\nmiddle\n[abridge: <file> block ("),
        "{shaken}"
    );
    assert!(
        shaken.ends_with("(the recall tool reads it)]\nafter"),
        "{shaken}"
    );
    let refs = references_in(&shaken);
    assert_eq!(refs.len(), 2);
    assert_eq!(read_back(&b.session, refs[0]), fence);
    assert_eq!(read_back(&b.session, refs[1]), xml);
    // The call's arguments are untouched.
    let call = b.session.message(b.session.surface().seqs()[1]).unwrap();
    assert_eq!(
        call.tool_calls().next().unwrap().2,
        &json!({"command": "cat a"})
    );
}

/// A call of `name` answered by a result of `content`; the result's seq.
fn call_with_blocks(b: &mut Builder, name: &str, content: Vec<Block>) -> Seq {
    let id = format!("blocks{}", b.session.len());
    b.session
        .append_message(Message {
            role: Role::Assistant,
            content: vec![Block::ToolCall {
                id: id.clone(),
                name: name.into(),
                arguments: json!({}),
            }],
            meta: Meta::default(),
        })
        .unwrap();
    b.session
        .append_message(Message {
            role: Role::Tool,
            content: vec![Block::ToolResult {
                call_id: id,
                content,
                is_error: false,
            }],
            meta: Meta::default(),
        })
        .unwrap()
}

#[test]
fn shake_offsets_count_characters_across_text_blocks() {
    let mut b = Builder::new();
    let first = "première ligne\n".repeat(3);
    let fence = format!("```\n{}```", "ünïcode\n".repeat(200));
    let seq = call_with_blocks(
        &mut b,
        "bash",
        vec![Block::text(first), Block::text(fence.clone())],
    );
    b.say("next");
    let config = ShakeConfig {
        keep_recent_tokens: 1,
        min_result_tokens: 100_000,
        min_block_tokens: 50,
        ..ShakeConfig::preset(ShakePreset::Manual)
    };
    let reclaim = shake_with(&b, &config);
    assert_eq!(reclaim.rewrites.len(), 1);
    b.session.append_batch(reclaim.drafts()).unwrap();
    let shaken = result_text(&b.session, b.session.surface().seqs()[2]);
    let refs = references_in(&shaken);
    assert_eq!(refs.len(), 1, "{shaken}");
    assert_eq!(refs[0].seqs(), (seq, seq));
    assert_eq!(read_back(&b.session, refs[0]), fence);
}

#[test]
fn shake_leaves_recent_protected_and_small_results() {
    let mut b = Builder::new();
    let skill = b.call("skill", json!({}), &"s".repeat(4000));
    let small = b.call("bash", json!({}), "ok");
    let recent = b.call("bash", json!({}), &"r".repeat(4000));
    let config = ShakeConfig {
        keep_recent_tokens: 500,
        ..ShakeConfig::preset(ShakePreset::Rescue)
    };
    let reclaim = shake_with(&b, &config);
    assert!(reclaim.is_empty(), "{:?}", reclaim.report);
    let _ = (skill, small, recent);
}

fn image_result(b: &mut Builder) -> (Seq, Block) {
    let image = Block::Image {
        source: ImageSource::Base64 {
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        },
        width: Some(2),
        height: Some(3),
    };
    let seq = call_with_blocks(
        b,
        "screenshot",
        vec![Block::text("pixels ".repeat(400)), image.clone()],
    );
    b.say(&"later ".repeat(100));
    (seq, image)
}

#[test]
fn shake_keeps_images_or_records_them_never_drops_them() {
    for policy in [ImagePolicy::Keep, ImagePolicy::Record] {
        let mut b = Builder::new();
        let (seq, image) = image_result(&mut b);
        let config = ShakeConfig {
            keep_recent_tokens: 50,
            images: policy,
            ..ShakeConfig::preset(ShakePreset::Rescue)
        };
        let reclaim = shake_with(&b, &config);
        assert_eq!(reclaim.rewrites.len(), 1, "{policy:?}");
        b.session.append_batch(reclaim.drafts()).unwrap();
        let message = b.session.message(b.session.surface().seqs()[2]).unwrap();
        let content = message.tool_result_block().unwrap().1;
        match policy {
            ImagePolicy::Keep => {
                assert_eq!(content.last(), Some(&image));
                assert_eq!(reclaim.report.images_recorded, 0);
            }
            ImagePolicy::Record => {
                assert!(!content.iter().any(|b| matches!(b, Block::Image { .. })));
                let text = content[1].as_text().unwrap();
                assert_eq!(
                    text,
                    placeholder::shaken_image("image (image/png, 2x3)", Reference::Event(seq))
                );
                // The original result, which the reference names, still
                // holds the image.
                let original = b.session.message(seq).unwrap();
                assert_eq!(original.tool_result_block().unwrap().1.last(), Some(&image));
                assert_eq!(reclaim.report.images_recorded, 1);
            }
        }
    }
}

#[test]
fn shake_writes_nothing_beside_the_session_and_the_log_keeps_every_original() {
    let mut b = Builder::new();
    let first = "first\n".repeat(300);
    let second = "second\n".repeat(300);
    let a = b.call("bash", json!({}), &first);
    let c = b.call("bash", json!({}), &second);
    b.say(&"later ".repeat(100));
    let reclaim = shake_rescue(&b);
    assert_eq!(reclaim.rewrites.len(), 2);
    assert_eq!(reclaim.report.artifact, None);
    b.session.append_batch(reclaim.drafts()).unwrap();
    let texts: Vec<String> = [2, 4]
        .iter()
        .map(|i| result_text(&b.session, b.session.surface().seqs()[*i]))
        .collect();
    assert_eq!(read_back(&b.session, references_in(&texts[0])[0]), first);
    assert_eq!(read_back(&b.session, references_in(&texts[1])[0]), second);
    assert_eq!(references_in(&texts[0])[0].seqs().0, a);
    assert_eq!(references_in(&texts[1])[0].seqs().0, c);
}

#[test]
fn trim_over_the_limit_keeps_head_and_tail() {
    let mut b = Builder::new();
    let at = b.call("bash", json!({}), &"a".repeat(8192));
    let over_text = format!(
        "{}{}{}",
        "h".repeat(4096),
        "m".repeat(5000),
        "t".repeat(1024)
    );
    let over = b.call("bash", json!({}), &over_text);
    let reclaim = trim(
        &Snapshot::of_session(&b.session, &EstimateCounter::new()),
        &TrimConfig::default(),
        &PassContext::compaction(),
        &EstimateCounter::new(),
    )
    .unwrap();
    assert_eq!(targets(&reclaim, Rule::Trimmed), BTreeSet::from([over]));
    b.session.append_batch(reclaim.drafts()).unwrap();
    let visible = *b.session.surface().seqs().last().unwrap();
    assert_eq!(
        result_text(&b.session, visible),
        format!(
            "{}{}{}",
            "h".repeat(4096),
            placeholder::trim_marker(5000),
            "t".repeat(1024)
        )
    );
    let _ = at;
}

/// One line per visible message, as the model would read it.
fn render_surface(session: &abridge_session::Session) -> String {
    let mut out = String::new();
    for (i, message) in session.surface_messages().iter().enumerate() {
        let text = match message.tool_result_block() {
            Some((id, content, is_error)) => {
                let body: Vec<String> = content
                    .iter()
                    .map(|b| match b {
                        Block::Text { text } => text.clone(),
                        Block::Image { .. } => "<image>".to_string(),
                        _ => "<block>".to_string(),
                    })
                    .collect();
                format!(
                    "{id}{}: {}",
                    if is_error { " (error)" } else { "" },
                    body.join(" | ")
                )
            }
            None => {
                let calls: Vec<String> = message
                    .tool_calls()
                    .map(|(id, name, args)| format!("{name}#{id}({args})"))
                    .collect();
                if calls.is_empty() {
                    message.plain_text()
                } else {
                    calls.join(" ")
                }
            }
        };
        let mut line: String = text.replace('\n', "⏎");
        if line.chars().count() > 160 {
            line = format!("{}…", line.chars().take(160).collect::<String>());
        }
        out.push_str(&format!("{i:02}:{}:{line}\n", message.role));
    }
    out
}

#[test]
fn what_the_model_sees_after_prune_then_shake() {
    let mut b = Builder::new();
    read(&mut b, "src/lib.rs", json!({}));
    b.call_with(
        "grep",
        json!({"pattern": "todo"}),
        &"no matches\n".repeat(8),
        false,
        true,
    );
    b.call(
        "bash",
        json!({"command": "cargo test"}),
        &"test log line\n".repeat(400),
    );
    read(&mut b, "src/lib.rs", json!({}));
    b.call(
        "bash",
        json!({"command": "cat notes.md"}),
        &format!("notes\n```toml\n{}```\nend", "key = 1\n".repeat(300)),
    );
    b.say(&"and the latest request, with enough words to keep ".repeat(20));
    let counter = EstimateCounter::new();
    let config = PruneConfig {
        protect_tokens: 500,
        min_saving_tokens: 0,
        ..PruneConfig::default()
    };
    let pruned = prune(
        &Snapshot::of_session(&b.session, &counter),
        &config,
        &PassContext::compaction(),
        &counter,
    );
    b.session.append_batch(pruned.drafts()).unwrap();
    let shake_config = ShakeConfig {
        keep_recent_tokens: 200,
        min_result_tokens: 5_000,
        min_block_tokens: 200,
        ..ShakeConfig::preset(ShakePreset::Manual)
    };
    let shaken = shake(
        &Snapshot::of_session(&b.session, &counter),
        &shake_config,
        &PassContext::compaction(),
        &counter,
    );
    b.session.append_batch(shaken.drafts()).unwrap();
    insta::assert_snapshot!(render_surface(&b.session));
}

#[test]
fn shake_thresholds_at_below_and_above() {
    let mut b = Builder::new();
    let text = text_for("c0", 600);
    let seq = b.call("bash", json!({}), &text);
    let after = b.say("a later message");
    let after_tokens = EstimateCounter::estimate(b.session.message(after).unwrap());
    let counter = EstimateCounter::new();
    let run = |keep: u64, whole: u64| {
        let config = ShakeConfig {
            keep_recent_tokens: keep,
            min_result_tokens: whole,
            min_block_tokens: 1,
            ..ShakeConfig::preset(ShakePreset::Manual)
        };
        let snapshot = Snapshot::of_session(&b.session, &counter);
        targets(
            &shake(&snapshot, &config, &PassContext::compaction(), &counter),
            Rule::Shaken,
        )
    };
    // Keep recent: the result is older when at least that many tokens follow.
    assert_eq!(run(after_tokens - 1, 600), BTreeSet::from([seq]));
    assert_eq!(run(after_tokens, 600), BTreeSet::from([seq]));
    assert_eq!(run(after_tokens + 1, 600), BTreeSet::new());
    // Whole-result size: 600 tokens moves at 599 and 600, not at 601 (and
    // the text has no blocks to move instead).
    assert_eq!(run(0, 599), BTreeSet::from([seq]));
    assert_eq!(run(0, 600), BTreeSet::from([seq]));
    assert_eq!(run(0, 601), BTreeSet::new());

    // Block size: a fence of exactly `fence_tokens` moves at that minimum.
    // A fresh counter: this session has the first one's id (`test`), and
    // counters tell sessions apart by id.
    let mut b = Builder::new();
    let counter = EstimateCounter::new();
    let fence = format!("```\n{}```", "0123456789abcdef\n".repeat(40));
    let fence_tokens = estimate_tokens(fence.len());
    let seq = b.call("bash", json!({}), &format!("intro\n{fence}\noutro"));
    b.say("a later message");
    let run = |min_block: u64| {
        let config = ShakeConfig {
            keep_recent_tokens: 1,
            min_result_tokens: 100_000,
            min_block_tokens: min_block,
            ..ShakeConfig::preset(ShakePreset::Manual)
        };
        let snapshot = Snapshot::of_session(&b.session, &counter);
        targets(
            &shake(&snapshot, &config, &PassContext::compaction(), &counter),
            Rule::Shaken,
        )
    };
    assert_eq!(run(fence_tokens - 1), BTreeSet::from([seq]));
    assert_eq!(run(fence_tokens), BTreeSet::from([seq]));
    assert_eq!(run(fence_tokens + 1), BTreeSet::new());
}

#[test]
fn per_turn_shake_respects_the_cache_guard() {
    let mut b = Builder::new();
    b.call("bash", json!({}), &"log\n".repeat(2_000));
    b.say(&"words ".repeat(400));
    let config = ShakeConfig {
        keep_recent_tokens: 10,
        cache_tail_tokens: 100,
        ..ShakeConfig::preset(ShakePreset::Rescue)
    };
    let counter = EstimateCounter::new();
    let snapshot = Snapshot::of_session(&b.session, &counter);
    let warm = shake(
        &snapshot,
        &config,
        &PassContext::per_turn(None, None),
        &counter,
    );
    assert!(warm.is_empty());
    assert_eq!(warm.report.held_for_cache, 1);
    let cold = PassContext::per_turn(
        Some(Duration::from_secs(3600)),
        Some(Duration::from_secs(300)),
    );
    assert_eq!(shake(&snapshot, &config, &cold, &counter).rewrites.len(), 1);
}

fn run_mask(b: &Builder, config: &MaskConfig, context: &PassContext) -> Reclaim {
    let counter = EstimateCounter::new();
    mask(
        &Snapshot::of_session(&b.session, &counter),
        config,
        context,
        &counter,
    )
}

fn keep(n: usize) -> MaskConfig {
    MaskConfig {
        keep: n,
        ..MaskConfig::default()
    }
}

#[test]
fn mask_keeps_the_newest_n_results_and_masks_the_rest() {
    let mut b = Builder::new();
    let results: Vec<Seq> = (0..6).map(|_| b.output(100)).collect();
    b.say("next");
    let reclaim = run_mask(&b, &keep(4), &PassContext::compaction());
    assert_eq!(
        targets(&reclaim, Rule::Masked),
        BTreeSet::from([results[0], results[1]])
    );
    // At the boundary: keeping all six, or more, masks nothing.
    assert!(run_mask(&b, &keep(6), &PassContext::compaction()).is_empty());
    assert!(run_mask(&b, &keep(7), &PassContext::compaction()).is_empty());
    assert_eq!(
        targets(
            &run_mask(&b, &keep(5), &PassContext::compaction()),
            Rule::Masked
        ),
        BTreeSet::from([results[0]])
    );
}

#[test]
fn mask_leaves_tiny_and_protected_results_but_counts_them_as_newer() {
    let mut b = Builder::new();
    let tiny = b.call("bash", json!({}), "ok");
    let skill = b.call("skill", json!({"name": "x"}), &text_for("c1", 300));
    let big = b.output(300);
    let _newest = b.output(100);
    let reclaim = run_mask(&b, &keep(1), &PassContext::compaction());
    assert_eq!(targets(&reclaim, Rule::Masked), BTreeSet::from([big]));
    let _ = (tiny, skill);
    // The minimum is inclusive: a result of exactly 50 tokens is masked,
    // one of 49 is not.
    let mut b = Builder::new();
    let at = b.output(50);
    let below = b.output(49);
    b.output(100);
    let reclaim = run_mask(&b, &keep(1), &PassContext::compaction());
    assert_eq!(targets(&reclaim, Rule::Masked), BTreeSet::from([at]));
    let _ = below;
}

#[test]
fn mask_writes_rewrites_whose_references_read_the_original_back() {
    let mut b = Builder::new();
    let old = b.output(200);
    let original = result_text(&b.session, old);
    b.output(100);
    let reclaim = run_mask(&b, &keep(1), &PassContext::compaction());
    let seqs = b.session.append_batch(reclaim.drafts()).unwrap();
    assert_eq!(seqs.len(), 1);
    let event = b.session.event(seqs[0]).unwrap().message_event().unwrap();
    assert_eq!(
        event.op,
        abridge_session::SurfaceOp::Rewrite { target: old }
    );
    let visible = b.session.surface().seqs()[2];
    let text = result_text(&b.session, visible);
    assert_eq!(text, placeholder::masked(old, 200));
    assert!(is_placeholder(&text));
    let reference = placeholder_reference(&text).unwrap();
    assert_eq!(reference, Reference::Event(old));
    assert_eq!(read_back(&b.session, reference), original);
    assert_eq!(check_pairing(&b.session), ["c0", "c1"]);
}

#[test]
fn a_second_mask_pass_rewrites_nothing_new() {
    let mut b = Builder::new();
    for _ in 0..5 {
        b.output(120);
    }
    let first = run_mask(&b, &keep(2), &PassContext::compaction());
    assert_eq!(first.rewrites.len(), 3);
    b.session.append_batch(first.drafts()).unwrap();
    let second = run_mask(&b, &keep(2), &PassContext::compaction());
    assert!(second.is_empty(), "{:?}", second.report);
    // A new result moves the window by one: exactly one more is masked.
    b.output(120);
    let third = run_mask(&b, &keep(2), &PassContext::compaction());
    assert_eq!(third.rewrites.len(), 1);
}

#[test]
fn mask_holds_rewrites_inside_a_warm_prefix_unless_the_cache_is_cold() {
    let mut b = Builder::new();
    let old = b.output(100);
    for _ in 0..3 {
        b.output(4_000);
    }
    let ttl = Some(Duration::from_secs(300));
    let warm = run_mask(
        &b,
        &keep(3),
        &PassContext::per_turn(Some(Duration::from_secs(10)), ttl),
    );
    assert!(warm.is_empty());
    assert_eq!(warm.report.held_for_cache, 1);
    let cold = run_mask(
        &b,
        &keep(3),
        &PassContext::per_turn(Some(Duration::from_secs(301)), ttl),
    );
    assert_eq!(targets(&cold, Rule::Masked), BTreeSet::from([old]));
    // A compaction (the window forces it) rewrites anywhere.
    let forced = run_mask(&b, &keep(3), &PassContext::compaction());
    assert_eq!(targets(&forced, Rule::Masked), BTreeSet::from([old]));
}

#[test]
fn mask_keep_zero_is_refused() {
    let error = MaskMethod::new(keep(0)).unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid mask.keep: must be at least 1: the newest tool result is what the model works from"
    );
    assert!(MaskMethod::new(keep(1)).is_ok());
}

#[test]
fn what_the_model_sees_after_mask() {
    let mut b = Builder::new();
    b.call("read", json!({"path": "src/lib.rs"}), &text_for("c0", 400));
    b.call("bash", json!({"command": "ls"}), "a.rs b.rs");
    b.call("skill", json!({"name": "review"}), &text_for("c2", 300));
    b.call(
        "bash",
        json!({"command": "cargo test"}),
        &text_for("c3", 250),
    );
    b.say("and the newest two stay");
    b.output(120);
    b.output(80);
    let reclaim = run_mask(&b, &keep(2), &PassContext::compaction());
    b.session.append_batch(reclaim.drafts()).unwrap();
    insta::assert_snapshot!(render_surface(&b.session));
}
