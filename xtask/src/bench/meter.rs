//! Benchmarks for the meter area: tokenizing speed against Python
//! `tiktoken` (and tiktoken-rs), `measure()` after one append on a
//! million-event session, and a cold measure of the largest sample.

use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;
use std::time::Instant;

use abridge_llm::Block;
use abridge_llm::Catalog;
use abridge_llm::Message;
use abridge_meter::Tiktoken;
use abridge_meter::TokenMeter;
use abridge_meter::Tokenizer;
use abridge_session::Draft;
use abridge_session::Session;
use anyhow::Context;

use super::Section;
use super::fmt_duration;
use super::mb_per_s;
use super::median_time;

/// Runs this area's benchmarks; each returned section becomes a table.
pub(crate) fn run() -> anyhow::Result<Vec<Section>> {
    // Build the tables first so their one-time cost is reported apart.
    let started = Instant::now();
    Tiktoken::o200k().warm_up();
    let table_build = started.elapsed();
    let samples = load_samples()?;
    Ok(vec![
        counting(&samples, table_build)?,
        append_then_measure()?,
        cold_measure(&samples)?,
        start_up()?,
    ])
}

/// The `first-count` child: counts one short text with o200k (`count`),
/// or does nothing (`none`), and exits. The two differ only by what the
/// first count costs a fresh process.
pub(crate) fn first_count(args: &[String]) -> anyhow::Result<()> {
    match args.first().map(String::as_str) {
        Some("count") => {
            let tokens = Tiktoken::o200k().count("Fix the failing test in parser.rs, then run it.");
            println!("{tokens}");
        }
        Some("none") => println!("0"),
        other => anyhow::bail!("first-count takes count or none, not {other:?}"),
    }
    Ok(())
}

/// Median wall time of 30 runs of `bench-child first-count MODE`.
fn first_count_time(mode: &str) -> anyhow::Result<Duration> {
    let mut samples = Vec::new();
    for _ in 0..30 {
        let start = Instant::now();
        super::run_child(&[
            std::ffi::OsStr::new("first-count"),
            std::ffi::OsStr::new(mode),
        ])?;
        samples.push(start.elapsed());
    }
    samples.sort();
    Ok(samples[samples.len() / 2])
}

/// A whole `abridge` process that counts (`stats`) against one that only
/// opens and checks (`check`), on the smallest bundled sample: what a CLI
/// user or a short-lived host pays for the tokenizer before its first
/// count.
fn start_up() -> anyhow::Result<Section> {
    let root = std::env::current_dir()?;
    let cli = crate::release_cli::build_cli(&root)?;
    let dir = std::env::temp_dir().join(format!("abridge-bench-start-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let smallest = std::fs::read_dir(samples_dir()?)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| is_sample(p))
        .min_by_key(|p| std::fs::metadata(p).map_or(u64::MAX, |m| m.len()))
        .context("no sample")?;
    let session = dir.join("small.jsonl");
    let _ = std::fs::remove_file(&session);
    let status = std::process::Command::new(&cli)
        .arg("import")
        .arg(&smallest)
        .arg("-o")
        .arg(&session)
        .stdout(std::process::Stdio::null())
        .status()?;
    anyhow::ensure!(status.success(), "abridge import failed");
    let time = |command: &str| -> anyhow::Result<Duration> {
        let mut samples = Vec::new();
        for _ in 0..30 {
            let start = Instant::now();
            let status = std::process::Command::new(&cli)
                .arg(command)
                .arg(&session)
                .stdout(std::process::Stdio::null())
                .status()?;
            samples.push(start.elapsed());
            anyhow::ensure!(status.success(), "abridge {command} failed");
        }
        samples.sort();
        Ok(samples[samples.len() / 2])
    };
    let stats = time("stats")?;
    let check = time("check")?;
    let _ = std::fs::remove_dir_all(&dir);
    let name = smallest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut section = Section::new(
        "Start-up: a new process's first count",
        &format!(
            "Wall time of whole processes, median of 30 runs each. First, a process that counts one short sentence with o200k against the same process counting nothing: the difference is what the tokenizer costs a fresh process before its first count (the target). Then the `abridge` command on `{name}` imported: `stats` counts every message, `check` opens the file and counts nothing. The rank tables are compiled into the binary (built from tiktoken-rs's published tables by the meter's build script) and read in place; before, building them took about 150-180 ms per process."
        ),
        &["command", "median", "target"],
    );
    let counted = first_count_time("count")?;
    let idle = first_count_time("none")?;
    let first = counted.saturating_sub(idle);
    section.row(vec![
        "process that counts one short text, o200k".into(),
        fmt_duration(counted),
        String::new(),
    ]);
    section.row(vec![
        "the same process, counting nothing".into(),
        fmt_duration(idle),
        String::new(),
    ]);
    section.row(vec![
        "start to first count (the difference)".into(),
        fmt_duration(first),
        format!(
            "< 10 ms ({})",
            if first < Duration::from_millis(10) {
                "met"
            } else {
                "missed"
            }
        ),
    ]);
    section.row(vec![
        "abridge stats (counts every message)".into(),
        fmt_duration(stats),
        String::new(),
    ]);
    section.row(vec![
        "abridge check (opens, counts nothing)".into(),
        fmt_duration(check),
        String::new(),
    ]);
    section.note(format!(
        "The 1-minute load average was {} when this ran.",
        std::fs::read_to_string("/proc/loadavg")
            .ok()
            .and_then(|l| l.split_whitespace().next().map(str::to_string))
            .unwrap_or_else(|| "unknown".into())
    ));
    Ok(section)
}

/// One sample session and the text the meter tokenizes in it.
struct Sample {
    name: String,
    session: Session,
    text: String,
}

fn samples_dir() -> anyhow::Result<PathBuf> {
    for dir in ["tests/data", "../shared/samples"] {
        let path = Path::new(dir);
        if path.is_dir()
            && std::fs::read_dir(path)?
                .flatten()
                .any(|e| is_sample(&e.path()))
        {
            return Ok(path.to_path_buf());
        }
    }
    anyhow::bail!("no sample sessions in tests/data or ../shared/samples")
}

fn is_sample(path: &Path) -> bool {
    path.extension()
        .is_some_and(|x| x == "jsonl" || x == "traj")
}

fn load_samples() -> anyhow::Result<Vec<Sample>> {
    let dir = samples_dir()?;
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| is_sample(p))
        .collect();
    paths.sort();
    let mut samples = Vec::new();
    for path in paths {
        let Ok(imported) = abridge_import::read(&path, None) else {
            continue;
        };
        let mut session = Session::in_memory(&imported.header.session_id);
        imported
            .append_to(&mut session)
            .with_context(|| format!("importing {}", path.display()))?;
        let mut text = String::new();
        for event in session.events() {
            if let Some(message) = event.message() {
                message_text(message, &mut text);
            }
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        samples.push(Sample {
            name,
            session,
            text,
        });
    }
    anyhow::ensure!(!samples.is_empty(), "no sample could be imported");
    Ok(samples)
}

/// The text the meter tokenizes in a message, joined by newlines.
fn message_text(message: &Message, out: &mut String) {
    fn blocks(content: &[Block], out: &mut String) {
        for block in content {
            let piece = match block {
                Block::Text { text } => text.clone(),
                Block::Thinking {
                    thinking,
                    signature,
                } => format!("{thinking}{}", signature.as_deref().unwrap_or("")),
                Block::RedactedThinking { data } => data.clone(),
                Block::Native { item, .. } => item.to_string(),
                Block::ToolCall {
                    name, arguments, ..
                } => format!("{name}{arguments}"),
                Block::ToolResult { content, .. } => {
                    blocks(content, out);
                    continue;
                }
                Block::Image { .. } => continue,
            };
            out.push_str(&piece);
            out.push('\n');
        }
    }
    blocks(&message.content, out);
}

/// What Python tiktoken measured on a text.
struct PythonRun {
    tokens: usize,
    seconds: f64,
    version: String,
}

const PYTHON_SCRIPT: &str = r#"
import json, sys, time
import tiktoken
enc = tiktoken.get_encoding("o200k_base")
text = open(sys.argv[1], encoding="utf-8", newline="").read()
enc.encode_ordinary(text[:1000])
times = []
for _ in range(int(sys.argv[2])):
    t = time.perf_counter()
    n = len(enc.encode_ordinary(text))
    times.append(time.perf_counter() - t)
times.sort()
print(json.dumps({"tokens": n, "seconds": times[len(times) // 2], "version": tiktoken.__version__}))
"#;

/// Folder of the `.tiktoken` files tiktoken-rs ships, found in the cargo
/// registry.
fn tiktoken_rs_assets() -> Option<PathBuf> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
    let registry = cargo_home.join("registry").join("src");
    for index in std::fs::read_dir(registry).ok()?.flatten() {
        let mut crates: Vec<PathBuf> = std::fs::read_dir(index.path())
            .ok()?
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("tiktoken-rs-"))
            })
            .collect();
        crates.sort();
        if let Some(found) = crates
            .into_iter()
            .rev()
            .find(|p| p.join("assets/o200k_base.tiktoken").is_file())
        {
            return Some(found.join("assets"));
        }
    }
    None
}

/// A TIKTOKEN_CACHE_DIR holding o200k_base under the name Python tiktoken
/// looks for: the SHA-1 hex of its public URL.
fn python_cache_dir(scratch: &Path) -> anyhow::Result<PathBuf> {
    // sha1("https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken")
    const O200K_CACHE_NAME: &str = "fb374d419588a4632f3f557e76b4b70aebbca790";
    let assets =
        tiktoken_rs_assets().context("tiktoken-rs assets not found in the cargo registry")?;
    let dir = scratch.join("tiktoken-cache");
    std::fs::create_dir_all(&dir)?;
    std::fs::copy(
        assets.join("o200k_base.tiktoken"),
        dir.join(O200K_CACHE_NAME),
    )?;
    Ok(dir)
}

fn python_tiktoken(text: &str, runs: usize) -> Result<PythonRun, String> {
    let scratch = std::env::temp_dir().join(format!("abridge-bench-meter-{}", std::process::id()));
    let result = (|| -> anyhow::Result<PythonRun> {
        std::fs::create_dir_all(&scratch)?;
        let cache = python_cache_dir(&scratch)?;
        let text_path = scratch.join("text.txt");
        std::fs::write(&text_path, text)?;
        let output = Command::new("python3")
            .arg("-c")
            .arg(PYTHON_SCRIPT)
            .arg(&text_path)
            .arg(runs.to_string())
            .env("TIKTOKEN_CACHE_DIR", &cache)
            .output()
            .context("python3 not found")?;
        anyhow::ensure!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
                .lines()
                .last()
                .unwrap_or("python3 failed")
        );
        let v: serde_json::Value = serde_json::from_slice(&output.stdout)?;
        Ok(PythonRun {
            tokens: v["tokens"].as_u64().unwrap_or(0) as usize,
            seconds: v["seconds"].as_f64().unwrap_or(f64::NAN),
            version: v["version"].as_str().unwrap_or("?").to_string(),
        })
    })();
    let _ = std::fs::remove_dir_all(&scratch);
    result.map_err(|e| format!("{e:#}"))
}

fn counting(samples: &[Sample], table_build: Duration) -> anyhow::Result<Section> {
    let mut section = Section::new(
        "Token counting (o200k)",
        "Tokens per second over the text of every message in each real sample (text, thinking, \
         tool names and arguments, tool results), counted by abridge-meter's o200k tokenizer, by \
         tiktoken-rs, and by Python `tiktoken` (`encode_ordinary`, run as a subprocess on the same \
         text, its tables served offline from tiktoken-rs's copy). Median of repeated runs; \
         `vs Python` is abridge-meter's speed divided by Python tiktoken's.",
        &[
            "text",
            "MB",
            "tokens",
            "abridge-meter",
            "tiktoken-rs",
            "Python tiktoken",
            "vs Python",
            "same count",
        ],
    );
    let tokenizer = Tiktoken::o200k();
    let reference = tiktoken_rs::o200k_base_singleton();
    let mut all = String::new();
    let mut rows: Vec<(String, &str)> = samples
        .iter()
        .map(|s| (s.name.clone(), s.text.as_str()))
        .collect();
    for s in samples {
        all.push_str(&s.text);
    }
    rows.push(("all samples".to_string(), all.as_str()));
    let mut python_note = None;
    let mut ratios = Vec::new();
    for (name, text) in rows {
        let ours_tokens = tokenizer.count(text);
        let ours = median_time(Duration::from_secs(2), || tokenizer.count(text));
        let rs = median_time(Duration::from_millis(1500), || {
            reference.encode_ordinary(text).len()
        });
        let rs_tokens = reference.encode_ordinary(text).len();
        let (py_cell, ratio_cell, py_tokens) = match python_tiktoken(text, 5) {
            Ok(run) => {
                python_note.get_or_insert(format!("Python tiktoken {}.", run.version));
                let py = Duration::from_secs_f64(run.seconds);
                let ratio = py.as_secs_f64() / ours.as_secs_f64().max(1e-12);
                ratios.push(ratio);
                (
                    mb_per_s(text.len(), py),
                    format!("{ratio:.2}x"),
                    Some(run.tokens),
                )
            }
            Err(why) => {
                python_note.get_or_insert(format!("Python tiktoken not available: {why}."));
                ("not installed".to_string(), "n/a".to_string(), None)
            }
        };
        let same = ours_tokens == rs_tokens && py_tokens.is_none_or(|p| p == ours_tokens);
        section.row(vec![
            name,
            format!("{:.2}", text.len() as f64 / 1e6),
            ours_tokens.to_string(),
            mb_per_s(text.len(), ours),
            mb_per_s(text.len(), rs),
            py_cell,
            ratio_cell,
            if same {
                "yes".into()
            } else {
                format!("NO (tiktoken-rs {rs_tokens}, Python {py_tokens:?})")
            },
        ]);
    }
    if let Some(note) = python_note {
        section.note(note);
    }
    if let Some(min) = ratios.iter().copied().reduce(f64::min) {
        section.note(format!(
            "Target: at least 1.0x Python tiktoken. Slowest ratio {min:.2}x: {}.",
            if min >= 1.0 { "met" } else { "MISSED" }
        ));
    }
    section.note(format!(
        "o200k tables ready in {} (compiled in; read in place on first use).",
        fmt_duration(table_build)
    ));
    Ok(section)
}

/// Events in the long session.
const LONG_SESSION: usize = 1_000_000;

fn append_then_measure() -> anyhow::Result<Section> {
    let mut section = Section::new(
        "measure() after one append",
        "A 1,000,000-event in-memory session (user and assistant turns with usage reports, tool \
         calls and results). The meter has measured it once; then, 2000 times, one short message \
         is appended (not timed) and `measure()` is timed: it counts the new message and updates \
         the running total and anchor.",
        &[
            "session",
            "first measure (cold cache)",
            "measure after append (median)",
            "p99",
        ],
    );
    let mut session = Session::in_memory("bench-long");
    let mut batch = Vec::with_capacity(10_000);
    for i in 0..LONG_SESSION {
        let message = match i % 4 {
            0 => Message::user(format!("please look at file {i}")),
            1 => {
                let mut m = Message::assistant("reading it");
                m.content.push(Block::ToolCall {
                    id: format!("c{i}"),
                    name: "read".into(),
                    arguments: serde_json::json!({ "path": format!("src/f{i}.rs") }),
                });
                m.meta.usage = Some(abridge_llm::Usage {
                    input: 1000 + i as u64,
                    output: 20,
                    ..Default::default()
                });
                m
            }
            2 => Message::tool_result(format!("c{}", i - 1), format!("fn f{i}() {{}}\n"), false),
            _ => Message::assistant(format!("done with {i}")),
        };
        batch.push(Draft::message(message));
        if batch.len() == 10_000 {
            session.append_batch(std::mem::take(&mut batch))?;
        }
    }
    if !batch.is_empty() {
        session.append_batch(batch)?;
    }
    let mut meter = TokenMeter::for_model(&Catalog::builtin().lookup("gpt-5").entry);
    let t = Instant::now();
    let first = meter.measure(&session);
    let cold = t.elapsed();
    let mut times = Vec::with_capacity(2000);
    for i in 0..2000 {
        session.append_message(Message::user(format!("and one more thing, number {i}")))?;
        let t = Instant::now();
        std::hint::black_box(meter.measure(&session));
        times.push(t.elapsed());
    }
    times.sort();
    let median = times[times.len() / 2];
    let p99 = times[times.len() * 99 / 100];
    anyhow::ensure!(
        meter.measure(&session) == meter.measure_full(&session),
        "incremental and full measures differ"
    );
    section.row(vec![
        format!("{} events, {} tokens", session.len(), first.tokens),
        fmt_duration(cold),
        fmt_duration(median),
        fmt_duration(p99),
    ]);
    section.note(format!(
        "Target: under 10 µs. Median {}: {}.",
        fmt_duration(median),
        if median < Duration::from_micros(10) {
            "met"
        } else {
            "MISSED"
        }
    ));
    Ok(section)
}

fn cold_measure(samples: &[Sample]) -> anyhow::Result<Section> {
    let mut section = Section::new(
        "Cold measure of the largest sample",
        "A fresh meter (empty seq cache, tokenizer tables already built) measures the whole \
         surface of the largest imported sample: every visible message counted once. Median of \
         repeated runs, each with a new meter.",
        &[
            "sample",
            "events",
            "surface messages",
            "tokens (estimate)",
            "anchored",
            "cold measure",
            "warm measure",
        ],
    );
    let largest = samples
        .iter()
        .max_by_key(|s| s.text.len())
        .context("no samples")?;
    let entry = Catalog::builtin().lookup("claude-sonnet-4-5").entry;
    let mut measure = None;
    let cold = median_time(Duration::from_secs(3), || {
        let mut meter = TokenMeter::for_model(&entry);
        measure = Some(meter.measure(&largest.session));
    });
    let mut meter = TokenMeter::for_model(&entry);
    meter.measure(&largest.session);
    let warm = median_time(Duration::from_millis(500), || {
        meter.measure(&largest.session)
    });
    let measure = measure.context("no measure")?;
    section.row(vec![
        largest.name.clone(),
        largest.session.len().to_string(),
        largest.session.surface().len().to_string(),
        measure.estimate.to_string(),
        measure.anchored.map_or("none".into(), |a| a.to_string()),
        fmt_duration(cold),
        fmt_duration(warm),
    ]);
    Ok(section)
}
