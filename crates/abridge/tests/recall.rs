//! Recall end to end: everything compaction hides reads back exactly, a
//! rare identifier from a hidden tool result is found on every bundled
//! sample, the tool's schema and answers as the model sees them, bad calls
//! answered in words, and reading back then compacting again stays
//! bounded.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use abridge::Harness;
use abridge::Settings;
use abridge::llm::Message;
use abridge::llm::Role;
use abridge::recall::MISS_PREFIX;
use abridge::recall::Recall;
use abridge::recall::Source;
use abridge::recall::message_text;
use abridge::session::EventBody;
use abridge::session::Seq;
use abridge::session::Session;
use abridge::session::SurfaceOp;
use abridge_test_support::samples;
use proptest::prelude::*;
use serde_json::json;

fn run<T>(future: impl std::future::Future<Output = T>) -> T {
    futures::executor::block_on(future)
}

/// A harness over a small fixture session; the reclaim floor (5% of a
/// real threshold) is off, or no landing on so small a session would pay.
fn harness_for(session: Session, window: u64) -> Harness {
    Harness::builder(session, "gpt-4o")
        .settings(
            Settings::from_toml(
                "method_order = [\"prune\", \"digest\"]\nkeep_recent_tokens = 60\nmin_reclaim_percent = 0\n",
                "t",
            )
            .unwrap(),
        )
        .window(window)
        .build()
        .unwrap()
}

/// Every message event some checkpoint or rewrite hides, from the log
/// itself (not from the index).
fn hidden_seqs(session: &Session) -> Vec<Seq> {
    let mut out = Vec::new();
    for event in session.events() {
        if let EventBody::Message(m) = &event.body {
            match m.op {
                SurfaceOp::Append => {}
                SurfaceOp::Replace { .. } | SurfaceOp::Rewrite { .. } => out.extend(
                    m.sources
                        .iter()
                        .copied()
                        .filter(|&s| session.message(s).is_some()),
                ),
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Every page of `reference` joined.
fn read_all(recall: &Recall, session: &Session, reference: &str) -> String {
    let (_, first) = recall.read(session, reference, 1).unwrap();
    let mut text = first.text;
    for page in 2..=first.pages {
        text.push_str(&recall.read(session, reference, page).unwrap().1.text);
    }
    text
}

fn text_blocks(message: &Message) -> Vec<String> {
    let mut out = Vec::new();
    for block in &message.content {
        match block {
            abridge::llm::Block::Text { text } => out.push(text.clone()),
            abridge::llm::Block::ToolResult { content, .. } => {
                out.extend(
                    content
                        .iter()
                        .filter_map(|b| b.as_text().map(str::to_string)),
                );
            }
            _ => {}
        }
    }
    out
}

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z]{1,9}",
        "[a-z]{2,6}_[a-z]{2,6}",
        Just("héllo wörld ✓".to_string()),
        Just("line\nbreak".to_string()),
    ]
}

fn turn() -> impl Strategy<Value = (Vec<String>, usize, bool)> {
    (
        prop::collection::vec(word(), 5..60),
        0usize..3,
        any::<bool>(),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn every_hidden_message_reads_back_exactly(
        turns in prop::collection::vec(turn(), 10..40),
        passes in prop::collection::vec(prop_oneof![Just("digest"), Just("prune")], 1..4),
    ) {
        let harness = harness_for(Session::in_memory("p"), 6_000);
        for (i, (words, calls, error)) in turns.iter().enumerate() {
            let text = words.join(" ");
            harness.append(Message::user(format!("turn {i}: {text}"))).unwrap();
            for c in 0..*calls {
                let id = format!("c{i}_{c}");
                harness.append(Message::tool_call(&id, "read_file", json!({"path": format!("f{c}.rs")}))).unwrap();
                harness.append(Message::tool_result(&id, text.repeat(4), *error)).unwrap();
            }
            harness.append(Message::assistant(format!("done {i}: {text}"))).unwrap();
            if i % 7 == 6 {
                let method = passes[(i / 7) % passes.len()];
                run(harness.compact(&[method.to_string()], None)).unwrap();
            }
        }
        for method in &passes {
            run(harness.compact(&[(*method).to_string()], None)).unwrap();
        }
        let session = harness.session().lock().unwrap();
        let recall = Recall::open(&session, None).with_page_tokens(50);
        for seq in hidden_seqs(&session) {
            let message = session.message(seq).unwrap();
            let read = read_all(&recall, &session, &format!("recall://{seq}"));
            prop_assert_eq!(&read, &message_text(seq, message));
            for block in text_blocks(message) {
                prop_assert!(read.contains(&block), "seq {} lost {:?}", seq, block);
            }
        }
        // Through the checkpoint's range too.
        for &checkpoint in session.surface().seqs() {
            let hidden = abridge::recall::hidden_messages(&session, checkpoint);
            let (Some(first), Some(last)) = (hidden.first(), hidden.last()) else { continue };
            let range = read_all(&recall, &session, &format!("recall://{first}-{last}"));
            for seq in hidden {
                let message = session.message(seq).unwrap();
                for block in text_blocks(message) {
                    prop_assert!(range.contains(&block), "range lost seq {}", seq);
                }
            }
        }
    }
}

/// Identifier-like words (snake_case, camelCase or letters mixed with
/// digits such as a hash; 8+ characters) of `text`.
fn identifiers(text: &str) -> impl Iterator<Item = &str> {
    let camel = |w: &str| {
        w.as_bytes()
            .windows(2)
            .any(|p| p[0].is_ascii_lowercase() && p[1].is_ascii_uppercase())
    };
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(move |w| {
            w.len() >= 8
                && w.len() <= 40
                && (w.contains('_')
                    || camel(w)
                    || (w.bytes().any(|b| b.is_ascii_digit())
                        && w.bytes().any(|b| b.is_ascii_alphabetic())))
                && !w.starts_with('_')
                && !w.ends_with('_')
        })
}

#[test]
fn search_finds_a_rare_identifier_from_a_hidden_tool_result_on_every_sample() {
    for name in samples::ALL {
        let imported = abridge::import::read(&samples::sample(name), None).unwrap();
        let mut session = Session::in_memory(name);
        imported.append_to(&mut session).unwrap();
        let harness = harness_for(session, 400_000);
        let pass = run(harness.compact(&["digest".to_string()], None)).unwrap();
        assert_eq!(
            pass.status,
            abridge::PassStatus::Succeeded,
            "{name}: {pass:?}"
        );
        let session = harness.session().lock().unwrap();
        let recall = Recall::open(&session, None);
        let hidden = hidden_seqs(&session);
        let texts: Vec<(Seq, String)> = hidden
            .iter()
            .map(|&s| (s, message_text(s, session.message(s).unwrap())))
            .collect();
        // A word from a hidden tool result that at most two hidden messages hold.
        let (seq, rare) = texts
            .iter()
            .filter(|(s, _)| session.message(*s).unwrap().role == Role::Tool)
            .find_map(|(seq, text)| {
                identifiers(text)
                    .find(|w| texts.iter().filter(|(_, t)| t.contains(w)).count() <= 2)
                    .map(|w| (*seq, w.to_string()))
            })
            .unwrap_or_else(|| {
                let tools: Vec<_> = texts
                    .iter()
                    .filter(|(s, _)| session.message(*s).unwrap().role == Role::Tool)
                    .map(|(s, t)| (s, t.chars().take(200).collect::<String>()))
                    .collect();
                panic!(
                    "{name}: no rare identifier in a hidden tool result: {} hidden, {tools:?}",
                    texts.len()
                )
            });
        let found = recall.search(&session, &rare, 1).unwrap();
        let top: Vec<&str> = found.iter().take(3).map(|f| f.source.as_str()).collect();
        assert!(
            top.contains(&Source::Event(seq).to_string().as_str()),
            "{name}: {rare} from recall://{seq} not in the top 3: {top:?}"
        );
        // And the snippet's reference reads back text holding it.
        let hit = found
            .iter()
            .find(|f| f.source == format!("recall://{seq}"))
            .unwrap();
        let (_, page) = recall.read(&session, &hit.reference, 1).unwrap();
        assert!(
            page.text.contains(&rare),
            "{name}: {} lacks {rare}",
            hit.reference
        );
    }
}

/// A small session with one digest checkpoint, for the snapshots.
fn compacted_sample() -> Harness {
    let harness = harness_for(Session::in_memory("snap"), 400_000);
    harness
        .append(Message::user("Fix the failing parse_frame_header test."))
        .unwrap();
    harness
        .append(Message::tool_call(
            "c1",
            "bash",
            json!({"cmd": "cargo test"}),
        ))
        .unwrap();
    harness
        .append(Message::tool_result(
            "c1",
            format!(
                "{}test frame::parse_frame_header ... FAILED\nthread panicked: expected 0x1F, got 0x2E",
                (0..40)
                    .map(|i| format!("test frame::case_{i} ... ok\n"))
                    .collect::<String>()
            ),
            true,
        ))
        .unwrap();
    harness
        .append(Message::assistant(
            "The header check uses the wrong magic byte.",
        ))
        .unwrap();
    harness
        .append(Message::user("Now update the changelog."))
        .unwrap();
    harness
        .append(Message::assistant("Changelog updated."))
        .unwrap();
    let pass = run(harness.compact(&["digest".to_string()], None)).unwrap();
    assert_eq!(pass.status, abridge::PassStatus::Succeeded, "{pass:?}");
    harness
        .append(Message::user("What was the exact panic?"))
        .unwrap();
    harness
}

#[test]
fn the_tool_schema_as_offered() {
    let harness = compacted_sample();
    insta::assert_json_snapshot!(harness.tools());
    let off = Harness::builder(Session::in_memory("o"), "gpt-4o")
        .settings(Settings::from_toml("recall = false\n", "t").unwrap())
        .build()
        .unwrap();
    assert!(off.tools().is_empty());
    assert_eq!(off.call_tool("recall", &json!({"toc": true})), None);
    assert_eq!(harness.call_tool("bash", &json!({})), None, "not ours");
}

#[test]
fn the_tool_answers_as_the_model_reads_them() {
    let harness = compacted_sample();
    let call = |args: serde_json::Value| harness.call_tool("recall", &args).unwrap();
    insta::assert_snapshot!("toc", call(json!({"toc": true})));
    insta::assert_snapshot!("query", call(json!({"query": "parse_frame_header panic"})));
    insta::assert_snapshot!("read_event", call(json!({"ref": "recall://2"})));
    insta::assert_snapshot!("read_range", call(json!({"ref": "recall://0-5"})));
    insta::assert_snapshot!("read_part", call(json!({"ref": "recall://2#5-30"})));
}

#[test]
fn bad_calls_are_answered_in_words() {
    let harness = compacted_sample();
    let call = |args: serde_json::Value| harness.call_tool("recall", &args).unwrap();
    let cases = [
        (json!({}), "none was given"),
        (
            json!({"ref": "recall://1", "query": "x"}),
            "more than one was given",
        ),
        (json!({"query": "  ,, "}), "the query is empty"),
        (json!({"ref": "recall://999"}), "there is no recall://999"),
        (
            json!({"ref": "recall://7-3"}),
            "the last seq comes before the first",
        ),
        (json!({"ref": "artifact://nothex"}), "artifact"),
        (
            json!({"ref": "recall://2#9000-9050"}),
            "so the part starting at 9000 is empty",
        ),
        (
            json!({"ref": "recall://2", "page": 9}),
            "page 9 does not exist",
        ),
        (json!({"reff": "recall://2"}), "unknown field"),
        (
            json!({"query": "zzzqqq"}),
            "Nothing in the hidden history matches",
        ),
    ];
    for (args, expected) in cases {
        let answer = call(args.clone());
        assert!(answer.contains(expected), "{args}: {answer}");
    }
    assert!(call(json!({"ref": "nope"})).starts_with(MISS_PREFIX));
    let empty = harness_for(Session::in_memory("empty"), 400_000);
    let answer = empty.call_tool("recall", &json!({"toc": true})).unwrap();
    assert!(
        answer.contains(abridge::recall::NOTHING_HIDDEN.trim()),
        "{answer}"
    );
}

/// Thirty turns of long requests in a roomy window, folded by one digest
/// compaction.
fn thirty_turns_compacted(name: &str) -> Harness {
    let harness = harness_for(Session::in_memory(name), 400_000);
    for i in 0..30 {
        harness
            .append(Message::user(format!(
                "request {i}: {}",
                "detail ".repeat(40)
            )))
            .unwrap();
        harness
            .append(Message::assistant(format!("answer {i}")))
            .unwrap();
    }
    run(harness.compact(&["digest".to_string()], None)).unwrap();
    harness
}

#[test]
fn reading_back_and_compacting_again_stays_bounded() {
    let harness = thirty_turns_compacted("cycle");
    let bytes = |h: &Harness| -> usize {
        let session = h.session().lock().unwrap();
        session
            .events()
            .iter()
            .filter_map(|e| e.message())
            .map(|m| m.content_bytes())
            .sum()
    };
    let mut growth = Vec::new();
    for cycle in 0..8 {
        let before = bytes(&harness);
        // The model reads back everything the newest checkpoint hides.
        let (first, last) = {
            let checkpoint = newest_checkpoint(&harness);
            let session = harness.session().lock().unwrap();
            let hidden = abridge::recall::hidden_messages(&session, checkpoint);
            (hidden[0], *hidden.last().unwrap())
        };
        let id = format!("r{cycle}");
        let args = json!({"ref": format!("recall://{first}-{last}")});
        harness
            .append(Message::tool_call(&id, "recall", args.clone()))
            .unwrap();
        let answer = harness.call_tool("recall", &args).unwrap();
        harness
            .append(Message::tool_result(&id, answer, false))
            .unwrap();
        harness
            .append(Message::user(format!("cycle {cycle}")))
            .unwrap();
        run(harness.compact(&["digest".to_string()], None)).unwrap();
        growth.push(bytes(&harness) - before);
    }
    let cap = abridge::recall::DEFAULT_PAGE_TOKENS * abridge::recall::CHARS_PER_TOKEN;
    let first = growth[0];
    for (cycle, g) in growth.iter().enumerate() {
        assert!(
            *g <= first + cap / 2,
            "cycle {cycle} grew the log by {g} bytes, the first by {first}: {growth:?}"
        );
    }
}

#[test]
fn shaken_artifacts_are_searched_and_read_through_the_store() {
    use abridge::prune::ArtifactStore;
    let store = std::sync::Arc::new(abridge::prune::MemoryArtifactStore::default());
    let id = store
        .put(b"line one\nfn frobnicate_widget() -> u32 { 7 }\nline three")
        .unwrap();
    let mut session = Session::in_memory("art");
    session
        .append_message(Message::tool_call(
            "c1",
            "read_file",
            json!({"path": "w.rs"}),
        ))
        .unwrap();
    let result = session
        .append_message(Message::tool_result("c1", "the original file", false))
        .unwrap();
    session
        .append(abridge::session::Draft::rewrite(
            Message::tool_result("c1", format!("[moved to artifact://{id}#0-56]"), false),
            result,
        ))
        .unwrap();
    let recall = Recall::open(&session, Some(store));
    let found = recall.search(&session, "frobnicate_widget", 1).unwrap();
    assert_eq!(found[0].source, format!("artifact://{id}"));
    let (_, page) = recall.read(&session, &found[0].reference, 1).unwrap();
    assert!(page.text.contains("frobnicate_widget"), "{}", page.text);
    let (_, original) = recall
        .read(&session, &format!("recall://{result}"), 1)
        .unwrap();
    assert_eq!(original.text, "the original file");
    let without = Recall::open(&session, None);
    let miss = without
        .read(&session, &format!("artifact://{id}"), 1)
        .unwrap_err();
    assert!(miss.to_string().contains("no artifact store"), "{miss}");
}

/// A block shake moved out of a tool result reads back exactly through the
/// `recall://SEQ#START-END` its placeholder names: shake and recall count
/// the same characters (the message's plain text).
#[test]
fn a_shaken_block_reads_back_through_its_part_reference() {
    let block: String = (0..120)
        .map(|i| format!("    let value_{i} = compute_{i}(input);\n"))
        .collect();
    let result_text =
        format!("Here is the file, ünïcödé first.\n```rust\n{block}```\nThat was all.");
    let mut session = Session::in_memory("shaken");
    session
        .append_message(Message::user("show me the file"))
        .unwrap();
    session
        .append_message(Message::tool_call(
            "c1",
            "read_file",
            json!({"path": "a.rs"}),
        ))
        .unwrap();
    let original = session
        .append_message(Message::tool_result("c1", result_text.clone(), false))
        .unwrap();
    for turn in 0..6 {
        session
            .append_message(Message::user(format!("next step {turn}")))
            .unwrap();
        session
            .append_message(Message::assistant(format!("done {turn}")))
            .unwrap();
    }
    let harness = Harness::builder(session, "gpt-4o")
        .settings(
            Settings::from_toml(
                "method_order = [\"shake\"]\nkeep_recent_tokens = 60\nmin_reclaim_percent = 0\n\
                 [shake]\nkeep_recent_tokens = 50\nmin_result_tokens = 100000\nmin_block_tokens = 150\n",
                "t",
            )
            .unwrap(),
        )
        .window(200_000)
        .build()
        .unwrap();
    let pass = run(harness.compact(&[], None)).unwrap();
    assert_eq!(pass.outcomes.len(), 1, "{pass:?}");
    let session = abridge::compact::host::lock_session(harness.session());
    let placeholder = session
        .surface_messages()
        .iter()
        .find(|m| m.role == Role::Tool)
        .unwrap()
        .plain_text();
    let prefix = format!("recall://{original}#");
    let at = placeholder.find(&prefix).expect("a part reference");
    let reference: String = placeholder[at..]
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != ']' && *c != ';' && *c != ')')
        .collect();
    let recall = Recall::open(&session, None);
    let text = read_all(&recall, &session, &reference);
    assert!(
        result_text.contains(&text) && text.contains("let value_119 = compute_119(input);"),
        "{reference} read back {text:?}"
    );
}

/// The newest checkpoint on the surface.
fn newest_checkpoint(harness: &Harness) -> Seq {
    let session = harness.session().lock().unwrap();
    *session
        .surface()
        .seqs()
        .iter()
        .rfind(|&&s| {
            session
                .event(s)
                .and_then(|e| e.message_event())
                .is_some_and(|m| matches!(m.op, SurfaceOp::Replace { .. }))
        })
        .unwrap()
}

#[test]
fn an_earlier_checkpoint_and_recall_result_read_back_as_their_references() {
    let harness = thirty_turns_compacted("refs");
    let earlier = newest_checkpoint(&harness);
    let hidden = {
        let session = harness.session().lock().unwrap();
        abridge::recall::hidden_messages(&session, earlier)
    };
    let args = json!({"ref": format!("recall://{}-{}", hidden[0], hidden.last().unwrap())});
    harness
        .append(Message::tool_call("r0", "recall", args.clone()))
        .unwrap();
    let answer = harness.call_tool("recall", &args).unwrap();
    let result = harness
        .append(Message::tool_result("r0", answer, false))
        .unwrap();
    harness.append(Message::user("carry on")).unwrap();
    run(harness.compact(&["digest".to_string()], None)).unwrap();
    let newest = newest_checkpoint(&harness);
    assert_ne!(newest, earlier);
    let session = harness.session().lock().unwrap();
    // The stretch the newest checkpoint covers, read back as the model
    // would: the earlier checkpoint and the earlier read stand as one line
    // each, naming where they can be read alone.
    let recall = Recall::open(&session, None);
    let text = read_all(&recall, &session, &format!("recall://0-{}", result + 1));
    assert!(
        text.contains(&format!(
            "[an earlier checkpoint; read it with recall://{earlier}]"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "[an earlier recall result; read it alone with recall://{result}]"
        )),
        "{text}"
    );
}

/// Issue 32, point 5: `{"path": ...}` returns what the last read of a
/// file returned, after compaction hid it, and says whether a later call
/// changed the file.
#[test]
fn a_paths_last_read_comes_back_with_whether_it_changed() {
    let mut session = Session::in_memory("last-read");
    session
        .append_message(Message::user("Look at the lexer."))
        .unwrap();
    session
        .append_message(Message::tool_call(
            "r1",
            "read",
            json!({"path": "/w/src/lex.rs"}),
        ))
        .unwrap();
    session
        .append_message(Message::tool_result("r1", "fn lex_version_one() {}", false))
        .unwrap();
    session
        .append_message(Message::tool_call(
            "r2",
            "read",
            json!({"path": "src/lex.rs"}),
        ))
        .unwrap();
    session
        .append_message(Message::tool_result("r2", "fn lex_version_two() {}", false))
        .unwrap();
    session
        .append_message(Message::assistant("Read it twice."))
        .unwrap();
    let harness = harness_for(session, 100_000);
    let answer = harness
        .call_tool("recall", &json!({"path": "src/lex.rs"}))
        .unwrap();
    assert!(answer.contains("fn lex_version_two() {}"), "{answer}");
    assert!(!answer.contains("version_one"), "{answer}");
    assert!(answer.contains("not changed since"), "{answer}");
    harness
        .append(Message::tool_call(
            "w1",
            "edit",
            json!({"file_path": "/w/src/lex.rs", "old_string": "a", "new_string": "b"}),
        ))
        .unwrap();
    harness
        .append(Message::tool_result("w1", "ok", false))
        .unwrap();
    let answer = harness
        .call_tool("recall", &json!({"path": "/w/src/lex.rs"}))
        .unwrap();
    assert!(answer.contains("fn lex_version_two() {}"), "{answer}");
    assert!(answer.contains("changed since, by recall://"), "{answer}");
    let missing = harness
        .call_tool("recall", &json!({"path": "src/parse.rs"}))
        .unwrap();
    assert_eq!(
        missing,
        format!(
            "{MISS_PREFIX}no read of src/parse.rs is in this session; read the file with your own tools"
        )
    );
}
