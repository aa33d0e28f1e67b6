//! Issue 34, item 4: a binary that embeds the command line with its own
//! method registered (`abridge_cli::run` with a registry) can name that
//! method in `--method`, settings files, `compact` and `simulate`; the
//! stock binary still refuses the name with its usual message.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use abridge::MethodRegistry;
use abridge::compact::Checkpoint;
use abridge::compact::CompactionMethod;
use abridge::compact::MethodError;
use abridge::compact::MethodOutput;
use abridge::compact::Plan;
use abridge::llm::Origin;
use abridge::session::JsonlOptions;
use abridge::session::JsonlStore;
use abridge::session::Session;
use abridge_test_support::cli::Cli;
use abridge_test_support::cli::stderr;
use abridge_test_support::samples::PI;

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

/// The command line of a binary that registered `tally`.
fn embedded(args: &[&str]) -> ExitCode {
    let mut registry = MethodRegistry::builtin();
    registry.register("tally", |_| Ok(Arc::new(Tally))).unwrap();
    abridge_cli::run(
        std::iter::once("abridge").chain(args.iter().copied()),
        registry,
    )
}

fn checkpoint_methods(path: &Path) -> Vec<String> {
    let store = JsonlStore::open(path, JsonlOptions::default()).unwrap();
    let session = Session::open(Box::new(store)).unwrap().0;
    session
        .surface_messages()
        .iter()
        .filter_map(|m| match &m.meta.origin {
            Some(Origin::Checkpoint { method, .. }) => Some(method.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn an_embedding_binary_compacts_and_simulates_with_its_own_method() {
    let dir = tempfile::tempdir().unwrap();
    let stock = Cli::new(env!("CARGO_BIN_EXE_abridge"));
    let session = stock.import(dir.path(), PI);
    let path = session.to_str().unwrap();

    // The stock binary does not know the name, and says so as before.
    let refused = stock.run(&["compact", path, "--method", "tally", "--window", "64000"]);
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("unknown method \"tally\"; known methods: prune, remote"),
        "{}",
        stderr(&refused)
    );

    let code = embedded(&[
        "simulate", path, "--window", "64000", "--method", "tally", "--json",
    ]);
    assert_eq!(code, ExitCode::SUCCESS);
    assert!(
        checkpoint_methods(&session).is_empty(),
        "simulate writes nothing"
    );

    // In a settings file beside the session, then by `compact`.
    std::fs::write(
        dir.path().join("abridge.toml"),
        "method_order = [\"tally\"]\n",
    )
    .unwrap();
    let code = embedded(&["compact", path, "--window", "64000"]);
    assert_eq!(code, ExitCode::SUCCESS);
    assert_eq!(checkpoint_methods(&session), ["tally"]);
}
