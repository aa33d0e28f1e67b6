//! Pins (issue 32, item 3): a pinned message or text reaches the model
//! verbatim exactly once in every request, whatever methods have run,
//! survives reopening the log, and is counted once by the meter.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use abridge::Harness;
use abridge::HarnessError;
use abridge::MethodSources;
use abridge::Settings;
use abridge::SummarizerModel;
use abridge::compact::host::lock_session;
use abridge::llm::Block;
use abridge::llm::Message;
use abridge::llm::RetryPolicy;
use abridge::meter::TokenMeter;
use abridge::session::Header;
use abridge::session::JsonlOptions;
use abridge::session::JsonlStore;
use abridge::session::Session;
use abridge_test_support::scripted::ScriptedClient;
use serde_json::json;

const SUMMARY: &str = "## Goal\nKeep stepping.\n\n## Progress\nSteps done.";
const RULES: &str = "House rules: run the formatter before every commit; \
     keep each module under six hundred lines.";
const NEVER: &str = "Never push to the main branch.";
const SPEC: &str = "spec.md: the parser accepts UTF-8 only.";

fn run<T>(future: impl std::future::Future<Output = T>) -> T {
    futures::executor::block_on(future)
}

fn summarizer() -> SummarizerModel {
    SummarizerModel {
        client: ScriptedClient::new(Vec::new()).fallback(SUMMARY).shared(),
        model: "summarizer".to_string(),
        retry: RetryPolicy {
            initial_backoff: Duration::from_millis(1),
            timeout: Some(Duration::from_secs(5)),
            ..RetryPolicy::deterministic()
        },
        soft: abridge::basic::SoftConfig::default(),
        handoff_file: None,
        handoff_max_tokens: None,
    }
}

fn harness(session: Session) -> Harness {
    Harness::builder(session, "gpt-4o")
        .settings(
            Settings::from_toml(
                "method_order = [\"prune\", \"mask\", \"snapcompact\", \"handoff\", \"shake\", \"soft\", \"digest\"]\n\
                 mask_keep = 2\n[prune]\nprotect_tokens = 2000\nmin_saving_tokens = 500\n",
                "abridge.toml",
            )
            .unwrap(),
        )
        .sources(MethodSources {
            summarizer: Some(summarizer()),
            ..MethodSources::offline("gpt-4o")
        })
        .window(32_000)
        .build()
        .unwrap()
}

fn call(id: &str, path: &str) -> Message {
    let mut message = Message::assistant("");
    message.content = vec![Block::ToolCall {
        id: id.into(),
        name: "read".into(),
        arguments: json!({ "path": path }),
    }];
    message
}

/// One turn: a request, a read and its long result, a reply.
fn turn(harness: &Harness, i: usize) {
    harness
        .append(Message::user(format!(
            "step {i}: {}",
            "context ".repeat(60)
        )))
        .unwrap();
    let id = format!("c{i}");
    harness.append(call(&id, &format!("src/f{i}.rs"))).unwrap();
    harness
        .append(Message::tool_result(
            id,
            format!(
                "fn f{i}() {{}}\n{}",
                "// body line of the file\n".repeat(120)
            ),
            false,
        ))
        .unwrap();
    harness
        .append(Message::assistant(format!("did step {i}")))
        .unwrap();
}

/// How many text blocks of `request`, tool results' content included,
/// are exactly `text`.
fn blocks_equal(request: &[Message], text: &str) -> usize {
    fn count(blocks: &[Block], text: &str) -> usize {
        blocks
            .iter()
            .map(|block| match block {
                Block::Text { text: t } => usize::from(t == text),
                Block::ToolResult { content, .. } => count(content, text),
                _ => 0,
            })
            .sum()
    }
    request.iter().map(|m| count(&m.content, text)).sum()
}

fn assert_every_pin_once(harness: &Harness, when: &str) {
    let request = harness.request().unwrap();
    for pin in [RULES, NEVER, SPEC] {
        assert_eq!(
            blocks_equal(&request, pin),
            1,
            "{when}: {pin:?} must be in the request exactly once"
        );
    }
}

/// A session whose first user message and one tool result are pinned by
/// seq, with a pinned free text beside them.
fn pinned() -> Harness {
    let harness = harness(Session::in_memory("pins"));
    let rules = harness.append(Message::user(RULES)).unwrap();
    harness.pin_message(rules).unwrap();
    harness.append(call("spec", "spec.md")).unwrap();
    let spec = harness
        .append(Message::tool_result("spec", SPEC, false))
        .unwrap();
    harness.pin_message(spec).unwrap();
    harness.pin_text(NEVER).unwrap();
    harness
}

/// Issue 32's figure: 50 consecutive compactions, every method the
/// harness can run without a network in turn plus the default order, and
/// after each one every pin is in the request verbatim exactly once.
/// Removing the host's guarantee (`insert_pins` in the request builder)
/// fails it at the first compaction that hides a pin.
#[test]
fn every_pin_survives_fifty_compactions_verbatim_exactly_once() {
    let harness = pinned();
    assert_every_pin_once(&harness, "before any compaction");
    let rotation: [&[&str]; 7] = [
        &["digest"],
        &["mask"],
        &["prune"],
        &["snapcompact"],
        &["soft"],
        &["handoff"],
        &[],
    ];
    let mut landed = 0;
    let mut attempts = 0;
    let mut by_method: BTreeMap<String, usize> = BTreeMap::new();
    let mut step = 0;
    while landed < 50 {
        assert!(
            attempts < 200,
            "only {landed} compactions landed: {by_method:?}"
        );
        while harness.tokens() <= harness.limits().threshold {
            turn(&harness, step);
            step += 1;
        }
        let methods: Vec<String> = rotation[attempts % rotation.len()]
            .iter()
            .map(|m| (*m).to_string())
            .collect();
        attempts += 1;
        let pass = run(harness.compact(&methods, None)).unwrap();
        for outcome in &pass.outcomes {
            *by_method.entry(outcome.method.clone()).or_default() += 1;
        }
        if pass.landed() {
            landed += 1;
            assert_every_pin_once(&harness, &format!("compaction {landed} ({methods:?})"));
        }
    }
    // snapcompact is built only with its feature.
    let expected = ["digest", "prune", "mask", "snapcompact", "soft", "handoff"]
        .into_iter()
        .filter(|m| *m != "snapcompact" || cfg!(feature = "snapcompact"));
    for method in expected {
        assert!(
            by_method.contains_key(method),
            "{method} never landed: {by_method:?}"
        );
    }
    let session = lock_session(harness.session());
    assert!(
        session.pins().iter().all(|p| !p.visible),
        "every pinned message ends hidden from the surface"
    );
    assert!(abridge::compact::check::check_invariants(&session).is_ok());
}

/// A pin whose message is on the surface is sent there only; once a
/// checkpoint hides it, the pinned message carries it. The meter counts it
/// once either way: the estimate is the surface plus the pinned message.
#[test]
fn a_visible_pin_is_not_sent_twice_and_the_meter_counts_a_hidden_one_once() {
    let harness = pinned();
    let session = lock_session(harness.session());
    assert!(
        session
            .pinned_message()
            .unwrap()
            .plain_text()
            .contains(NEVER),
        "a text pin always rides in the pinned message"
    );
    let visible = session.pinned_message().unwrap();
    assert_eq!(blocks_equal(&[visible], RULES), 0);
    let mut meter = TokenMeter::for_model(harness.entry());
    let surface: u64 = session
        .surface()
        .seqs()
        .iter()
        .map(|seq| meter.seq_tokens(&session, *seq))
        .sum();
    let pinned = meter
        .cost_model()
        .message(&session.pinned_message().unwrap());
    assert_eq!(meter.measure(&session).estimate, surface + pinned);
}

/// Pins are log events: they are written once, read back after reopening
/// the file, and a bad pin is refused with nothing written.
#[test]
fn pins_survive_reopening_and_bad_pins_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    {
        let store = JsonlStore::open(&path, JsonlOptions::default()).unwrap();
        let session = Session::create(Box::new(store), Header::new("reopen")).unwrap();
        let harness = harness(session);
        let rules = harness.append(Message::user(RULES)).unwrap();
        harness.pin_message(rules).unwrap();
        harness.pin_text(NEVER).unwrap();
        let before = lock_session(harness.session()).len();
        assert!(matches!(
            harness.pin_message(99),
            Err(HarnessError::Pin { .. })
        ));
        assert!(matches!(
            harness.pin_text("  "),
            Err(HarnessError::Pin { .. })
        ));
        assert_eq!(lock_session(harness.session()).len(), before);
        harness.sync().unwrap();
    }
    let store = JsonlStore::open(&path, JsonlOptions::default()).unwrap();
    let (session, _) = Session::open(Box::new(store)).unwrap();
    let pins = session.pins();
    let texts: Vec<&str> = pins.iter().map(|p| p.text.as_str()).collect();
    assert_eq!(texts, vec![RULES, NEVER]);
    assert!(pins.iter().all(|p| p.pin.origin == abridge::USER_PIN));
    assert!(session.pin_faults().is_empty());
}

/// Issue 32: `Harness::unpin` takes a pin back: no request carries it
/// after, even once compaction has hidden its message; the pin event
/// stays, and an unpin of no live pin is refused with nothing written.
#[test]
fn an_unpinned_message_leaves_every_later_request() {
    let harness = harness(Session::in_memory("unpin"));
    let rules = harness.append(Message::user(RULES)).unwrap();
    let pin = harness.pin_message(rules).unwrap();
    let never = harness.pin_text(NEVER).unwrap();
    let mut step = 0;
    while harness.tokens() <= harness.limits().threshold {
        turn(&harness, step);
        step += 1;
    }
    let pass = run(harness.compact(&["digest".to_string()], None)).unwrap();
    assert!(pass.landed(), "{pass:?}");
    assert_eq!(blocks_equal(&harness.request().unwrap(), RULES), 1);

    harness.unpin(pin).unwrap();
    assert_eq!(blocks_equal(&harness.request().unwrap(), RULES), 0);
    assert_eq!(blocks_equal(&harness.request().unwrap(), NEVER), 1);
    let texts: Vec<String> = harness.pins().into_iter().map(|p| p.text).collect();
    assert_eq!(texts, vec![NEVER]);

    let before = lock_session(harness.session()).len();
    assert!(matches!(
        harness.unpin(pin),
        Err(HarnessError::Unpin { .. })
    ));
    assert!(matches!(
        harness.unpin(rules),
        Err(HarnessError::Unpin { .. })
    ));
    assert_eq!(lock_session(harness.session()).len(), before);
    harness.unpin(never).unwrap();
    assert!(lock_session(harness.session()).pinned_message().is_none());
    assert!(abridge::compact::check::check_invariants(&lock_session(harness.session())).is_ok());
}

/// A method that sizes its checkpoint to the plan's room, as snapcompact
/// sizes its frames and soft its summary: the room is all it trusts.
/// With `ignores_pins`, it writes as much more as the pins the plan makes
/// room for: the commit must catch what the room did not.
#[derive(Debug)]
struct FillsRoom {
    ignores_pins: bool,
}

#[async_trait::async_trait]
impl abridge::compact::CompactionMethod for FillsRoom {
    fn name(&self) -> &str {
        if self.ignores_pins {
            "ignores-pins"
        } else {
            "fills-room"
        }
    }

    async fn run(
        &self,
        plan: &abridge::compact::Plan,
    ) -> Result<abridge::compact::MethodOutput, abridge::compact::MethodError> {
        let mut room = plan.room().unwrap_or(0).max(1);
        if self.ignores_pins {
            room += plan.tokens().pinned;
        }
        let mut words = room;
        let mut text = "word ".repeat(usize::try_from(words).unwrap());
        loop {
            let cost = plan.counter().message_tokens(&Message::user(text.clone()));
            if cost <= room || words <= 1 {
                break;
            }
            words = words.saturating_sub((cost - room).max(1));
            text = "word ".repeat(usize::try_from(words).unwrap());
        }
        Ok(abridge::compact::MethodOutput::Checkpoint(
            abridge::compact::Checkpoint::new(text).with_short_summary("filled"),
        ))
    }
}

/// Issue 32, room for pins: a pinned message a compaction hides comes
/// back in the pinned message beside the checkpoint, so the plan's room
/// must leave space for it. With two large pinned messages at an
/// 8k window and a method that fills its room, every request after each
/// compaction fits the window; a method that ignores the pins is refused
/// at the commit. Without the pins in the room (the planner leaving
/// `PlanTokens::pinned` out) nothing lands (the commit refuses every
/// checkpoint); without them in the commit's check too, the first landing
/// leaves a request of about 10k tokens.
#[test]
fn every_request_after_a_room_sized_compaction_fits_the_window_with_its_pins() {
    const WINDOW: u64 = 8_000;
    let mut registry = abridge::MethodRegistry::builtin();
    for ignores_pins in [false, true] {
        let name = if ignores_pins {
            "ignores-pins"
        } else {
            "fills-room"
        };
        registry
            .register(name, move |_| {
                Ok(std::sync::Arc::new(FillsRoom { ignores_pins }))
            })
            .unwrap();
    }
    let harness = Harness::builder(Session::in_memory("room"), "gpt-4o")
        .settings(
            Settings::from_toml_using(
                "method_order = [\"fills-room\", \"ignores-pins\"]\nreserve = 500\ntarget_percent = 100\n\
                 keep_recent_tokens = 1000\nmin_reclaim_percent = 0\n",
                "abridge.toml",
                &registry,
            )
            .unwrap(),
        )
        .registry(registry)
        .window(WINDOW)
        .build()
        .unwrap();
    let big = |name: &str| {
        format!(
            "{name}: {}",
            "a standing rule to keep in mind. ".repeat(160)
        )
    };
    let rules = harness.append(Message::user(big("rules"))).unwrap();
    harness.pin_message(rules).unwrap();
    harness.append(call("spec", "spec.md")).unwrap();
    let spec = harness
        .append(Message::tool_result("spec", big("spec"), false))
        .unwrap();
    harness.pin_message(spec).unwrap();
    let meter = TokenMeter::for_model(harness.entry());
    let mut landed = 0;
    let mut step = 0;
    for attempt in 0..8 {
        while harness.tokens() <= harness.limits().threshold {
            turn(&harness, step);
            step += 1;
        }
        let method = if attempt % 2 == 0 {
            "ignores-pins"
        } else {
            "fills-room"
        };
        let pass = run(harness.compact(&[method.to_string()], None)).unwrap();
        if !pass.landed() {
            assert_eq!(method, "ignores-pins", "{pass:?}");
            assert!(
                matches!(
                    pass.failures[0].kind,
                    abridge::compact::ErrorKind::OverWindow
                        | abridge::compact::ErrorKind::NotSmaller
                ),
                "{pass:?}"
            );
            continue;
        }
        landed += 1;
        let request = harness.request().unwrap();
        let sent: u64 = request.iter().map(|m| meter.cost_model().message(m)).sum();
        assert!(
            sent <= WINDOW && harness.tokens() <= WINDOW,
            "compaction {attempt} ({method}): the request costs {sent} tokens (meter: {}), over the {WINDOW}-token window: {pass:?}",
            harness.tokens()
        );
        assert_eq!(blocks_equal(&request, &big("rules")), 1);
    }
    assert!(landed >= 3, "only {landed} compactions landed");
}
