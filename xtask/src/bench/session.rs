//! Benchmarks for the session log: open-and-fold throughput and peak
//! memory on a ~100 MB log, append rates, the cost of one append's surface
//! update as the log grows, and building the active path and the model's
//! messages for a 38k-entry session.
//!
//! Each figure is compared with what a user would otherwise write: reading
//! the file line by line into `serde_json::Value`, and a path walk that
//! prepends (pi-mono's shape, quadratic).

use std::io::BufRead;
use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;
use std::time::Instant;

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Role;
use abridge_session::Draft;
use abridge_session::FsyncPolicy;
use abridge_session::Header;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::MemoryStore;
use abridge_session::Seq;
use abridge_session::Session;
use anyhow::Context;

use super::Section;
use super::fmt_duration;
use super::mb_per_s;
use super::median_time;

/// Size of the generated log.
const LOG_BYTES: u64 = 100_000_000;

/// Runs this area's benchmarks; each returned section becomes a table.
pub(crate) fn run() -> anyhow::Result<Vec<Section>> {
    let dir = TempDir::new()?;
    let path = dir.0.join("bench.jsonl");
    let generated = generate(&path, LOG_BYTES)?;
    Ok(vec![
        open_and_fold(&path, &generated)?,
        append(&dir.0)?,
        surface_update()?,
        active_path()?,
    ])
}

/// `bench-child load-peak PATH`: opens and folds the session at PATH and
/// prints the resident memory before and the peak after, in bytes, and
/// the event count.
pub(crate) fn load_peak(args: &[String]) -> anyhow::Result<()> {
    let path = args.first().context("load-peak needs a path")?;
    let before = super::rss_bytes().context("no /proc/self/status")?;
    let session = open(Path::new(path))?;
    let peak = super::peak_rss_bytes().context("no /proc/self/status")?;
    println!("{before} {peak} {}", session.len());
    Ok(())
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> anyhow::Result<Self> {
        let dir =
            std::env::temp_dir().join(format!("abridge-bench-session-{}", std::process::id()));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(TempDir(dir))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// xorshift: deterministic content without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn range(&mut self, low: usize, high: usize) -> usize {
        low + (self.next() % (high - low).max(1) as u64) as usize
    }
}

/// Text that looks like what agents store: code with quotes, tabs,
/// backslashes and newlines (so JSON escaping costs what it really
/// costs), and prose.
struct Corpus {
    text: String,
}

impl Corpus {
    fn new() -> Self {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        let words = [
            "fn",
            "let",
            "match",
            "self",
            "Ok(())",
            "=>",
            "impl",
            "struct",
            "pub",
            "return",
            "session",
            "event",
            "surface",
            "\"quoted\"",
            "path\\to",
            "{",
            "}",
            "// note",
            "the",
            "a",
            "error",
            "value",
            "é",
            "→",
        ];
        let mut text = String::with_capacity(1 << 20);
        while text.len() < (1 << 20) {
            for _ in 0..rng.range(3, 12) {
                text.push_str(words[rng.range(0, words.len())]);
                text.push(' ');
            }
            text.push(if rng.range(0, 8) == 0 { '\t' } else { '\n' });
        }
        Corpus { text }
    }

    /// Between `low` and `high` bytes starting somewhere, on char
    /// boundaries.
    fn slice(&self, rng: &mut Rng, low: usize, high: usize) -> &str {
        let len = rng.range(low, high);
        let max = self.text.len() - len - 8;
        let mut start = rng.range(0, max);
        while !self.text.is_char_boundary(start) {
            start += 1;
        }
        let mut end = start + len;
        while !self.text.is_char_boundary(end) {
            end += 1;
        }
        &self.text[start..end]
    }
}

fn store(path: &Path, fsync: FsyncPolicy) -> anyhow::Result<Box<JsonlStore>> {
    let options = JsonlOptions {
        fsync,
        ..JsonlOptions::default()
    };
    Ok(Box::new(JsonlStore::open(path, options)?))
}

pub(crate) fn open(path: &Path) -> anyhow::Result<Session> {
    let options = JsonlOptions {
        read_only: true,
        ..JsonlOptions::default()
    };
    let (session, _) = Session::open(Box::new(JsonlStore::open(path, options)?))?;
    Ok(session)
}

/// What the generated log holds.
pub(crate) struct Generated {
    bytes: u64,
    events: usize,
    replaces: usize,
    rewrites: usize,
    surface: usize,
    took: Duration,
}

/// One agent turn: a user message, an assistant message with thinking
/// and 1-3 tool calls, and their results of a few KB.
fn turn(rng: &mut Rng, corpus: &Corpus, turn: usize) -> Vec<Draft> {
    let mut drafts = vec![Draft::message(Message::user(
        corpus.slice(rng, 80, 400).to_string(),
    ))];
    let calls = rng.range(1, 4);
    let mut content = vec![
        Block::Thinking {
            thinking: corpus.slice(rng, 200, 800).to_string(),
            signature: Some("c2lnbmF0dXJlLW9mLXRoZS10aGlua2luZy1ibG9jaw==".into()),
        },
        Block::text(corpus.slice(rng, 40, 200)),
    ];
    let ids: Vec<String> = (0..calls).map(|i| format!("call_{turn}_{i}")).collect();
    for id in &ids {
        content.push(Block::ToolCall {
            id: id.clone(),
            name: "bash".into(),
            arguments: serde_json::json!({
                "command": corpus.slice(rng, 30, 160),
                "timeout": 120,
            }),
        });
    }
    drafts.push(Draft::message(Message {
        role: Role::Assistant,
        content,
        meta: Meta::default(),
    }));
    for id in ids {
        let text = corpus.slice(rng, 1000, 8000).to_string();
        drafts.push(Draft::message(Message::tool_result(id, text, false)));
    }
    drafts
}

/// Writes a realistic log of about `target` bytes: turns, a prune
/// (`rewrite`) now and then, and a checkpoint (`replace` between
/// compaction log events) whenever the surface passes 300 messages.
pub(crate) fn generate(path: &Path, target: u64) -> anyhow::Result<Generated> {
    let started = Instant::now();
    let corpus = Corpus::new();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut session = Session::create(store(path, FsyncPolicy::Never)?, Header::new("bench"))?;
    let (mut replaces, mut rewrites) = (0, 0);
    let mut n = 0;
    loop {
        session.append_batch(turn(&mut rng, &corpus, n))?;
        n += 1;
        if n % 8 == 0 {
            // Prune the oldest visible tool result that is not pruned yet.
            let target = session.surface().seqs().iter().copied().find(|seq| {
                session
                    .message(*seq)
                    .is_some_and(|m| m.role == Role::Tool && m.plain_text() != "[pruned]")
            });
            if let Some(target) = target {
                let id = session
                    .message(target)
                    .and_then(|m| m.tool_result_block().map(|b| b.0.to_string()))
                    .unwrap_or_default();
                session.append(Draft::rewrite(
                    Message::tool_result(id, "[pruned]", false),
                    target,
                ))?;
                rewrites += 1;
            }
        }
        let len = session.surface().len();
        if len > 300 {
            let start =
                session.append(Draft::log("compaction/start", serde_json::json!({"id": n})))?;
            let end = len - 40;
            let mut sources: Vec<Seq> = session.surface().seqs()[..=end].to_vec();
            sources.push(start);
            let summary = Message::user(corpus.slice(&mut rng, 3000, 3000 + 100).to_string());
            session.append_batch(vec![
                Draft::replace(summary, 0, end, sources),
                Draft::log("compaction/end", serde_json::json!({"id": n, "ok": true})),
            ])?;
            replaces += 1;
        }
        if n % 16 == 0 && std::fs::metadata(path)?.len() >= target {
            break;
        }
    }
    session.sync()?;
    Ok(Generated {
        bytes: std::fs::metadata(path)?.len(),
        events: session.len(),
        replaces,
        rewrites,
        surface: session.surface().len(),
        took: started.elapsed(),
    })
}

/// Median time of `runs` calls of `f`, each result dropped after its
/// clock stops: freeing a 100 MB session is not part of opening it.
fn median_kept<T>(
    runs: usize,
    mut f: impl FnMut() -> anyhow::Result<T>,
) -> anyhow::Result<Duration> {
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let kept = f()?;
        samples.push(started.elapsed());
        drop(kept);
    }
    samples.sort();
    Ok(samples[samples.len() / 2])
}

/// The alternative: every line into a `serde_json::Value`, all kept (as
/// a user loading a session would).
fn value_per_line(path: &Path) -> anyhow::Result<Vec<serde_json::Value>> {
    let reader = std::io::BufReader::with_capacity(1 << 20, std::fs::File::open(path)?);
    let mut values = Vec::new();
    for line in reader.lines() {
        values.push(serde_json::from_str(&line?)?);
    }
    Ok(values)
}

fn open_and_fold(path: &Path, generated: &Generated) -> anyhow::Result<Section> {
    let mut section = Section::new(
        "Session log: open and fold",
        &format!(
            "A generated {:.1} MB log ({} events: turns with thinking, 1-3 tool calls and results of 1-8 KB, {} prunes, {} checkpoints; {} messages on the final surface), opened read-only and folded: every line decoded, every link checked, the surface validated. Peak memory is measured in a child process (`xtask bench-child load-peak`): VmHWM after the open minus VmRSS before it.",
            generated.bytes as f64 / 1e6,
            generated.events,
            generated.rewrites,
            generated.replaces,
            generated.surface,
        ),
        &["measure", "abridge", "alternative", "ratio", "target"],
    );
    let bytes = generated.bytes as usize;
    // Warm the page cache so both sides read from memory.
    value_per_line(path)?;
    let ours = median_kept(5, || open(path))?;
    let theirs = median_kept(5, || value_per_line(path))?;
    let ours_rate = bytes as f64 / ours.as_secs_f64() / 1e6;
    section.row(vec![
        "open + fold".into(),
        format!("{} ({})", mb_per_s(bytes, ours), fmt_duration(ours)),
        format!(
            "{} ({}) `serde_json::Value` per line, kept, no fold",
            mb_per_s(bytes, theirs),
            fmt_duration(theirs)
        ),
        format!("{:.2}x", theirs.as_secs_f64() / ours.as_secs_f64()),
        ">= 150 MB/s".into(),
    ]);
    let [before, peak, _events] = super::child_figures(&["load-peak".as_ref(), path.as_os_str()])?;
    let grown = peak.saturating_sub(before);
    let ratio = grown as f64 / generated.bytes as f64;
    section.row(vec![
        "peak memory / file size".into(),
        format!("{ratio:.2}x ({:.0} MB)", grown as f64 / 1e6),
        String::new(),
        String::new(),
        "< 3x".into(),
    ]);
    section.note(format!(
        "Open + fold: {} the 150 MB/s target; peak memory: {} the 3x target. Generating the log (buffered appends, encoding included) took {}.",
        if ours_rate >= 150.0 { "meets" } else { "MISSES" },
        if ratio < 3.0 { "meets" } else { "MISSES" },
        fmt_duration(generated.took),
    ));
    Ok(section)
}

fn append(dir: &Path) -> anyhow::Result<Section> {
    let mut section = Section::new(
        "Session log: append",
        "Appending turn-sized messages (user text, assistant with one tool call, a 2 KB tool result) to a JsonlStore: one event per `append` without fsync (the OS flushes), and 100-event batches each made durable with fsync before `append_batch` returns.",
        &["mode", "events/s", "per event", "per batch"],
    );
    let corpus = Corpus::new();
    let mut rng = Rng(7);
    let messages: Vec<Message> = (0..300)
        .map(|i| match i % 3 {
            0 => Message::user(corpus.slice(&mut rng, 200, 200 + 100).to_string()),
            1 => Message {
                role: Role::Assistant,
                content: vec![
                    Block::text(corpus.slice(&mut rng, 100, 100 + 100)),
                    Block::ToolCall {
                        id: format!("c{i}"),
                        name: "read".into(),
                        arguments: serde_json::json!({"path": "src/lib.rs"}),
                    },
                ],
                meta: Meta::default(),
            },
            _ => Message::tool_result(
                format!("c{}", i - 1),
                corpus.slice(&mut rng, 2000, 2000 + 100),
                false,
            ),
        })
        .collect();

    let path = dir.join("append-buffered.jsonl");
    let mut session = Session::create(store(&path, FsyncPolicy::Never)?, Header::new("append"))?;
    let count = 30_000;
    let started = Instant::now();
    for i in 0..count {
        session.append_message(messages[i % messages.len()].clone())?;
    }
    let buffered = started.elapsed();
    drop(session);
    section.row(vec![
        "buffered, one event per append".into(),
        format!("{:.0}", count as f64 / buffered.as_secs_f64()),
        fmt_duration(buffered / count as u32),
        String::new(),
    ]);

    let path = dir.join("append-fsync.jsonl");
    let mut session = Session::create(
        store(&path, FsyncPolicy::EveryBatch)?,
        Header::new("append"),
    )?;
    let batches = 100;
    let started = Instant::now();
    for b in 0..batches {
        let drafts = (0..100)
            .map(|i| Draft::message(messages[(b * 100 + i) % messages.len()].clone()))
            .collect();
        session.append_batch(drafts)?;
    }
    let durable = started.elapsed();
    section.row(vec![
        "fsync per 100-event batch".into(),
        format!("{:.0}", (batches * 100) as f64 / durable.as_secs_f64()),
        fmt_duration(durable / (batches * 100) as u32),
        fmt_duration(durable / batches as u32),
    ]);
    Ok(section)
}

/// Median time of one `append_message` on a session that already holds
/// `len` events (in memory, so only the session's own work is timed).
fn append_cost_at(len: usize) -> anyhow::Result<Duration> {
    let mut session = Session::create(Box::new(MemoryStore::new()), Header::new("grow"))?;
    let message = Message::user("a short message");
    let mut drafts = Vec::with_capacity(10_000);
    while session.len() < len {
        drafts.clear();
        let n = (len - session.len()).min(10_000);
        drafts.extend((0..n).map(|_| Draft::message(message.clone())));
        session.append_batch(std::mem::take(&mut drafts))?;
    }
    let mut samples = Vec::with_capacity(20_000);
    for _ in 0..20_000 {
        let m = message.clone();
        let started = Instant::now();
        session.append_message(m)?;
        samples.push(started.elapsed());
    }
    samples.sort();
    Ok(samples[samples.len() / 2])
}

fn surface_update() -> anyhow::Result<Section> {
    let mut section = Section::new(
        "Session log: one append's surface update",
        "Median time of one `append_message` (validation, surface update, change journal, a MemoryStore write) on a session already holding 1k and 1M events. O(1) means the two stay within 2x.",
        &[
            "events already in the log",
            "one append",
            "ratio to 1k",
            "target",
        ],
    );
    let small = append_cost_at(1_000)?;
    let large = append_cost_at(1_000_000)?;
    let ratio = large.as_secs_f64() / small.as_secs_f64();
    section.row(vec![
        "1k".into(),
        fmt_duration(small),
        "1.00x".into(),
        String::new(),
    ]);
    section.row(vec![
        "1M".into(),
        fmt_duration(large),
        format!("{ratio:.2}x"),
        "< 2x".into(),
    ]);
    section.note(format!(
        "The 1M/1k ratio {} the 2x target.",
        if ratio < 2.0 { "meets" } else { "MISSES" }
    ));
    Ok(section)
}

/// The walk a user would write in JavaScript: follow parents, `unshift`
/// each onto the path (a prepend, so quadratic), then look each message up.
fn prepend_walk(session: &Session) -> usize {
    let mut path: Vec<Seq> = Vec::new();
    let mut cursor = session.leaf();
    while let Some(seq) = cursor {
        path.insert(0, seq);
        cursor = session.event(seq).and_then(|e| e.parent);
    }
    path.iter()
        .filter(|s| session.message(**s).is_some())
        .count()
}

/// A 38k-entry in-memory session the size of pi-mono's largest file:
/// turns with thinking, 1-3 tool calls and their results, and a
/// navigation back two entries every 100 turns, so the log has branches
/// and the active path is a little shorter than the log. No checkpoint:
/// every message on the path is on the surface. The active-path and the
/// simulate benches both measure this one session.
pub(crate) fn entries_38k() -> anyhow::Result<Session> {
    let mut session = Session::in_memory("path");
    fill_38k(&mut session)?;
    Ok(session)
}

/// Appends the 38k entries of [`entries_38k`] to `session` (empty), for
/// benches that need them in a file.
pub(crate) fn fill_38k(session: &mut Session) -> anyhow::Result<()> {
    let corpus = Corpus::new();
    let mut rng = Rng(11);
    let mut n = 0;
    while session.len() < 38_000 {
        session.append_batch(turn(&mut rng, &corpus, n))?;
        n += 1;
        if n % 100 == 0 {
            // Abandon the newest entries: navigate back two.
            let back = session.leaf().and_then(|l| l.checked_sub(2));
            session.navigate(back)?;
        }
    }
    Ok(())
}

fn active_path() -> anyhow::Result<Section> {
    let mut section = Section::new(
        "Session log: active path and model messages",
        "A 38k-entry session (turns with tool calls, a navigation to an earlier entry every 100 turns, no checkpoint so every message on the path is on the surface): `active_path()` plus `surface_messages()`, the work of building the model's history. The alternative is a parent walk that prepends, as pi-mono's does (146-169 ms measured for its 38k-entry file).",
        &[
            "operation",
            "abridge",
            "alternative (prepend walk)",
            "ratio",
            "target",
        ],
    );
    let session = entries_38k()?;
    let path_len = session.active_path().len();
    let ours = median_time(Duration::from_secs(2), || {
        let path = session.active_path();
        let messages = session.surface_messages();
        path.len() + messages.len()
    });
    let theirs = median_time(Duration::from_secs(2), || prepend_walk(&session));
    section.row(vec![
        format!(
            "{} entries, path of {path_len}, {} messages",
            session.len(),
            session.surface().len()
        ),
        fmt_duration(ours),
        fmt_duration(theirs),
        format!("{:.0}x", theirs.as_secs_f64() / ours.as_secs_f64()),
        "< 5 ms".into(),
    ]);
    section.note(format!(
        "{} the 5 ms target.",
        if ours < Duration::from_millis(5) {
            "Meets"
        } else {
            "MISSES"
        }
    ));
    Ok(section)
}
