//! The checks `cargo xtask e2e` runs against the live server, through the
//! `abridge` binary a user would run.

use std::path::Path;
use std::process::Command;

use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::Session;
use anyhow::Context;
use anyhow::bail;
use anyhow::ensure;

/// The bundled real session the checks compact: small enough for a 135M
/// model on two cores (about 8k tokens).
const SAMPLE: &str =
    "assets/sessions/swe-agent__marshmallow-1867__function_calling_replace_from_source.traj";

/// A check: (binary, server base URL, workspace root, work dir).
pub(crate) type Check = fn(&Path, &str, &Path, &Path) -> anyhow::Result<()>;

/// The checks of the compaction path, in the order they run.
pub(crate) const CHECKS: [(&str, Check); 3] = [
    ("soft compaction against the real server lands", soft_lands),
    (
        "rejected model output falls through to digest, nothing lost",
        fall_through,
    ),
    (
        "the example agent stays under its window while Maintenance fires",
        example_agent,
    ),
];

/// Imports the sample and compacts it through `soft` on the server: a
/// checkpoint lands, the surface shrinks, invariants hold, and the file
/// before the compaction is an unchanged prefix of the file after.
fn soft_lands(binary: &Path, base_url: &str, root: &Path, work: &Path) -> anyhow::Result<()> {
    let session = work.join("soft.jsonl");
    import(binary, root, &session)?;
    let before_bytes = std::fs::read(&session)?;
    let before = open(&session)?;
    // Room for the sections soft's prompt asks for (files, commands,
    // constraints): at 600 and at 1200 the 135M model's summary was cut
    // short by the limit.
    let report = compact(binary, base_url, &session, "soft", 2_400)?;
    ensure!(
        report["method"] == "soft",
        "expected soft to land, got {report}"
    );
    let (tokens_before, tokens_after) = tokens(&report)?;
    ensure!(
        tokens_after < tokens_before,
        "the surface did not shrink: {report}"
    );
    let after = open(&session)?;
    ensure!(
        after.surface().len() < before.surface().len(),
        "surface went from {} to {} messages",
        before.surface().len(),
        after.surface().len()
    );
    let first = &after.surface_messages()[0];
    let first = if abridge_compact::host::is_checkpoint(first) {
        first
    } else {
        // A leading system prompt stays in front of the checkpoint.
        &after.surface_messages()[1]
    };
    ensure!(
        abridge_compact::host::is_checkpoint(first),
        "no framed checkpoint on the surface"
    );
    let after_bytes = std::fs::read(&session)?;
    ensure!(
        after_bytes.starts_with(&before_bytes),
        "the session file was changed, not only appended to"
    );
    invariants(binary, &session)
}

/// A summary cut by the output cap is rejected; the chain falls through to
/// digest; every original event is still in the log.
fn fall_through(binary: &Path, base_url: &str, root: &Path, work: &Path) -> anyhow::Result<()> {
    let session = work.join("fallthrough.jsonl");
    import(binary, root, &session)?;
    let before_bytes = std::fs::read(&session)?;
    let before = open(&session)?;
    let report = compact(binary, base_url, &session, "soft,digest", 8)?;
    ensure!(
        report["method"] == "digest",
        "expected digest to land, got {report}"
    );
    let failures = report["failures"].as_array().cloned().unwrap_or_default();
    ensure!(
        failures.iter().any(|f| f["method"] == "soft"),
        "soft's failure was not reported: {report}"
    );
    let after = open(&session)?;
    ensure!(
        std::fs::read(&session)?.starts_with(&before_bytes),
        "the session file was rewritten"
    );
    for event in before.events() {
        ensure!(
            after.event(event.seq) == Some(event),
            "event {} changed or vanished",
            event.seq
        );
    }
    let errors = after
        .events()
        .iter()
        .filter_map(|e| e.log())
        .filter(|log| log.kind == abridge_compact::host::TYPE_COMPACTION_END)
        .filter(|log| log.data.get("error").is_some_and(|e| !e.is_null()))
        .count();
    ensure!(
        errors >= 1,
        "the failed soft attempt left no error end event"
    );
    invariants(binary, &session)
}

/// The window the example agent runs under: the smallest abridge takes
/// (`abridge::MIN_WINDOW`), which two dozen short turns fill more than
/// once.
const AGENT_WINDOW: u64 = 2_048;

/// Runs `crates/abridge/examples/agent.rs` against the server: a
/// multi-turn conversation under a small window. Maintenance must land at
/// least twice and no request may exceed the window.
fn example_agent(_binary: &Path, base_url: &str, root: &Path, _work: &Path) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let output = Command::new("cargo")
        .current_dir(root)
        .args([
            "run",
            "--quiet",
            "--release",
            "-p",
            "abridge",
            "--example",
            "agent",
            "--",
        ])
        .args(["--url", base_url, "--model", "smollm2"])
        .args(["--window", &AGENT_WINDOW.to_string(), "--turns", "24"])
        .output()?;
    println!(
        "e2e: example agent took {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    ensure!(
        output.status.success(),
        "the agent failed:\n{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .context("the agent printed a line that is not JSON")?;
    for line in &lines {
        if let Some(tokens) = line["request_tokens"].as_u64() {
            ensure!(
                tokens <= AGENT_WINDOW,
                "a request of {tokens} tokens: {line}"
            );
        }
    }
    let done = lines.last().context("the agent printed nothing")?;
    let passes = done["passes"].as_u64().unwrap_or(0);
    ensure!(
        passes >= 2,
        "Maintenance landed {passes} times, expected at least 2:\n{stdout}"
    );
    let largest = lines
        .iter()
        .filter_map(|l| l["request_tokens"].as_u64())
        .max()
        .unwrap_or(0);
    println!(
        "e2e: agent: {} turns, Maintenance landed {passes} times, largest request {largest} of {AGENT_WINDOW} tokens",
        lines.len().saturating_sub(1)
    );
    Ok(())
}

fn import(binary: &Path, root: &Path, out: &Path) -> anyhow::Result<()> {
    let output = Command::new(binary)
        .arg("import")
        .arg(root.join(SAMPLE))
        .arg("-o")
        .arg(out)
        .output()?;
    if !output.status.success() {
        bail!("import failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    Ok(())
}

fn compact(
    binary: &Path,
    base_url: &str,
    session: &Path,
    methods: &str,
    max_output: u32,
) -> anyhow::Result<serde_json::Value> {
    let started = std::time::Instant::now();
    let output = Command::new(binary)
        .arg("compact")
        .arg(session)
        .args([
            "--method",
            methods,
            "--llm",
            base_url,
            "--llm-model",
            "smollm2",
        ])
        .args([
            "--window",
            "8000",
            "--keep",
            "1500",
            "--llm-input-tokens",
            "2000",
        ])
        .args([
            "--llm-max-output",
            &max_output.to_string(),
            "--llm-attempts",
            "2",
        ])
        .args(["--json"])
        .output()?;
    println!(
        "e2e: compact --method {methods} took {:.1}s",
        started.elapsed().as_secs_f64()
    );
    if !output.status.success() {
        bail!(
            "compact failed:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    serde_json::from_slice(&output.stdout).context("compact --json printed no JSON")
}

fn tokens(report: &serde_json::Value) -> anyhow::Result<(u64, u64)> {
    match (
        report["tokens_before"].as_u64(),
        report["tokens_after"].as_u64(),
    ) {
        (Some(b), Some(a)) => Ok((b, a)),
        _ => bail!("no token figures in {report}"),
    }
}

fn open(path: &Path) -> anyhow::Result<Session> {
    let options = JsonlOptions {
        read_only: true,
        ..JsonlOptions::default()
    };
    let (session, _) = Session::open(Box::new(JsonlStore::open(path, options)?))?;
    Ok(session)
}

/// Runs `abridge check` on `session`; fails with its output when the
/// session breaks an invariant.
pub(crate) fn invariants(binary: &Path, session: &Path) -> anyhow::Result<()> {
    let output = Command::new(binary).arg("check").arg(session).output()?;
    if !output.status.success() {
        bail!(
            "abridge check failed:\n{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}
