//! The Harness as an agent loop drives it: promotion before compaction on
//! overflow, auto-continue after a threshold pass, settings that turn
//! triggers off, and `request()` matching the surface.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use abridge::Harness;
use abridge::PassStatus;
use abridge::Recovery;
use abridge::Settings;
use abridge::llm::LlmError;
use abridge::llm::Message;
use abridge::session::Session;

fn run<T>(future: impl std::future::Future<Output = T>) -> T {
    futures::executor::block_on(future)
}

fn filled(harness: &Harness, turns: usize) {
    for i in 0..turns {
        harness
            .append(Message::user(format!(
                "step {i}: {}",
                "context ".repeat(80)
            )))
            .unwrap();
        harness
            .append(Message::assistant(format!("did step {i}")))
            .unwrap();
    }
}

fn overflow() -> LlmError {
    LlmError::ContextOverflow {
        provider: "openai".into(),
        message: "maximum context length exceeded".into(),
    }
}

fn settings(toml: &str) -> Settings {
    Settings::from_toml(toml, "abridge.toml").unwrap()
}

#[test]
fn overflow_promotes_once_to_a_larger_window_then_compacts() {
    let harness = Harness::builder(Session::in_memory("p"), "gpt-4o")
        .settings(settings(
            "method_order = [\"digest\"]\npromotion_model = \"gpt-4.1\"\n",
        ))
        .window(8_000)
        .build()
        .unwrap();
    filled(&harness, 20);
    let first = run(harness.on_error(&overflow())).unwrap();
    assert_eq!(
        first,
        Recovery::Promoted {
            model: "gpt-4.1".into()
        }
    );
    assert_eq!(harness.model(), "gpt-4.1");
    // Already promoted: the next overflow compacts.
    match run(harness.on_error(&overflow())).unwrap() {
        Recovery::Compacted(pass) => assert!(pass.landed(), "{pass:?}"),
        other => panic!("{other:?}"),
    }
    // Errors compaction cannot fix are left to the host.
    let limited = LlmError::RateLimited {
        provider: "openai".into(),
        retry_after: None,
        message: "slow down".into(),
    };
    assert_eq!(
        run(harness.on_error(&limited)).unwrap(),
        Recovery::NotHandled
    );
}

#[test]
fn a_threshold_pass_appends_the_auto_continue_message() {
    let harness = Harness::builder(Session::in_memory("c"), "gpt-4o")
        .settings(settings(
            "method_order = [\"digest\"]\nauto_continue = \"Carry on with the plan.\"\n",
        ))
        .window(8_000)
        .build()
        .unwrap();
    filled(&harness, 100);
    let pass = run(harness.after_turn()).unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
    let request = harness.request().unwrap();
    assert_eq!(
        request.last().unwrap().plain_text(),
        "Carry on with the plan."
    );
    assert!(harness.tokens() <= harness.limits().target);
}

#[test]
fn disabled_settings_stop_automatic_triggers_but_not_manual_runs() {
    let harness = Harness::builder(Session::in_memory("d"), "gpt-4o")
        .settings(settings(
            "enabled = false\nmid_turn = false\nmethod_order = [\"digest\"]\n",
        ))
        .window(8_000)
        .build()
        .unwrap();
    filled(&harness, 100);
    assert!(harness.tokens() > harness.limits().threshold);
    assert_eq!(
        run(harness.after_turn()).unwrap().status,
        PassStatus::Disabled
    );
    assert_eq!(
        run(harness.mid_turn()).unwrap().status,
        PassStatus::Disabled
    );
    assert_eq!(run(harness.idle()).unwrap().status, PassStatus::Disabled);
    let pass = run(harness.compact(&[], None)).unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
}

#[test]
fn settings_that_do_not_fit_the_window_refuse_to_build() {
    let error = Harness::builder(Session::in_memory("w"), "gpt-4o")
        .settings(settings("keep_recent_tokens = 7000\n"))
        .window(8_000)
        .build()
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("keep_recent_tokens: 7000 must be below"),
        "{error}"
    );
}

#[test]
fn unconfigured_methods_are_skipped_with_a_reason() {
    let harness = Harness::builder(Session::in_memory("s"), "gpt-4o")
        .window(8_000)
        .build()
        .unwrap();
    let skipped: Vec<(&str, &str)> = harness
        .maintenance()
        .not_configured()
        .iter()
        .map(|f| (f.method.as_str(), f.kind.as_str()))
        .collect();
    assert_eq!(
        skipped,
        vec![
            ("remote", "not_configured"),
            ("handoff", "not_configured"),
            ("soft", "not_configured")
        ]
    );
    let names: Vec<&str> = harness
        .maintenance()
        .methods()
        .iter()
        .map(|m| m.name())
        .collect();
    assert_eq!(names, vec!["prune", "snapcompact", "shake", "digest"]);
}

/// Hooks that record what they were shown and answer as told: the host's
/// side of every compaction the Harness runs.
#[derive(Debug, Default)]
struct RecordingHooks {
    cancel: bool,
    before: std::sync::Mutex<Vec<String>>,
    after: std::sync::Mutex<Vec<String>>,
}

#[async_trait::async_trait]
impl abridge::compact::CompactionHooks for RecordingHooks {
    async fn before_compaction(
        &self,
        _plan: &abridge::compact::Plan,
        method: &str,
    ) -> abridge::compact::Before {
        self.before.lock().unwrap().push(method.to_string());
        if self.cancel {
            abridge::compact::Before::Cancel {
                reason: "the host said no".into(),
            }
        } else {
            abridge::compact::Before::Proceed
        }
    }

    async fn while_compacting(&self, _plan: &abridge::compact::Plan) -> abridge::compact::Extra {
        abridge::compact::Extra {
            context: Vec::new(),
            preserve: vec!["HOST-NOTE: the migration plan is in PLAN.md".into()],
        }
    }

    async fn after_compaction(&self, outcome: &abridge::compact::Outcome) {
        self.after.lock().unwrap().push(outcome.method.clone());
    }
}

fn hooked_harness(name: &str, hooks: std::sync::Arc<RecordingHooks>) -> Harness {
    Harness::builder(Session::in_memory(name), "gpt-4o")
        .settings(settings("method_order = [\"digest\"]\n"))
        .window(8_000)
        .hooks(hooks)
        .build()
        .unwrap()
}

#[test]
fn hooks_given_to_the_builder_run_around_every_compaction() {
    let hooks = std::sync::Arc::new(RecordingHooks::default());
    let harness = hooked_harness("hooks", hooks.clone());
    filled(&harness, 100);
    let pass = run(harness.after_turn()).unwrap();
    assert!(pass.landed(), "{pass:?}");
    assert_eq!(*hooks.before.lock().unwrap(), vec!["digest".to_string()]);
    assert_eq!(*hooks.after.lock().unwrap(), vec!["digest".to_string()]);
    // What `while_compacting` preserved is in the checkpoint the model reads.
    let checkpoint = harness
        .request()
        .unwrap()
        .iter()
        .map(Message::plain_text)
        .find(|text| text.contains("<preserved>"))
        .expect("a checkpoint with the host's preserved note");
    assert!(
        checkpoint.contains("HOST-NOTE: the migration plan is in PLAN.md"),
        "{checkpoint}"
    );
}

#[test]
fn a_hook_that_cancels_stops_the_compaction_and_hides_nothing() {
    let hooks = std::sync::Arc::new(RecordingHooks {
        cancel: true,
        ..RecordingHooks::default()
    });
    let harness = hooked_harness("cancel", hooks.clone());
    filled(&harness, 100);
    let before = harness.request().unwrap();
    let pass = run(harness.after_turn()).unwrap();
    assert!(!pass.landed(), "{pass:?}");
    assert_eq!(*hooks.before.lock().unwrap(), vec!["digest".to_string()]);
    assert!(hooks.after.lock().unwrap().is_empty());
    assert!(
        pass.failures
            .iter()
            .any(|f| f.kind.as_str() == "cancelled" && f.message.contains("the host said no")),
        "{pass:?}"
    );
    assert_eq!(harness.request().unwrap(), before);
}

#[test]
fn the_speculative_band_is_its_percent_of_the_threshold() {
    let harness = Harness::builder(Session::in_memory("band"), "gpt-4o")
        .settings(settings("speculative_percent = 20\n"))
        .window(8_000)
        .build()
        .unwrap();
    let threshold = harness.limits().threshold;
    assert!(threshold > 1_000, "{threshold}");
    assert_eq!(
        harness.maintenance().speculative_band(),
        Some(threshold * 20 / 100)
    );
    let off = Harness::builder(Session::in_memory("off"), "gpt-4o")
        .window(8_000)
        .build()
        .unwrap();
    assert_eq!(off.maintenance().speculative_band(), None);
}

#[test]
fn a_builder_with_an_observer_says_so_when_logged() {
    let observer: abridge::Observer = std::sync::Arc::new(|_: &abridge::MaintenanceEvent| {});
    let builder = Harness::builder(Session::in_memory("o"), "gpt-4o").observer(observer);
    let shown = format!("{builder:?}");
    assert!(shown.contains("observer: Some(Observer)"), "{shown}");
    let plain = format!("{:?}", Harness::builder(Session::in_memory("o"), "gpt-4o"));
    assert!(plain.contains("observer: None"), "{plain}");
}

#[test]
fn a_pass_is_needed_only_above_the_threshold() {
    use abridge::compact::Trigger;
    let harness = Harness::builder(Session::in_memory("needed"), "gpt-4o")
        .window(8_000)
        .build()
        .unwrap();
    let maintenance = harness.maintenance();
    let threshold = harness.limits().threshold;
    for trigger in [Trigger::Threshold, Trigger::MidTurn] {
        assert!(!maintenance.needed(trigger, threshold), "{trigger:?}");
        assert!(maintenance.needed(trigger, threshold + 1), "{trigger:?}");
    }
    assert!(!maintenance.needed(Trigger::Idle, threshold / 2));
    assert!(maintenance.needed(Trigger::Idle, threshold / 2 + 1));
    assert!(maintenance.needed(Trigger::Manual, 0));
}
