//! pi (pi-mono's coding agent) measured beside abridge in the same run:
//! a pi v3 copy of a session written from abridge's events, pi's package
//! installed on demand (a pinned version, once per machine), and
//! `xtask/pi-bench/bench.mjs` run on the copy to time pi's own open,
//! `prepareCompaction` and compaction bookkeeping in one node process.
//!
//! Nothing of pi's is copied here: the copy is written from what pi's
//! published type declarations say a v3 file holds, and the timing script
//! calls pi's installed modules.

use std::collections::HashMap;
use std::io::BufWriter;
use std::io::Write;
use std::path::Path;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_llm::Message;
use abridge_llm::Role;
use abridge_session::Session;
use abridge_session::SurfaceOp;
use anyhow::Context;
use serde_json::Value;
use serde_json::json;

/// pi's package on npm, and the version measured (pinned so figures from
/// different days compare).
pub(crate) const PACKAGE: &str = "@mariozechner/pi-coding-agent";
pub(crate) const VERSION: &str = "0.73.1";

/// What the timing script reports (medians of its runs).
#[derive(Debug, Clone)]
pub(crate) struct PiFigures {
    pub(crate) version: String,
    pub(crate) node: String,
    pub(crate) runs: u64,
    /// Entries in the file and messages in the context pi builds.
    pub(crate) entries: u64,
    pub(crate) messages: u64,
    /// `SessionManager.open` + `buildSessionContext`.
    pub(crate) open: Duration,
    /// `open` + `getBranch` + `prepareCompaction`.
    pub(crate) plan: Duration,
    /// `plan` + file lists + a fixed summary + `appendCompaction` +
    /// `buildSessionContext`: everything but the model call.
    pub(crate) compact: Duration,
    /// pi's default settings, as the script read them.
    pub(crate) keep_recent_tokens: u64,
    pub(crate) reserve_tokens: u64,
    /// What `prepareCompaction` chose: messages to summarize and the
    /// estimate before.
    pub(crate) to_summarize: u64,
    pub(crate) tokens_before: u64,
}

impl PiFigures {
    fn from_json(value: &Value) -> anyhow::Result<Self> {
        let number = |pointer: &str| {
            value
                .pointer(pointer)
                .and_then(Value::as_f64)
                .with_context(|| format!("pi bench gave no {pointer}: {value}"))
        };
        let millis = |pointer: &str| number(pointer).map(|ms| Duration::from_secs_f64(ms / 1e3));
        let text = |pointer: &str| {
            value
                .pointer(pointer)
                .and_then(Value::as_str)
                .map(str::to_string)
                .with_context(|| format!("pi bench gave no {pointer}: {value}"))
        };
        Ok(PiFigures {
            version: text("/pi_version")?,
            node: text("/node")?,
            runs: number("/runs")? as u64,
            entries: number("/entries")? as u64,
            messages: number("/messages")? as u64,
            open: millis("/open_ms/median")?,
            plan: millis("/plan_ms/median")?,
            compact: millis("/compact_ms/median")?,
            keep_recent_tokens: number("/settings/keepRecentTokens")? as u64,
            reserve_tokens: number("/settings/reserveTokens")? as u64,
            to_summarize: number("/plan/messages_to_summarize")? as u64,
            tokens_before: number("/plan/tokens_before")? as u64,
        })
    }
}

/// Where the package is installed: `~/.cache/abridge-bench/pi`.
fn prefix() -> anyhow::Result<PathBuf> {
    let home = std::env::var_os("HOME").context("HOME is not set")?;
    Ok(PathBuf::from(home).join(".cache/abridge-bench/pi"))
}

/// The installed package's folder when it holds the pinned version.
fn installed(prefix: &Path) -> Option<PathBuf> {
    let dir = prefix.join("node_modules").join(PACKAGE);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("package.json")).ok()?).ok()?;
    (manifest["version"] == VERSION).then_some(dir)
}

/// The package's folder, installing the pinned version with npm first
/// when it is not there.
///
/// # Errors
/// When npm is missing or the install fails.
pub(crate) fn ensure_installed() -> anyhow::Result<PathBuf> {
    let prefix = prefix()?;
    if let Some(dir) = installed(&prefix) {
        return Ok(dir);
    }
    println!("pi {VERSION} is not installed; installing it with npm");
    std::fs::create_dir_all(&prefix)?;
    let out = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--prefix"])
        .arg(&prefix)
        .arg(format!("{PACKAGE}@{VERSION}"))
        .output()
        .context("cannot run npm")?;
    anyhow::ensure!(
        out.status.success(),
        "npm install {PACKAGE}@{VERSION} failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    installed(&prefix).with_context(|| format!("npm installed no {PACKAGE} {VERSION}"))
}

/// Runs the timing script on the pi file at `session` (`runs` runs of
/// each step) and returns its figures.
///
/// # Errors
/// When node is missing, the script fails, or its output is not the
/// figures.
pub(crate) fn measure(package: &Path, session: &Path, runs: u32) -> anyhow::Result<PiFigures> {
    let script = std::env::current_dir()?.join("xtask/pi-bench/bench.mjs");
    let out = Command::new("node")
        .arg("--expose-gc")
        .arg(&script)
        .arg("--pi")
        .arg(package)
        .args(["--runs", &runs.to_string()])
        .arg(session)
        .output()
        .context("cannot run node")?;
    anyhow::ensure!(
        out.status.success(),
        "{} failed: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    let value: Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("{} printed no JSON", script.display()))?;
    PiFigures::from_json(&value)
}

/// Writes `session` as a pi v3 file at `path`: a `session` header, then
/// one `message` entry per message event with an 8-hex-digit id and the
/// id of its nearest message ancestor as `parentId`, so pi's tree and
/// abridge's agree (navigation, which pi keeps as a leaf pointer rather
/// than an entry, shows as a parent further back). Returns the number of
/// entries written.
///
/// # Errors
/// A message pi has no form for (a system or developer message, a
/// replacing or rewriting event), named by seq, or a write failure.
pub(crate) fn write_copy(session: &Session, path: &Path) -> anyhow::Result<usize> {
    let mut out = BufWriter::new(std::fs::File::create(path)?);
    let header = session.header();
    write_line(
        &mut out,
        &json!({
            "type": "session",
            "version": 3,
            "id": header.session_id,
            "timestamp": header.created,
            "cwd": header.cwd.clone().unwrap_or_default(),
        }),
    )?;
    // The pi id each event stands for: its own for a message, its nearest
    // message ancestor's for anything else.
    let mut ids: Vec<Option<String>> = Vec::with_capacity(session.len());
    let mut tool_names: HashMap<String, String> = HashMap::new();
    let mut written = 0;
    for event in session.events() {
        let parent = event.parent.and_then(|p| ids[p as usize].clone());
        let Some(message_event) = event.message_event() else {
            ids.push(parent);
            continue;
        };
        anyhow::ensure!(
            matches!(message_event.op, SurfaceOp::Append),
            "seq {}: a replacing or rewriting message has no pi v3 form",
            event.seq
        );
        let id = format!("{:08x}", event.seq);
        let body = pi_message(&message_event.message, event.seq, &mut tool_names)?;
        write_line(
            &mut out,
            &json!({
                "type": "message",
                "id": id,
                "parentId": parent,
                "timestamp": event.time,
                "message": body,
            }),
        )?;
        ids.push(Some(id));
        written += 1;
    }
    out.flush()?;
    Ok(written)
}

fn write_line(out: &mut impl Write, value: &Value) -> anyhow::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")?;
    Ok(())
}

/// A made-up but increasing message time in milliseconds (pi stores one
/// per message; abridge's event time is text).
fn millis(seq: u64) -> u64 {
    1_767_600_000_000 + seq * 1_000
}

/// One abridge message as pi's message object.
fn pi_message(
    message: &Message,
    seq: u64,
    tool_names: &mut HashMap<String, String>,
) -> anyhow::Result<Value> {
    match message.role {
        Role::User => Ok(json!({
            "role": "user",
            "content": pi_blocks(&message.content, seq)?,
            "timestamp": millis(seq),
        })),
        Role::Assistant => {
            for block in &message.content {
                if let Block::ToolCall { id, name, .. } = block {
                    tool_names.insert(id.clone(), name.clone());
                }
            }
            let calls = message
                .content
                .iter()
                .any(|b| matches!(b, Block::ToolCall { .. }));
            let mut body = json!({
                "role": "assistant",
                "content": pi_blocks(&message.content, seq)?,
                "api": "openai-responses",
                "provider": "openai",
                "model": "gpt-4o",
                "stopReason": if calls { "toolUse" } else { "stop" },
                "timestamp": millis(seq),
            });
            // pi reads a reported usage as the context size; the copy
            // carries one only where abridge's message does.
            if let Some(usage) = &message.meta.usage {
                body["usage"] = json!({
                    "input": usage.input,
                    "output": usage.output,
                    "cacheRead": usage.cache_read,
                    "cacheWrite": usage.cache_write,
                    "totalTokens": usage.input + usage.output + usage.cache_read + usage.cache_write,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                });
            }
            Ok(body)
        }
        Role::Tool => {
            let (call_id, content, is_error) = message
                .tool_result_block()
                .with_context(|| format!("seq {seq}: a tool message without a tool result"))?;
            Ok(json!({
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": tool_names.get(call_id).map_or("unknown", String::as_str),
                "content": pi_blocks(content, seq)?,
                "isError": is_error,
                "timestamp": millis(seq),
            }))
        }
        other => anyhow::bail!("seq {seq}: a {other:?} message has no pi v3 form"),
    }
}

/// Content blocks as pi's: text, thinking (redacted thinking as pi's
/// redacted form), tool calls and inline images; provider-native items
/// have no pi form and are left out.
fn pi_blocks(blocks: &[Block], seq: u64) -> anyhow::Result<Vec<Value>> {
    let mut out = Vec::with_capacity(blocks.len());
    for block in blocks {
        out.push(match block {
            Block::Text { text } => json!({"type": "text", "text": text}),
            Block::Thinking {
                thinking,
                signature,
            } => match signature {
                Some(signature) => {
                    json!({"type": "thinking", "thinking": thinking, "thinkingSignature": signature})
                }
                None => json!({"type": "thinking", "thinking": thinking}),
            },
            Block::RedactedThinking { data } => {
                json!({"type": "thinking", "thinking": "", "thinkingSignature": data, "redacted": true})
            }
            Block::ToolCall {
                id,
                name,
                arguments,
            } => json!({"type": "toolCall", "id": id, "name": name, "arguments": arguments}),
            Block::Image {
                source: ImageSource::Base64 { media_type, data },
                ..
            } => json!({"type": "image", "data": data, "mimeType": media_type}),
            Block::Image { .. } => {
                anyhow::bail!("seq {seq}: an image that is not inline has no pi v3 form")
            }
            Block::Native { .. } => continue,
            Block::ToolResult { .. } => {
                anyhow::bail!("seq {seq}: a tool result nested in content has no pi v3 form")
            }
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use abridge_llm::Meta;
    use abridge_session::Draft;

    use super::*;

    fn lines(path: &Path) -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn the_copy_keeps_the_tree_across_a_navigation() {
        let mut session = Session::in_memory("pi-copy");
        session.append_message(Message::user("first")).unwrap();
        session
            .append_message(Message {
                role: Role::Assistant,
                content: vec![
                    Block::text("reading"),
                    Block::ToolCall {
                        id: "c1".into(),
                        name: "read".into(),
                        arguments: json!({"path": "a.rs"}),
                    },
                ],
                meta: Meta::default(),
            })
            .unwrap();
        session
            .append(Draft::message(Message::tool_result(
                "c1",
                "fn a() {}",
                false,
            )))
            .unwrap();
        // Back to the user message, then a new branch from it.
        session.navigate(Some(0)).unwrap();
        session.append_message(Message::assistant("again")).unwrap();

        let dir = std::env::temp_dir().join(format!("abridge-pi-copy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("copy.jsonl");
        assert_eq!(write_copy(&session, &path).unwrap(), 4);
        let entries = lines(&path);
        let _ = std::fs::remove_dir_all(&dir);

        assert_eq!(entries[0]["type"], "session");
        assert_eq!(entries[0]["version"], 3);
        assert_eq!(entries[1]["parentId"], Value::Null);
        assert_eq!(entries[2]["parentId"], entries[1]["id"]);
        assert_eq!(entries[2]["message"]["stopReason"], "toolUse");
        assert_eq!(entries[2]["message"]["content"][1]["type"], "toolCall");
        assert_eq!(entries[3]["message"]["role"], "toolResult");
        assert_eq!(entries[3]["message"]["toolName"], "read");
        assert_eq!(entries[3]["message"]["toolCallId"], "c1");
        // The navigation event is not written; the new branch hangs off
        // the user message.
        assert_eq!(entries.len(), 5);
        assert_eq!(entries[4]["parentId"], entries[1]["id"]);
        assert_eq!(entries[4]["message"]["content"][0]["text"], "again");
    }

    #[test]
    fn figures_are_read_from_the_script_output() {
        let value = json!({
            "pi_version": "0.73.1", "node": "v20", "runs": 5, "entries": 10, "messages": 8,
            "settings": {"keepRecentTokens": 20000, "reserveTokens": 16384},
            "plan": {"messages_to_summarize": 3, "tokens_before": 900},
            "open_ms": {"median": 12.5}, "plan_ms": {"median": 20.0}, "compact_ms": {"median": 25.0},
        });
        let figures = PiFigures::from_json(&value).unwrap();
        assert_eq!(figures.open, Duration::from_micros(12_500));
        assert_eq!(figures.compact, Duration::from_millis(25));
        assert_eq!(figures.to_summarize, 3);
        assert!(PiFigures::from_json(&json!({"pi_version": "x"})).is_err());
    }
}
