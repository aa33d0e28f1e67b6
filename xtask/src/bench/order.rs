//! Which method order is the default: every candidate order run as one
//! manual Maintenance pass on each bundled session at three windows, with
//! the size it ends at and a model-free fidelity figure, so the default is
//! chosen by measurement (issue 27).
//!
//! Fidelity is the share of a session's facts still readable in the
//! context after the pass: the user's own requests (the first words of
//! each), the paths the agent wrote, and the last error a tool reported.
//! "Readable" is a substring test on letters and digits only (case, spaces
//! and punctuation ignored), over the text of every message on the
//! surface; a snapcompact checkpoint counts the text printed on its frames
//! and its text edges, as if every frame were read without error (the
//! legibility table gives the real error rate). Model-backed methods
//! (`soft`, `remote`, `handoff`) need a model and are left out: each
//! candidate is the order of the model-free methods, and the model-backed
//! ones keep their place before `digest` in the default.

use std::collections::BTreeSet;
use std::path::Path;
use std::path::PathBuf;

use abridge::Harness;
use abridge::PassStatus;
use abridge::Settings;
use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_session::MemoryStore;
use abridge_session::Session;
use abridge_session::SurfaceOp;
use anyhow::Context;

use super::Section;

/// The windows every order is measured at.
const WINDOWS: [u64; 4] = [32_000, 48_000, 64_000, 200_000];

/// The model the passes are priced and shaped for: it reads images, so
/// snapcompact can run, and its catalog entry carries the Claude
/// tokenizer correction.
const MODEL: &str = "claude-sonnet-4-5";

/// The candidate orders (model-free methods only).
const ORDERS: &[&[&str]] = &[
    &["prune", "snapcompact", "shake", "digest"],
    &["prune", "shake", "snapcompact", "digest"],
    &["prune", "shake", "digest"],
    &["digest"],
    &["snapcompact"],
];

/// Characters of a request's key that must be found for it to count.
const REQUEST_KEY_CHARS: usize = 60;

/// A bundled session's source file and the facts it holds.
struct Sample {
    name: String,
    path: PathBuf,
    facts: Vec<String>,
}

/// One pass: where it ended and how much of the session survived.
struct Run {
    tokens_after: u64,
    status: PassStatus,
    landed: Vec<String>,
    kept: usize,
    facts: usize,
}

/// Runs this area's benchmark; one table.
pub(crate) fn run() -> anyhow::Result<Vec<Section>> {
    let samples = samples()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let mut columns = vec!["order", "window"];
    let names: Vec<String> = samples.iter().map(|s| short_name(&s.name)).collect();
    columns.extend(names.iter().map(String::as_str));
    columns.extend(["mean fidelity", "over the window", "passes above the goal"]);
    let mut section = Section::new(
        "Default method order",
        &format!(
            "Each candidate order of the model-free methods, as one manual Maintenance pass (`Harness::compact`, what `abridge compact` runs) on each bundled session imported fresh, for {MODEL} at a {} window. \
             A cell is the tokens after the pass (the figure `stats` prints) and, in brackets, its fidelity: the share of the session's facts still readable in the context (its user requests, the paths it wrote, its last tool error), a substring test on letters and digits over the text of every message on the surface, frames counted as read without error; a context still over the window scores 0, since the request cannot be sent. \
             `*` marks a pass that ended above its goal, `!` one still above the window, `=` one that did nothing (fixed part above the threshold, or nothing landed).",
            WINDOWS
                .iter()
                .map(|w| format!("{}k", w / 1000))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        &columns,
    );
    for order in ORDERS {
        for window in WINDOWS {
            let mut cells = vec![order.join(", "), format!("{}k", window / 1000)];
            let mut fidelity = 0.0;
            let mut over_window = 0;
            let mut above_goal = 0;
            for sample in &samples {
                let run = run_once(&runtime, sample, order, window)?;
                // A context over the window cannot be sent: nothing of
                // it reaches the model.
                let share = if run.tokens_after > window {
                    0.0
                } else {
                    run.kept as f64 / run.facts.max(1) as f64
                };
                fidelity += share;
                let mark = match run.status {
                    PassStatus::Succeeded => "",
                    _ if run.landed.is_empty() => "=",
                    _ if run.tokens_after > window => "!",
                    _ => "*",
                };
                over_window += usize::from(run.tokens_after > window);
                above_goal += usize::from(run.status == PassStatus::Insufficient);
                cells.push(format!(
                    "{}{mark} ({:.0}%)",
                    run.tokens_after,
                    100.0 * share
                ));
            }
            cells.push(format!(
                "{:.0}%",
                100.0 * fidelity / samples.len().max(1) as f64
            ));
            cells.push(over_window.to_string());
            cells.push(above_goal.to_string());
            section.row(cells);
        }
    }
    let facts: Vec<String> = samples
        .iter()
        .map(|s| format!("{} {}", short_name(&s.name), s.facts.len()))
        .collect();
    section.note(format!(
        "Facts per session: {}. A session no order changed at a window (`=` in every row) adds the same share to every row's mean, so rows compare at one window.",
        facts.join(", ")
    ));
    section.note(format!(
        "The first row is the default order's model-free part (`{}`; `remote` before snapcompact, `handoff` and `soft` after it, are not configured here). Why it is the default, with the same orders measured before snapcompact declined under 20% printed: docs/composition.md, \"The default order, by measurement\".",
        abridge::DEFAULT_METHOD_ORDER.join(", ")
    ));
    Ok(vec![section])
}

/// One pass of `order` at `window` on a fresh import of `sample`.
fn run_once(
    runtime: &tokio::runtime::Runtime,
    sample: &Sample,
    order: &[&str],
    window: u64,
) -> anyhow::Result<Run> {
    let session = import(&sample.path)?;
    let settings = Settings {
        method_order: order.iter().map(|m| (*m).to_string()).collect(),
        ..Settings::default()
    };
    let harness = Harness::builder(session, MODEL)
        .settings(settings)
        .window(window)
        .build()?;
    let pass = runtime.block_on(harness.compact(&[], None))?;
    let text = {
        let session = abridge_compact::host::lock_session(harness.session());
        key(&context_text(&session))
    };
    let kept = sample.facts.iter().filter(|f| text.contains(*f)).count();
    Ok(Run {
        tokens_after: pass.tokens_after,
        status: pass.status,
        landed: pass.outcomes.iter().map(|o| o.method.clone()).collect(),
        kept,
        facts: sample.facts.len(),
    })
}

fn samples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/sessions")
}

fn samples() -> anyhow::Result<Vec<Sample>> {
    let dir = samples_dir();
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl" || x == "traj"))
        .collect();
    paths.sort();
    let mut samples = Vec::new();
    for path in paths {
        let session = import(&path)?;
        samples.push(Sample {
            name: path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            facts: facts(&session),
            path,
        });
    }
    anyhow::ensure!(!samples.is_empty(), "no samples in {}", dir.display());
    Ok(samples)
}

fn import(path: &Path) -> anyhow::Result<Session> {
    let imported = abridge_import::read(path, None)
        .with_context(|| format!("importing {}", path.display()))?;
    Ok(imported.into_session(Box::new(MemoryStore::new()))?.0)
}

/// The sample's agent, for a column heading.
fn short_name(name: &str) -> String {
    name.split("__").next().unwrap_or(name).to_string()
}

/// Letters and digits only, lower case: what the fidelity test compares.
fn key(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The facts of a session, as keys: the first words of every request the
/// user wrote, every path a tool call wrote, and the last tool error's
/// first line that says what failed.
fn facts(session: &Session) -> Vec<String> {
    let mut facts = BTreeSet::new();
    let mut last_error = None;
    for seq in session.active_path() {
        let Some(event) = session.event(seq).and_then(|e| e.message_event()) else {
            continue;
        };
        if event.op != SurfaceOp::Append {
            continue;
        }
        let message = &event.message;
        match message.role {
            Role::User if typed_by_user(message) => {
                let words = key(&text_of(message));
                if words.chars().count() >= 8 && !words.starts_with("thissessionisbeingcontinued") {
                    facts.insert(words.chars().take(REQUEST_KEY_CHARS).collect());
                }
            }
            Role::Assistant => {
                for (_, name, arguments) in message.tool_calls() {
                    let name = name.to_ascii_lowercase();
                    if !["write", "edit", "patch", "create", "replace"]
                        .iter()
                        .any(|k| name.contains(k))
                    {
                        continue;
                    }
                    for field in ["path", "file_path", "filePath", "file"] {
                        if let Some(path) = arguments.get(field).and_then(|v| v.as_str()) {
                            facts.insert(key(path));
                        }
                    }
                }
            }
            Role::Tool => {
                if let Some((_, content, true)) = message.tool_result_block() {
                    let output: String = content.iter().filter_map(Block::as_text).collect();
                    let line = output
                        .lines()
                        .find(|l| l.to_ascii_lowercase().contains("error"))
                        .or_else(|| output.lines().find(|l| !l.trim().is_empty()))
                        .unwrap_or("");
                    let line = key(line);
                    if line.len() >= 8 {
                        last_error = Some(line.chars().take(REQUEST_KEY_CHARS).collect());
                    }
                }
            }
            _ => {}
        }
    }
    facts.extend(last_error);
    facts.into_iter().collect()
}

/// A user message the user wrote: not a checkpoint, not context a
/// harness or an extension injected, not markup.
fn typed_by_user(message: &Message) -> bool {
    if abridge_compact::host::is_checkpoint(message) {
        return false;
    }
    let injected = matches!(
        message.meta.origin,
        Some(Origin::Injected { .. } | Origin::Plugin { .. } | Origin::BranchSummary)
    );
    !injected && !text_of(message).trim_start().starts_with('<')
}

/// Every text a message shows the model: text blocks, tool calls' names
/// and arguments, tool results' text.
fn text_of(message: &Message) -> String {
    let mut out = String::new();
    for block in &message.content {
        match block {
            Block::Text { text } => out.push_str(text),
            Block::ToolCall {
                name, arguments, ..
            } => {
                out.push_str(name);
                out.push_str(&arguments.to_string());
            }
            Block::ToolResult { content, .. } => {
                for inner in content {
                    if let Some(text) = inner.as_text() {
                        out.push_str(text);
                    }
                }
            }
            _ => {}
        }
        out.push('\n');
    }
    out
}

/// The text of the surface as the model reads it: a snapcompact
/// checkpoint as the text on its frames and its edges (its archive, less
/// what was dropped to fit), every other message as [`text_of`].
fn context_text(session: &Session) -> String {
    let mut out = String::new();
    for &seq in session.surface().seqs() {
        let Some(message) = session.message(seq) else {
            continue;
        };
        let printed = abridge_compact::host::summary_of_checkpoint(session, seq).and_then(|data| {
            abridge_snapcompact::archive_from_summary(&data.summary, &data.details)
        });
        match printed {
            Some(archive) => {
                out.push_str(&archive.head);
                out.extend(archive.middle.chars().skip(archive.dropped_chars));
                out.push_str(&archive.tail);
            }
            None => out.push_str(&text_of(message)),
        }
        out.push('\n');
    }
    out
}
