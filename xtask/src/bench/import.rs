//! Importing large files: peak memory as a multiple of the input and
//! throughput, per source format.
//!
//! Each input is a bundled sample (or, for the formats without one, the
//! import tests' sample) whose records are repeated until the file is tens
//! of MB, with every id and call id made unique per repetition so the
//! importer does the work a real long session asks of it. Each import runs
//! in its own child process (`xtask bench-child import-peak`), reading the
//! file and writing the abridge log, so its `VmHWM` is its own.

use std::io::BufWriter;
use std::io::Write as _;
use std::path::Path;
use std::time::Instant;

use abridge_import::Format;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use anyhow::Context;
use serde_json::Value;

use super::Section;
use super::fmt_duration;

/// Size each generated input reaches (at least).
const INPUT_BYTES: u64 = 40 * 1024 * 1024;

/// Peak memory target, as a multiple of the input.
const TARGET: f64 = 2.0;

/// Keys whose string values are ids the importers match on.
const ID_KEYS: [&str; 11] = [
    "id",
    "uuid",
    "parentId",
    "parentUuid",
    "logicalParentUuid",
    "leafUuid",
    "toolCallId",
    "tool_use_id",
    "tool_call_id",
    "call_id",
    "firstKeptEntryId",
];

/// How an input is grown from its sample.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// JSONL: the first `header` lines once, then the rest repeated.
    Lines { header: usize },
    /// One JSON object whose `history` and `trajectory` arrays repeat.
    SweDocument,
    /// One JSON array of events with numeric ids.
    EventArray,
    /// A markdown chat log: the requests and replies of its last chat
    /// that has any, repeated at its end (so inside the last chat, the one
    /// an import picks).
    Chat,
}

/// One measured format.
struct Case {
    label: &'static str,
    format: Format,
    sample: &'static str,
    shape: Shape,
}

const CASES: [Case; 8] = [
    Case {
        label: "pi (v1)",
        format: Format::Pi,
        sample: "assets/sessions/pi-mono__large-session.jsonl",
        shape: Shape::Lines { header: 1 },
    },
    Case {
        label: "Claude Code",
        format: Format::ClaudeCode,
        sample: "assets/sessions/claude-code__spotter__4d5611e5.jsonl",
        shape: Shape::Lines { header: 0 },
    },
    Case {
        label: "Codex",
        format: Format::Codex,
        sample: "assets/sessions/codex__localpush__rollout-2026-02-23T12-54-34-redacted.jsonl",
        shape: Shape::Lines { header: 1 },
    },
    Case {
        label: "Codex (legacy)",
        format: Format::Codex,
        sample: "crates/import/tests/data/codex-legacy-rollout.jsonl",
        shape: Shape::Lines { header: 1 },
    },
    Case {
        label: "SWE-agent",
        format: Format::SweAgent,
        sample: "assets/sessions/swe-agent__marshmallow-1867__function_calling_replace_from_source.traj",
        shape: Shape::SweDocument,
    },
    Case {
        label: "aider",
        format: Format::Aider,
        sample: "crates/import/tests/data/aider-three-chats.md",
        shape: Shape::Chat,
    },
    Case {
        label: "OpenHands (trajectory)",
        format: Format::OpenHands,
        sample: "crates/import/tests/data/openhands-trajectory.json",
        shape: Shape::EventArray,
    },
    // Evaluation output: one record per task; an import reads the one it
    // picks (the last), not the file.
    Case {
        label: "OpenHands (evaluation output)",
        format: Format::OpenHands,
        sample: "crates/import/tests/data/openhands-output.jsonl",
        shape: Shape::Lines { header: 0 },
    },
];

/// Runs this area's benchmarks; each returned section becomes a table.
pub(crate) fn run() -> anyhow::Result<Vec<Section>> {
    let dir = std::env::temp_dir().join(format!("abridge-bench-import-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let result = measure_all(&dir);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(vec![result?])
}

fn measure_all(dir: &Path) -> anyhow::Result<Section> {
    let mut section = Section::new(
        "Import: peak memory and throughput per format",
        &format!(
            "Each format's sample repeated until the file is at least {} MB, every id and call id made unique per repetition (pi, Claude Code, Codex and SWE-agent: the bundled samples; Codex legacy, aider and OpenHands: the import tests' samples; OpenHands evaluation output repeats its records, and an import reads the last one). Each import runs once in its own process (`xtask bench-child import-peak`): `abridge_import::write_with` (what `abridge import` runs), which reads the file twice, first for its header and report with every event checked by the session's rules, then to write each event to a new JSONL log as it leaves the importer's window. Peak memory is that process's VmHWM after the import minus its VmRSS before it. `in memory` is the alternative in the same run: `abridge_import::read` (every event held as a draft), then `Imported::into_session`. `opening the written log` is the peak of `Session::open` on the log the import wrote, in another process, also over the input's size; MB/s is input bytes over the streamed import's wall time, both passes.",
            INPUT_BYTES / 1_000_000
        ),
        &[
            "format",
            "input",
            "events written",
            "peak memory",
            "peak / input",
            "in memory: peak / input",
            "opening the written log",
            "time",
            "in memory: time",
            "throughput",
            "target",
        ],
    );
    let mut missed = Vec::new();
    for (index, case) in CASES.iter().enumerate() {
        let input = dir.join(format!("input-{index}"));
        let size = generate(case, &input)?;
        let out = dir.join(format!("out-{index}.jsonl"));
        let run = |mode: &str| {
            let _ = std::fs::remove_file(&out);
            super::child_figures::<4>(&[
                "import-peak".as_ref(),
                mode.as_ref(),
                input.as_os_str(),
                case.format.name().as_ref(),
                out.as_os_str(),
            ])
        };
        let [memory_before, memory_peak, memory_nanos, _] = run("memory")?;
        let [before, peak, nanos, events] = run("stream")?;
        // What opening the written log costs, in a process of its own: an
        // import that ends holding the session cannot peak below it.
        let [open_before, open_peak, _] =
            super::child_figures(&["load-peak".as_ref(), out.as_os_str()])?;
        let open_ratio = open_peak.saturating_sub(open_before) as f64 / size as f64;
        let memory_ratio = memory_peak.saturating_sub(memory_before) as f64 / size as f64;
        let growth = peak.saturating_sub(before);
        let ratio = growth as f64 / size as f64;
        let time = std::time::Duration::from_nanos(nanos);
        let met = ratio < TARGET;
        if !met {
            missed.push(format!(
                "{} ({:.0} input bytes and {:.0} peak bytes per event)",
                case.label,
                size as f64 / events.max(1) as f64,
                growth as f64 / events.max(1) as f64
            ));
        }
        section.row(vec![
            case.label.to_string(),
            format!("{:.1} MB", size as f64 / 1e6),
            events.to_string(),
            format!("{:.0} MB", growth as f64 / 1e6),
            format!("{ratio:.2}x"),
            format!("{memory_ratio:.2}x"),
            format!("{open_ratio:.2}x"),
            fmt_duration(time),
            fmt_duration(std::time::Duration::from_nanos(memory_nanos)),
            super::mb_per_s(size as usize, time),
            format!("< {TARGET}x ({})", if met { "met" } else { "missed" }),
        ]);
        let _ = std::fs::remove_file(&input);
        let _ = std::fs::remove_file(&out);
    }
    section.note(if missed.is_empty() {
        format!("Every format imports within {TARGET}x of its input's size. Before the importers streamed (whole file read, every line parsed into a `serde_json::Value` kept until the end, one write of all events), issue 15 measured 5.3x on a 66 MB pi-style file; the `in memory` column is what holding every event as a draft still costs, which the formats of many tiny events (aider, Codex legacy) cannot afford. Opening the written log holds every event (`Session` is the log in memory), so its column stays above the target for those formats.")
    } else {
        format!(
            "Missed the {TARGET}x target: {}. The streamed import keeps, per event, the importer's index (parent, source line, role) and the log writer's skeleton (parent, surface operation): a few dozen bytes, plus the call-id maps of formats with tool calls.",
            missed.join(", ")
        )
    });
    Ok(section)
}

/// `bench-child import-peak MODE INPUT FORMAT OUT`: imports INPUT into a
/// new log at OUT and prints VmRSS before, VmHWM after, the nanoseconds
/// taken and the events written. MODE `stream` writes as it reads
/// (`abridge_import::write_with`, what `abridge import` does); `memory`
/// reads every event first (`read`, then `Imported::into_session`).
pub(crate) fn child(args: &[String]) -> anyhow::Result<()> {
    let [mode, input, format, out] = args else {
        anyhow::bail!("import-peak needs MODE INPUT FORMAT OUT");
    };
    let format: Format = format.parse().map_err(|e| anyhow::anyhow!("{e}"))?;
    let before = super::rss_bytes().context("no /proc/self/status")?;
    let start = Instant::now();
    let store = Box::new(JsonlStore::open(out, JsonlOptions::default())?);
    let events = match mode.as_str() {
        "stream" => {
            let options = abridge_import::ReadOptions {
                format: Some(format),
                ..abridge_import::ReadOptions::default()
            };
            abridge_import::write_with(Path::new(input), &options, store)?.events
        }
        "memory" => {
            let imported = abridge_import::read(Path::new(input), Some(format))?;
            imported.into_session(store)?.0.len()
        }
        other => anyhow::bail!("import-peak: unknown mode {other}"),
    };
    let elapsed = start.elapsed();
    let peak = super::peak_rss_bytes().context("no /proc/self/status")?;
    println!("{before} {peak} {} {events}", elapsed.as_nanos());
    Ok(())
}

/// Writes the input for `case` at `path`; returns its size in bytes.
fn generate(case: &Case, path: &Path) -> anyhow::Result<u64> {
    let sample = std::fs::read_to_string(case.sample)
        .with_context(|| format!("cannot read {}", case.sample))?;
    let mut out = BufWriter::new(std::fs::File::create(path)?);
    match case.shape {
        Shape::Lines { header } => {
            let lines: Vec<&str> = sample.lines().filter(|l| !l.trim().is_empty()).collect();
            let (head, body) = lines.split_at(header.min(lines.len()));
            let body: Vec<Value> = body
                .iter()
                .map(|l| serde_json::from_str(l))
                .collect::<Result<_, _>>()?;
            let mut written = 0u64;
            for line in head {
                writeln!(out, "{line}")?;
                written += line.len() as u64 + 1;
            }
            let mut last_id: Option<String> = None;
            let mut round = 0;
            while written < INPUT_BYTES {
                let mut round_last = last_id.clone();
                for value in &body {
                    let mut value = value.clone();
                    unique(&mut value, round);
                    if round > 0 {
                        link(&mut value, last_id.as_deref());
                    }
                    if let Some(id) = ["uuid", "id"]
                        .iter()
                        .find_map(|k| value.get(*k).and_then(Value::as_str))
                    {
                        round_last = Some(id.to_string());
                    }
                    let line = serde_json::to_string(&value)?;
                    writeln!(out, "{line}")?;
                    written += line.len() as u64 + 1;
                }
                last_id = round_last;
                round += 1;
            }
        }
        Shape::SweDocument => {
            let mut document: Value = serde_json::from_str(&sample)?;
            let history = document["history"].as_array().cloned().unwrap_or_default();
            let steps = document["trajectory"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let rounds = (INPUT_BYTES / sample.len().max(1) as u64 + 1) as usize;
            let mut grown = Vec::with_capacity(history.len() * rounds);
            let mut grown_steps = Vec::with_capacity(steps.len() * rounds);
            for round in 0..rounds {
                for entry in &history {
                    let mut entry = entry.clone();
                    unique(&mut entry, round);
                    grown.push(entry);
                }
                grown_steps.extend(steps.iter().cloned());
            }
            document["history"] = Value::Array(grown);
            document["trajectory"] = Value::Array(grown_steps);
            serde_json::to_writer_pretty(&mut out, &document)?;
        }
        Shape::EventArray => {
            let events: Vec<Value> = serde_json::from_str(&sample)?;
            let stride = events
                .iter()
                .filter_map(|e| e.get("id").and_then(Value::as_u64))
                .max()
                .unwrap_or(0)
                + 1;
            let rounds = (INPUT_BYTES / sample.len().max(1) as u64 + 1) as usize;
            let mut grown = Vec::with_capacity(events.len() * rounds);
            for round in 0..rounds {
                for event in &events {
                    let mut event = event.clone();
                    for key in ["id", "cause"] {
                        if let Some(n) = event.get(key).and_then(Value::as_u64) {
                            event[key] = Value::from(n + stride * round as u64);
                        }
                    }
                    unique(&mut event, round);
                    grown.push(event);
                }
            }
            serde_json::to_writer_pretty(&mut out, &grown)?;
        }
        Shape::Chat => {
            const START: &str = "# aider chat started at";
            let mut starts: Vec<usize> = sample.match_indices(START).map(|(i, _)| i).collect();
            starts.push(sample.len());
            // The last chat with a request gives the body: from its first
            // request to its end. (The sample's last chat is a banner only.)
            let body = starts
                .windows(2)
                .rev()
                .find_map(|w| {
                    let chat = &sample[w[0]..w[1]];
                    chat.find("\n#### ").map(|i| &chat[i + 1..])
                })
                .context("the aider sample has no request")?;
            let mut text = sample.clone();
            if !text.ends_with('\n') {
                text.push('\n');
            }
            while (text.len() as u64) < INPUT_BYTES {
                text.push('\n');
                text.push_str(body);
            }
            out.write_all(text.as_bytes())?;
        }
    }
    out.flush()?;
    drop(out);
    Ok(std::fs::metadata(path)?.len())
}

/// Appends `~round` to every id string in `value` (none in round 0).
fn unique(value: &mut Value, round: usize) {
    if round == 0 {
        return;
    }
    match value {
        Value::Object(map) => {
            for (key, inner) in map.iter_mut() {
                match inner {
                    Value::String(s) if ID_KEYS.contains(&key.as_str()) => {
                        s.push_str(&format!("~{round}"));
                    }
                    Value::Array(items) if key == "tool_call_ids" => {
                        for item in items {
                            if let Value::String(s) = item {
                                s.push_str(&format!("~{round}"));
                            }
                        }
                    }
                    _ => unique(inner, round),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| unique(item, round)),
        _ => {}
    }
}

/// Hangs a record with no parent onto the previous repetition's last
/// record, so the repetitions make one chain.
fn link(value: &mut Value, last: Option<&str>) {
    let Some(last) = last else {
        return;
    };
    for key in ["parentUuid", "parentId"] {
        if value.get(key).is_some_and(Value::is_null) {
            value[key] = Value::String(last.to_string());
        }
    }
}
