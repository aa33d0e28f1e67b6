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

fn compaction_starts(harness: &Harness) -> usize {
    abridge::compact::host::lock_session(harness.session())
        .events()
        .iter()
        .filter(|e| {
            e.log()
                .is_some_and(|l| l.kind == abridge::compact::host::TYPE_COMPACTION_START)
        })
        .count()
}

#[test]
fn a_promotion_sizes_every_later_pass_to_the_promoted_window() {
    let settings = settings("method_order = [\"digest\"]\npromotion_model = \"gpt-4.1\"\n");
    let harness = Harness::builder(Session::in_memory("sized"), "gpt-4o")
        .settings(settings.clone())
        .window(8_000)
        .build()
        .unwrap();
    filled(&harness, 100);
    assert!(harness.tokens() > harness.limits().threshold);
    assert!(matches!(
        run(harness.on_error(&overflow())).unwrap(),
        Recovery::Promoted { .. }
    ));
    // The limits are the promoted model's, by the settings' own rules.
    let window = abridge::llm::Catalog::builtin()
        .lookup("gpt-4.1")
        .entry
        .context_window;
    assert!(window > 1_000_000, "{window}");
    assert_eq!(harness.limits(), settings.limits(window).unwrap());
    // The context is far below the new threshold: no trigger compacts.
    assert_eq!(
        run(harness.after_turn()).unwrap().status,
        PassStatus::NotNeeded
    );
    assert_eq!(
        run(harness.mid_turn()).unwrap().status,
        PassStatus::NotNeeded
    );
    assert_eq!(compaction_starts(&harness), 0);
}

#[test]
fn a_reply_cut_at_the_output_limit_compacts_to_the_window_minus_the_reserve() {
    let harness = Harness::builder(Session::in_memory("cut"), "gpt-4o")
        .settings(settings("method_order = [\"digest\"]\n"))
        .window(8_000)
        .build()
        .unwrap();
    filled(&harness, 100);
    let limits = harness.limits();
    let Recovery::Compacted(pass) = run(harness.on_length_stop()).unwrap() else {
        panic!("a length stop without a promotion model compacts");
    };
    assert_eq!(pass.trigger, abridge::compact::Trigger::IncompleteOutput);
    assert_eq!(pass.goal, limits.window - limits.reserve);
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
    assert!(harness.tokens() <= limits.window - limits.reserve);
    assert_eq!(compaction_starts(&harness), 1);
}

/// A harness whose context is above half the threshold (where idle acts)
/// and below the threshold (where a turn would act).
fn between_half_and_threshold(toml: &str) -> Harness {
    let harness = Harness::builder(Session::in_memory("idle"), "gpt-4o")
        .settings(settings(toml))
        .window(8_000)
        .build()
        .unwrap();
    while harness.tokens() <= harness.limits().threshold * 2 / 3 {
        filled(&harness, 1);
    }
    assert!(harness.tokens() <= harness.limits().threshold);
    harness
}

#[test]
fn the_idle_trigger_runs_once_after_idle_minutes_without_activity() {
    use std::time::Duration;
    let minutes = |m: u64| Duration::from_secs(m * 60);
    let harness = between_half_and_threshold("method_order = [\"digest\"]\nidle_minutes = 30\n");
    let quiet_from = std::time::Instant::now();
    harness.note_activity(quiet_from);
    assert!(!harness.idle_due(quiet_from + minutes(29)));
    let early = run(harness.tick(quiet_from + minutes(29))).unwrap();
    assert_eq!(early.status, PassStatus::NotNeeded);
    assert_eq!(compaction_starts(&harness), 0);

    let pass = run(harness.tick(quiet_from + minutes(30))).unwrap();
    assert_eq!(pass.trigger, abridge::compact::Trigger::Idle);
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
    assert_eq!(compaction_starts(&harness), 1);
    // One pass for the quiet stretch, however long it lasts.
    let later = run(harness.tick(quiet_from + minutes(300))).unwrap();
    assert_eq!(later.status, PassStatus::NotNeeded);
    assert_eq!(compaction_starts(&harness), 1);

    // An append through the session itself (not the Harness) is activity
    // too, from the tick that sees it.
    for i in 0..40 {
        abridge::compact::host::lock_session(harness.session())
            .append_message(Message::user(format!("more {i}: {}", "words ".repeat(60))))
            .unwrap();
    }
    let seen = quiet_from + minutes(400);
    assert!(!harness.idle_due(seen));
    assert!(!harness.idle_due(seen + minutes(29)));
    let again = run(harness.tick(seen + minutes(30))).unwrap();
    assert_eq!(again.status, PassStatus::Succeeded, "{again:?}");
    assert_eq!(compaction_starts(&harness), 2);
}

#[test]
fn without_idle_minutes_the_clock_never_runs_a_pass() {
    let harness = between_half_and_threshold("method_order = [\"digest\"]\n");
    let far = std::time::Instant::now() + std::time::Duration::from_secs(24 * 3600);
    assert!(!harness.idle_due(far));
    assert_eq!(run(harness.tick(far)).unwrap().status, PassStatus::Disabled);
    assert_eq!(compaction_starts(&harness), 0);
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
    // Without its feature, snapcompact is in the order but not built.
    let mut expected = vec![("remote", "not_configured")];
    if !cfg!(feature = "snapcompact") {
        expected.push(("snapcompact", "not_configured"));
    }
    expected.extend([("handoff", "not_configured"), ("soft", "not_configured")]);
    assert_eq!(skipped, expected);
    let names: Vec<&str> = harness
        .maintenance()
        .methods()
        .iter()
        .map(|m| m.name())
        .collect();
    let built: Vec<&str> = if cfg!(feature = "snapcompact") {
        vec!["prune", "snapcompact", "shake", "digest"]
    } else {
        vec!["prune", "shake", "digest"]
    };
    assert_eq!(names, built);
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
impl abridge::compact::host::CompactionHooks for RecordingHooks {
    async fn before_compaction(
        &self,
        _plan: &abridge::compact::Plan,
        method: &str,
    ) -> abridge::compact::host::Before {
        self.before.lock().unwrap().push(method.to_string());
        if self.cancel {
            abridge::compact::host::Before::Cancel {
                reason: "the host said no".into(),
            }
        } else {
            abridge::compact::host::Before::Proceed
        }
    }

    async fn while_compacting(
        &self,
        _plan: &abridge::compact::Plan,
    ) -> abridge::compact::host::Extra {
        abridge::compact::host::Extra {
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

/// A model-backed method (by name) that answers at once.
#[cfg(feature = "tokio")]
#[derive(Debug)]
struct QuickSoft;

#[cfg(feature = "tokio")]
#[async_trait::async_trait]
impl abridge::compact::CompactionMethod for QuickSoft {
    fn name(&self) -> &str {
        "soft"
    }

    fn capabilities(&self) -> abridge::compact::Capabilities {
        abridge::compact::Capabilities::model_backed()
    }

    async fn run(
        &self,
        _plan: &abridge::compact::Plan,
    ) -> Result<abridge::compact::MethodOutput, abridge::compact::MethodError> {
        Ok(abridge::compact::MethodOutput::Checkpoint(
            abridge::compact::Checkpoint::new("## Goal\nthe steps").with_short_summary("steps"),
        ))
    }
}

// Speculation runs on tokio: without the feature it is off (tests/executors.rs).
#[cfg(feature = "tokio")]
#[tokio::test]
async fn speculation_starts_when_the_context_enters_its_percent_of_the_threshold() {
    let started = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = started.clone();
    let observer: abridge::Observer = std::sync::Arc::new(move |e: &abridge::MaintenanceEvent| {
        if let abridge::MaintenanceEvent::SpeculationStarted { tokens, .. } = e {
            sink.lock().unwrap().push(*tokens);
        }
    });
    let harness = Harness::builder(Session::in_memory("band"), "gpt-4o")
        .settings(settings("speculative_percent = 20\n"))
        .methods(vec![std::sync::Arc::new(QuickSoft)])
        .window(8_000)
        .observer(observer)
        .build()
        .unwrap();
    let threshold = harness.limits().threshold;
    // The band is the top 20% below the threshold.
    let line = threshold - threshold / 5;
    while harness.tokens() <= threshold {
        filled(&harness, 1);
        let tokens = harness.tokens();
        harness.after_turn().await.unwrap();
        let first = started.lock().unwrap().first().copied();
        match first {
            None => assert!(tokens <= line, "none started at {tokens}, above {line}"),
            Some(at) => {
                assert!(at > line && at == tokens, "started at {at}, line {line}");
                return;
            }
        }
    }
    panic!("no speculation started below the threshold {threshold}");
}
