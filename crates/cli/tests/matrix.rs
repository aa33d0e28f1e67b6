//! The product as a user runs it: every bundled real session imported, then
//! compacted by each method alone and by the default order, at four windows
//! and for two model lines, through the `abridge` binary, with further
//! commands chained on the result. After every command the invariants are
//! checked, and every violation is collected so one run shows them all:
//!
//! - nothing already written changed: the log before is a byte prefix of
//!   the log after;
//! - `check` passes;
//! - a pass that landed something ends at or under the window, and a pass
//!   that exits 0 ends at or under its target;
//! - one number: `compact`'s tokens after, `stats`' tokens and the
//!   Harness's figure for the same log, model and window are equal;
//! - a digest's goal line is a request the user made (or the goal of a
//!   checkpoint the session already held), never text an agent injected;
//! - no landed step reclaims less than the pass's floor.
//!
//! Each sample is its own test, so the four run side by side.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

use abridge_test_support::cli::Cli;
use abridge_test_support::cli::stderr;
use abridge_test_support::cli::stdout;
use abridge_test_support::samples;
use serde_json::Value;

/// The model-free methods, each run alone; `None` is the default order.
const ORDERS: &[Option<&str>] = &[
    None,
    Some("digest"),
    Some("prune"),
    Some("mask"),
    Some("shake"),
    Some("trim"),
    Some("snapcompact"),
];

const WINDOWS: &[u64] = &[16_000, 32_000, 64_000, 200_000];

/// Two model lines: Anthropic's (its own tokenizer family and image
/// billing) and OpenAI's (o200k).
const MODELS: &[&str] = &["claude-sonnet-4-5", "gpt-5"];

/// The floor a landed step must reclaim when the report does not state
/// one: 5% of the threshold.
const DEFAULT_FLOOR_PERCENT: u64 = 5;

fn cli() -> Cli {
    Cli::new(env!("CARGO_BIN_EXE_abridge"))
}

/// What went wrong across one sample's runs.
#[derive(Default)]
struct Violations(Vec<String>);

impl Violations {
    fn push(&mut self, case: &str, what: impl std::fmt::Display) {
        self.0.push(format!("{case}: {what}"));
    }

    fn assert_none(self, sample: &str) {
        assert!(
            self.0.is_empty(),
            "{} violation(s) on {sample}:\n{}",
            self.0.len(),
            self.0.join("\n")
        );
    }
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// The texts a user wrote (and the texts of checkpoints already in the
/// log, whose goals a later digest may carry), read from the imported log
/// itself, so the goal check does not trust the code under test.
struct Authored {
    requests: Vec<String>,
    checkpoints: Vec<String>,
}

fn normalized(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn authored(log: &Path) -> Authored {
    let mut authored = Authored {
        requests: Vec::new(),
        checkpoints: Vec::new(),
    };
    let text = std::fs::read_to_string(log).unwrap();
    for line in text.lines().skip(1) {
        let event: Value = serde_json::from_str(line).unwrap();
        let message = &event["data"]["message"];
        if event["type"] != "message" || message["role"] != "user" {
            continue;
        }
        let body: String = message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|block| block["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n");
        match message["meta"]["origin"]["kind"].as_str() {
            Some("user") => authored.requests.push(normalized(&body)),
            Some("checkpoint") => authored.checkpoints.push(normalized(&body)),
            _ => {}
        }
    }
    authored
}

/// Continuation notes agents inject when they resume after their own
/// compaction: never a goal.
const INJECTED: &[&str] = &[
    "this session is being continued from a previous conversation",
    "context checkpoint compaction",
    "another language model started to solve this problem",
];

impl Authored {
    /// `None` when `goal` is a request the user made or a goal stated in
    /// a checkpoint the session already held; otherwise why not.
    fn refuses(&self, goal: &str) -> Option<String> {
        let goal = normalized(goal.trim_end_matches('…').trim_end_matches("..."));
        let lower = goal.to_lowercase();
        if goal.is_empty() {
            return Some("the goal line is empty".to_owned());
        }
        if let Some(note) = INJECTED.iter().find(|note| lower.contains(*note)) {
            return Some(format!("the goal is injected text ({note:?}): {goal:?}"));
        }
        let found = self
            .requests
            .iter()
            .chain(&self.checkpoints)
            .any(|text| text.contains(&goal));
        (!found).then(|| format!("the goal {goal:?} is no request of the session's user"))
    }
}

/// The first line after `## Goal` in a digest checkpoint, if the context
/// holds one.
fn goal_line(context: &[Value]) -> Option<String> {
    context.iter().find_map(|message| {
        message["content"]
            .as_array()?
            .iter()
            .filter_map(|block| block["text"].as_str())
            .find_map(|text| {
                let after = text.split("## Goal\n").nth(1)?;
                Some(after.lines().next().unwrap_or("").to_owned())
            })
    })
}

/// An error's first line: enough to tell failures apart in a long list.
fn first_line(text: &str) -> &str {
    text.trim().lines().next().unwrap_or("")
}

fn json(output: &Output) -> Option<Value> {
    serde_json::from_slice(&output.stdout).ok()
}

/// The tokens the next request costs, as `stats` prints it.
fn stats_tokens(log: &Path, model: &str, window: u64) -> Result<u64, String> {
    let output = cli().run(&[
        "stats",
        path_str(log),
        "--model",
        model,
        "--window",
        &window.to_string(),
        "--json",
    ]);
    if !output.status.success() {
        return Err(format!("stats failed: {}", first_line(&stderr(&output))));
    }
    let report = json(&output).ok_or("stats printed no JSON")?;
    report["tokens"]["measure"]["tokens"]
        .as_u64()
        .ok_or_else(|| "stats printed no tokens.measure.tokens".to_owned())
}

/// The same figure from the library, as a framework author's Harness
/// gives it for this log, model and window.
fn harness_tokens(log: &Path, model: &str, window: u64) -> Result<u64, String> {
    let store = abridge_session::JsonlStore::open(log, abridge_session::JsonlOptions::default())
        .map_err(|error| format!("the library cannot open the log: {error}"))?;
    let (session, _) = abridge_session::Session::open(Box::new(store))
        .map_err(|error| format!("the library cannot open the session: {error}"))?;
    let harness = abridge::Harness::builder(session, model)
        .window(window)
        .build()
        .map_err(|error| format!("the Harness refuses the log: {error}"))?;
    Ok(harness.tokens())
}

fn check(log: &Path, case: &str, after: &str, violations: &mut Violations) {
    let output = cli().run(&["check", path_str(log)]);
    if !output.status.success() {
        violations.push(
            case,
            format!(
                "check fails after {after}: {}{}",
                first_line(&stdout(&output)),
                first_line(&stderr(&output))
            ),
        );
    }
}

fn prefix_kept(before: &[u8], log: &Path, case: &str, after: &str, violations: &mut Violations) {
    let now = std::fs::read(log).unwrap();
    if !now.starts_with(before) {
        violations.push(
            case,
            format!(
                "{after} changed bytes already in the log ({} bytes before, {} after)",
                before.len(),
                now.len()
            ),
        );
    }
}

/// Runs one `compact` on a fresh copy of the imported log and checks
/// everything it and the commands chained after it print.
fn one_case(
    imported: &Path,
    authored: &Authored,
    dir: &Path,
    order: Option<&str>,
    window: u64,
    model: &str,
    violations: &mut Violations,
) {
    let label = order.unwrap_or("default");
    let case = format!("{label} at {window} for {model}");
    let log = dir.join(format!("{label}-{window}-{model}.jsonl"));
    std::fs::copy(imported, &log).unwrap();
    let before = std::fs::read(&log).unwrap();

    let window_arg = window.to_string();
    let mut args = vec![
        "compact",
        path_str(&log),
        "--model",
        model,
        "--window",
        &window_arg,
        "--json",
    ];
    if let Some(method) = order {
        args.extend(["--method", method]);
    }
    let output = cli().run(&args);
    prefix_kept(&before, &log, &case, "compact", violations);
    check(&log, &case, "compact", violations);
    let Some(report) = json(&output) else {
        violations.push(
            &case,
            format!(
                "compact printed no JSON report (exit {:?}): {}",
                output.status.code(),
                first_line(&stderr(&output))
            ),
        );
        return;
    };
    let after = report["tokens_after"].as_u64().unwrap_or(u64::MAX);
    let target = report["target"].as_u64().unwrap_or(0);
    let threshold = report["threshold"].as_u64().unwrap_or(0);
    let landed = report["landed"].as_array().cloned().unwrap_or_default();
    let succeeded = output.status.success();

    if !landed.is_empty() && after > window {
        violations.push(
            &case,
            format!(
                "landed {} step(s) and ended at {after} tokens, over the window",
                landed.len()
            ),
        );
    }
    if succeeded && after > target {
        violations.push(
            &case,
            format!("exited 0 at {after} tokens, above the target of {target}"),
        );
    }
    let floor = report["floor"]
        .as_u64()
        .unwrap_or(threshold * DEFAULT_FLOOR_PERCENT / 100);
    for step in &landed {
        let (from, to) = (
            step["tokens_before"].as_u64().unwrap_or(0),
            step["tokens_after"].as_u64().unwrap_or(0),
        );
        if from.saturating_sub(to) < floor {
            violations.push(
                &case,
                format!(
                    "{} landed {from} -> {to}, under the floor of {floor} tokens",
                    step["method"]
                ),
            );
        }
    }

    // One number, three places.
    match stats_tokens(&log, model, window) {
        Ok(stats) if stats != after => violations.push(
            &case,
            format!("compact says {after} tokens after, stats says {stats}"),
        ),
        Ok(_) => {}
        Err(error) => violations.push(&case, error),
    }
    match harness_tokens(&log, model, window) {
        Ok(harness) if harness != after => violations.push(
            &case,
            format!("compact says {after} tokens after, the Harness says {harness}"),
        ),
        Ok(_) => {}
        Err(error) => violations.push(&case, error),
    }

    // What the model sees next: a digest's goal is the user's.
    let context = cli().run(&["context", path_str(&log), "--json"]);
    match serde_json::from_slice::<Vec<Value>>(&context.stdout) {
        Ok(messages) => {
            if let Some(goal) = goal_line(&messages)
                && let Some(why) = authored.refuses(&goal)
            {
                violations.push(&case, why);
            }
        }
        Err(_) => violations.push(
            &case,
            format!(
                "context printed no message list: {}",
                first_line(&stderr(&context))
            ),
        ),
    }

    // A second pass on the result is a write like any other.
    let before = std::fs::read(&log).unwrap();
    let again = cli().run(&args);
    prefix_kept(&before, &log, &case, "a second compact", violations);
    check(&log, &case, "a second compact", violations);
    if again.status.success()
        && let Some(report) = json(&again)
        && report["tokens_after"].as_u64().unwrap_or(u64::MAX) > target
    {
        violations.push(
            &case,
            format!(
                "a second compact exited 0 at {} tokens, above the target of {target}",
                report["tokens_after"]
            ),
        );
    }
}

/// `branch --to T` with and without `--summary` at a few targets spread
/// over the log, each followed by `check`.
fn branches(imported: &Path, dir: &Path, violations: &mut Violations) {
    let text = std::fs::read_to_string(imported).unwrap();
    let seqs: Vec<u64> = text
        .lines()
        .skip(1)
        .filter_map(|line| serde_json::from_str::<Value>(line).ok()?["seq"].as_u64())
        .collect();
    let picks = [
        seqs.len() / 7,
        seqs.len() / 3,
        seqs.len() / 2,
        seqs.len() * 4 / 5,
    ];
    for index in picks {
        let Some(seq) = seqs.get(index) else { continue };
        for summary in [false, true] {
            let case = format!(
                "branch --to {seq}{}",
                if summary { " --summary" } else { "" }
            );
            let log = dir.join(format!("branch-{seq}-{summary}.jsonl"));
            std::fs::copy(imported, &log).unwrap();
            let before = std::fs::read(&log).unwrap();
            let to = seq.to_string();
            let mut args = vec!["branch", path_str(&log), "--to", &to];
            if summary {
                args.push("--summary");
            }
            let output = cli().run(&args);
            prefix_kept(&before, &log, &case, "branch", violations);
            if output.status.success() {
                check(&log, &case, "branch", violations);
            }
        }
    }
}

fn run_sample(name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let imported = cli().import(dir.path(), name);
    let authored = authored(&imported);
    let mut violations = Violations::default();
    check(&imported, "import", "import", &mut violations);
    for order in ORDERS {
        for window in WINDOWS {
            for model in MODELS {
                one_case(
                    &imported,
                    &authored,
                    dir.path(),
                    *order,
                    *window,
                    model,
                    &mut violations,
                );
            }
        }
    }
    branches(&imported, dir.path(), &mut violations);
    violations.assert_none(name);
}

#[test]
fn the_pi_session_keeps_every_invariant_through_every_command() {
    run_sample(samples::PI);
}

#[test]
fn the_claude_code_session_keeps_every_invariant_through_every_command() {
    run_sample(samples::CLAUDE);
}

#[test]
fn the_codex_session_keeps_every_invariant_through_every_command() {
    run_sample(samples::CODEX);
}

#[test]
fn the_swe_agent_session_keeps_every_invariant_through_every_command() {
    run_sample(samples::SWE);
}

/// The matrix's own helpers, checked on hand-made input so a broken
/// helper cannot pass the matrix by seeing nothing.
#[test]
fn the_goal_check_refuses_injected_and_unknown_text() {
    let authored = Authored {
        requests: vec![normalized("Fix the   failing test in parser.rs")],
        checkpoints: vec![normalized(
            "This session is being continued from a previous conversation. Primary request: port the CLI",
        )],
    };
    assert_eq!(authored.refuses("Fix the failing test"), None);
    assert_eq!(authored.refuses("port the CLI…"), None);
    assert!(
        authored
            .refuses("This session is being continued from a previous conversation")
            .is_some()
    );
    assert!(authored.refuses("yeah, do it all").is_some());
    assert!(authored.refuses("").is_some());
    let context = vec![serde_json::json!({
        "role": "user",
        "content": [{"type": "text", "text": "intro"}, {"type": "text", "text": "## Goal\nFix it\n\n## Next"}]
    })];
    assert_eq!(goal_line(&context).as_deref(), Some("Fix it"));
}
