//! The method registry: built-in methods declare what they are, a host's
//! own method is first-class (settings, the Harness, manual passes), and
//! a method that stores more than text expands its checkpoints through an
//! expansion registered beside it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::io::Write;
use std::sync::Arc;

use abridge::DEFAULT_METHOD_ORDER;
use abridge::Harness;
use abridge::KNOWN_METHODS;
use abridge::MethodRegistry;
use abridge::MethodSources;
use abridge::PassStatus;
use abridge::RegistryError;
use abridge::Settings;
use abridge::SummarizerModel;
use abridge::compact::Capabilities;
use abridge::compact::Checkpoint;
use abridge::compact::CompactionMethod;
use abridge::compact::ErrorKind;
use abridge::compact::MethodError;
use abridge::compact::MethodOutput;
use abridge::compact::OutputKind;
use abridge::compact::Plan;
use abridge::compact::host::CheckpointExpansion;
use abridge::compact::host::Destination;
use abridge::compact::host::ExpansionError;
use abridge::compact::host::SurfaceMessage;
use abridge::llm::Block;
use abridge::llm::Message;
use abridge::llm::Origin;
use abridge::session::Session;
use abridge_test_support::scripted::ScriptedClient;

/// A host's own method: a checkpoint naming how many messages it hides.
#[derive(Debug)]
struct Tally;

#[async_trait::async_trait]
impl CompactionMethod for Tally {
    fn name(&self) -> &str {
        "tally"
    }

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        let text = format!("[tally] {} messages hidden", plan.messages().len());
        Ok(MethodOutput::Checkpoint(
            Checkpoint::new(text).with_short_summary("tally"),
        ))
    }
}

fn with_tally() -> MethodRegistry {
    let mut registry = MethodRegistry::builtin();
    registry.register("tally", |_| Ok(Arc::new(Tally))).unwrap();
    registry
}

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

/// Sources with every built-in configured: a scripted summarizer and a
/// remote endpoint that is never called.
fn full_sources() -> MethodSources {
    let client = Arc::new(ScriptedClient::new(Vec::new()).fallback("summary"));
    let remote = abridge::basic::remote_method(abridge::basic::RemoteConfig::new(
        abridge::basic::RemoteKind::Endpoint,
        "http://127.0.0.1:9/summary",
        "m",
    ))
    .unwrap();
    MethodSources {
        summarizer: Some(SummarizerModel {
            client,
            model: "m".to_string(),
            retry: abridge::llm::RetryPolicy::default(),
            soft: abridge::basic::SoftConfig::default(),
            handoff_file: None,
            handoff_max_tokens: None,
        }),
        remote: Some(remote),
        ..MethodSources::offline("claude-sonnet-4-5")
    }
}

/// Every built-in method, built from the registry, says what it is; the
/// speculated ones are the ones speculated before capabilities existed.
#[test]
fn every_builtin_method_declares_what_it_is() {
    let settings = Settings {
        method_order: KNOWN_METHODS.iter().map(|m| m.to_string()).collect(),
        ..Settings::default()
    };
    let set = MethodRegistry::builtin().build(&settings, &full_sources());
    assert!(set.skipped.is_empty(), "{:?}", set.skipped);
    let built: Vec<&str> = set.methods.iter().map(|m| m.name()).collect();
    assert_eq!(built, KNOWN_METHODS);
    let names = |test: &dyn Fn(Capabilities) -> bool| -> BTreeSet<&str> {
        set.methods
            .iter()
            .filter(|m| test(m.capabilities()))
            .map(|m| m.name())
            .collect()
    };
    let set_of = |names: &[&'static str]| names.iter().copied().collect::<BTreeSet<_>>();
    assert_eq!(
        names(&|c| c.speculated()),
        set_of(&["remote", "handoff", "soft"])
    );
    assert_eq!(
        names(&|c| c.calls_model()),
        set_of(&["remote", "handoff", "soft"])
    );
    assert_eq!(names(&|c| !c.runs_on_overflow()), set_of(&["handoff"]));
    assert_eq!(names(&|c| c.resends_input()), set_of(&["handoff"]));
    assert_eq!(
        names(&|c| c.output() == OutputKind::Rewrites),
        set_of(&["prune", "mask", "shake", "trim"])
    );
}

#[test]
fn the_name_lists_come_from_the_registry() {
    assert_eq!(MethodRegistry::builtin().names(), KNOWN_METHODS);
    for name in DEFAULT_METHOD_ORDER {
        assert!(KNOWN_METHODS.contains(name), "{name} is not registered");
    }
    assert_eq!(with_tally().names().last(), Some(&"tally"));
    assert!(!MethodRegistry::builtin().contains("tally"));
}

#[test]
fn a_name_is_registered_once_and_must_be_writable() {
    let mut registry = with_tally();
    let again = registry.register("tally", |_| Ok(Arc::new(Tally)));
    assert_eq!(
        again.err(),
        Some(RegistryError::Duplicate {
            name: "tally".into()
        })
    );
    let builtin = registry.register("digest", |_| Ok(Arc::new(Tally)));
    assert!(matches!(builtin, Err(RegistryError::Duplicate { .. })));
    let comma = registry
        .register("a,b", |_| Ok(Arc::new(Tally)))
        .unwrap_err();
    assert_eq!(
        comma.to_string(),
        "method name \"a,b\" may hold only ASCII letters, digits, '-' and '_'"
    );
    assert!(matches!(
        registry.register("", |_| Ok(Arc::new(Tally))),
        Err(RegistryError::BadName { .. })
    ));
    // A builder must make a method that answers to its name.
    registry.register("alias", |_| Ok(Arc::new(Tally))).unwrap();
    let settings = Settings {
        method_order: vec!["alias".into()],
        ..Settings::default()
    };
    let set = registry.build(&settings, &MethodSources::offline("gpt-4o"));
    assert!(set.methods.is_empty());
    assert_eq!(
        set.skipped[0].message,
        "alias skipped: its builder made a method named \"tally\""
    );
    let orphan = registry.register_expansion("nobody", Arc::new(Stamp));
    assert!(matches!(orphan, Err(RegistryError::Unregistered { .. })));
}

/// Issue 34, item 4: a custom name in a settings file.
#[test]
fn a_registered_name_is_accepted_in_settings_files_and_others_keep_their_error() {
    let text = "method_order = [\"prune\", \"tally\"]\n";
    let error = Settings::from_toml(text, "t").unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "t:1: method_order: unknown method \"tally\"; known: {}",
            KNOWN_METHODS.join(", ")
        )
    );
    let settings = Settings::from_toml_using(text, "t", &with_tally()).unwrap();
    assert_eq!(settings.method_order, ["prune", "tally"]);
    let json =
        Settings::from_json_using("{\"method_order\": [\"tally\"]}", "s.json", &with_tally());
    assert_eq!(json.unwrap().method_order, ["tally"]);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abridge.toml");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    assert!(Settings::load(&path).is_err());
    assert!(Settings::load_using(&path, &with_tally()).is_ok());
    let beside = Settings::beside_using(&dir.path().join("s.jsonl"), &with_tally()).unwrap();
    assert_eq!(beside.unwrap().method_order, ["prune", "tally"]);
}

/// Issue 34, item 4: the Harness builds a custom name of `method_order`
/// from its registry, runs it in automatic and named manual passes.
#[test]
fn a_registered_method_runs_from_the_order_and_by_name() {
    let registry = with_tally();
    let settings =
        Settings::from_toml_using("method_order = [\"tally\"]\n", "t", &registry).unwrap();
    let harness = Harness::builder(Session::in_memory("t"), "gpt-4o")
        .settings(settings)
        .registry(registry)
        .window(8_000)
        .build()
        .unwrap();
    assert!(harness.maintenance().not_configured().is_empty());
    filled(&harness, 40);
    let pass = run(harness.compact(&[], None)).unwrap();
    assert_eq!(pass.status, PassStatus::Succeeded, "{pass:?}");
    assert_eq!(pass.outcomes[0].method, "tally");
    let first = harness.request().unwrap()[0].plain_text();
    assert!(first.contains("[tally]"), "{first}");

    filled(&harness, 40);
    let named = run(harness.compact(&["tally".to_string()], None)).unwrap();
    assert_eq!(named.outcomes[0].method, "tally", "{named:?}");
    assert!(harness.registry().contains("tally"));
}

/// Without the registry the same order skips the name, saying why.
#[test]
fn an_unregistered_name_is_skipped_as_unknown() {
    let settings = Settings {
        method_order: vec!["tally".into(), "digest".into()],
        ..Settings::default()
    };
    let harness = Harness::builder(Session::in_memory("t"), "gpt-4o")
        .settings(settings)
        .window(8_000)
        .build()
        .unwrap();
    let skipped = harness.maintenance().not_configured();
    assert_eq!(skipped.len(), 1);
    assert_eq!(
        skipped[0].message,
        "tally skipped: unknown method \"tally\""
    );
}

/// Issue 34, item 4: `.methods(build_methods(..))` keeps the list of
/// methods that could not be built, and passes report them.
#[test]
fn methods_built_by_hand_keep_the_ones_that_could_not_be_built() {
    let settings = Settings {
        method_order: vec!["soft".into(), "digest".into()],
        ..Settings::default()
    };
    let (mut methods, skipped) =
        abridge::build_methods(&settings, &MethodSources::offline("gpt-4o"));
    methods.insert(0, Arc::new(Tally));
    let harness = Harness::builder(Session::in_memory("t"), "gpt-4o")
        .method_set((methods, skipped))
        .window(8_000)
        .build()
        .unwrap();
    let kept: Vec<(&str, ErrorKind)> = harness
        .maintenance()
        .not_configured()
        .iter()
        .map(|f| (f.method.as_str(), f.kind))
        .collect();
    assert_eq!(kept, [("soft", ErrorKind::NotConfigured)]);
    filled(&harness, 40);
    let pass = run(harness.compact(&[], None)).unwrap();
    assert_eq!(pass.outcomes[0].method, "tally");
    assert!(
        pass.failures.iter().any(|f| f.method == "soft"),
        "{:?}",
        pass.failures
    );
}

/// A checkpoint that stores a marker, expanded at send time.
#[derive(Debug)]
struct Stamp;

impl CheckpointExpansion for Stamp {
    fn expand(
        &self,
        at: SurfaceMessage<'_>,
        destination: Option<Destination<'_>>,
    ) -> Result<Option<Message>, ExpansionError> {
        match &at.message.meta.origin {
            Some(Origin::Checkpoint { method, .. }) if method == "tally" => {
                let mut expanded = at.message.clone();
                expanded.content = vec![Block::text(format!(
                    "expanded checkpoint {} for {}",
                    at.seq,
                    destination.map_or("anyone", |d| d.dialect)
                ))];
                Ok(Some(expanded))
            }
            _ => Ok(None),
        }
    }
}

/// Issue 31: a method that stores more than text registers how its
/// checkpoint expands; the request builder runs it without knowing it.
#[test]
fn a_registered_expansion_shapes_the_request_and_only_for_its_registry() {
    let mut registry = with_tally();
    registry
        .register_expansion("tally", Arc::new(Stamp))
        .unwrap();
    let harness = Harness::builder(Session::in_memory("t"), "gpt-4o")
        .settings(Settings {
            method_order: vec!["tally".into()],
            ..Settings::default()
        })
        .registry(registry)
        .window(8_000)
        .build()
        .unwrap();
    filled(&harness, 40);
    run(harness.compact(&[], None)).unwrap();
    let request = harness.request().unwrap();
    assert!(
        request[0].plain_text().starts_with("expanded checkpoint "),
        "{}",
        request[0].plain_text()
    );
    assert!(request[0].plain_text().ends_with(" for anyone"));
    // The built-in expansions leave a checkpoint they do not own alone.
    let session = abridge::compact::host::lock_session(harness.session());
    let plain = abridge::build_request(&session, &abridge::RequestTarget::default()).unwrap();
    assert!(plain[0].plain_text().contains("[tally]"));
}

/// Images carried as pixels (a frame reference is an image by address).
fn images(message: &Message) -> usize {
    message
        .content
        .iter()
        .filter(|b| {
            matches!(
                b,
                Block::Image {
                    source: abridge::llm::ImageSource::Base64 { .. },
                    ..
                }
            )
        })
        .count()
}

/// The built-in registry's expansions draw snapcompact's frames at send
/// time: the log keeps frame references, the request carries images.
#[test]
fn snapcompact_checkpoints_are_drawn_by_the_registered_expansion() {
    use abridge_test_support::samples::PI;
    use abridge_test_support::samples::sample;
    let session = abridge::import::read(&sample(PI), None)
        .unwrap()
        .into_session(Box::new(abridge::session::MemoryStore::new()))
        .unwrap()
        .0;
    let harness = Harness::builder(session, "claude-sonnet-4-5")
        .window(100_000)
        .build()
        .unwrap();
    let pass = run(harness.compact(&["snapcompact".to_string()], None)).unwrap();
    let seq = pass.outcomes[0].checkpoint_seq.expect("a checkpoint");
    let stored = abridge::compact::host::lock_session(harness.session())
        .message(seq)
        .unwrap()
        .as_ref()
        .clone();
    assert_eq!(images(&stored), 0, "the log keeps no pixels");
    let sent = harness
        .request()
        .unwrap()
        .into_iter()
        .find(|m| matches!(&m.meta.origin, Some(Origin::Checkpoint { .. })))
        .unwrap();
    assert!(images(&sent) > 0, "the request carries the frames");
    let session = abridge::compact::host::lock_session(harness.session());
    let expanded = abridge::expand_frames(&session).unwrap();
    assert!(expanded.iter().any(|m| images(m) > 0));
}
