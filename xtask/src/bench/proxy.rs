//! `cargo xtask bench proxy`: what `abridge proxy` adds to a request
//! when it does not compact.
//!
//! An Anthropic conversation of about 100k tokens (400 kB: user turns,
//! tool calls and 2 kB tool results) is sent turn after turn, each turn
//! resending the whole history plus the last reply and one new user
//! message, as agents do. The upstream is a loopback server that answers
//! every request with a small fixed reply. The same bodies go once
//! straight to the upstream (reqwest, the baseline) and once through the
//! proxy (in this process, JSONL store, window 1M tokens so it never
//! compacts): per request the proxy parses the body, hashes its prefix,
//! logs the new messages, runs the threshold check and forwards the
//! agent's bytes. Figures: p50 / p99 per request of each path and their
//! difference. Issue 33 asks for under 2 ms at p99.

use std::time::Duration;
use std::time::Instant;

use anyhow::Context;
use serde_json::Value;
use serde_json::json;
use tokio::io::AsyncReadExt;
use tokio::io::AsyncWriteExt;

use super::Section;
use super::fmt_duration;
use super::load::quantile;

/// Requests measured per path (after [`WARMUP`]).
const TURNS: usize = 200;
/// Requests first sent and not measured: the proxy's first request logs
/// the whole history.
const WARMUP: usize = 5;

const REPLY: &str = r#"{"id":"m","type":"message","role":"assistant","model":"claude-bench","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":100000,"output_tokens":1}}"#;

/// The history before the first measured turn: about 400 kB.
fn history() -> Vec<Value> {
    let filler =
        "fn handle(request: &Request) -> Result<Response, Error> { validate(request)?; }\n";
    let chunk: String = filler.repeat(2000 / filler.len() + 1);
    let mut messages = Vec::new();
    let mut bytes = 0;
    let mut turn = 0;
    while bytes < 400_000 {
        let id = format!("toolu_{turn}");
        messages.push(json!({"role": "user", "content": format!("step {turn}: {chunk}")}));
        messages.push(json!({"role": "assistant", "content": [
            {"type": "text", "text": "Reading the next file."},
            {"type": "tool_use", "id": id, "name": "read", "input": {"path": format!("src/f{turn}.rs")}}
        ]}));
        messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": id, "content": chunk}
        ]}));
        bytes += 2 * chunk.len() + 200;
        turn += 1;
    }
    messages
}

/// Every body the agent sends, in order.
fn bodies() -> Vec<String> {
    let mut messages = history();
    let mut out = Vec::new();
    for turn in 0..WARMUP + TURNS {
        messages.push(json!({"role": "user", "content": format!("now turn {turn}")}));
        out.push(
            json!({"model": "claude-sonnet-4-5", "max_tokens": 1024, "system": "You are a coding agent.", "messages": messages})
                .to_string(),
        );
        messages.push(json!({"role": "assistant", "content": [{"type": "text", "text": "ok"}]}));
    }
    out
}

/// Answers every request on a kept-alive connection with [`REPLY`].
async fn upstream() -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buffer = Vec::new();
                let mut chunk = vec![0u8; 1 << 16];
                loop {
                    let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") else {
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                        }
                        continue;
                    };
                    let head = String::from_utf8_lossy(&buffer[..end]).to_ascii_lowercase();
                    let length: usize = head
                        .lines()
                        .find_map(|l| l.strip_prefix("content-length:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                    while buffer.len() < end + 4 + length {
                        match stream.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
                        }
                    }
                    buffer.drain(..end + 4 + length);
                    let answer = format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{REPLY}",
                        REPLY.len()
                    );
                    if stream.write_all(answer.as_bytes()).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    Ok(format!("http://{addr}"))
}

/// Sends every body to `base` and returns the measured latencies, sorted.
async fn send_all(
    client: &reqwest::Client,
    base: &str,
    bodies: &[String],
) -> anyhow::Result<Vec<Duration>> {
    let mut times = Vec::new();
    for (turn, body) in bodies.iter().enumerate() {
        let started = Instant::now();
        let response = client
            .post(format!("{base}/v1/messages"))
            .header("content-type", "application/json")
            .header("x-api-key", "sk-bench")
            .body(body.clone())
            .send()
            .await?;
        anyhow::ensure!(
            response.status().is_success(),
            "turn {turn}: {}",
            response.status()
        );
        response.bytes().await?;
        if turn >= WARMUP {
            times.push(started.elapsed());
        }
    }
    times.sort();
    Ok(times)
}

pub(crate) fn run() -> anyhow::Result<Vec<Section>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let store = std::env::temp_dir().join(format!("abridge-bench-proxy-{}", std::process::id()));
    let result = runtime.block_on(measure(&store));
    let _ = std::fs::remove_dir_all(&store);
    let (direct, proxied, body_bytes) = result?;
    let mut section = Section::new(
        "Proxy overhead",
        &format!(
            "`abridge proxy` in front of a loopback upstream that answers at once, without compacting: {TURNS} turns of an Anthropic conversation of about 100k tokens ({} kB a body), each resending the whole history, as agents do; after {WARMUP} unmeasured turns. Direct: reqwest to the upstream. Proxied: the same bodies through the proxy (JSONL store fsynced at most once a second, window 1M tokens): read the body's outline, prefix hash, log the new messages, threshold check, forward the agent's bytes, log the reply. Release build.",
            body_bytes / 1000
        ),
        &["path", "p50", "p99", "max"],
    );
    for (name, times) in [("direct", &direct), ("through the proxy", &proxied)] {
        section.row(vec![
            name.to_string(),
            fmt_duration(quantile(times, 0.5)),
            fmt_duration(quantile(times, 0.99)),
            fmt_duration(quantile(times, 1.0)),
        ]);
    }
    let added = quantile(&proxied, 0.99).saturating_sub(quantile(&direct, 0.99));
    section.row(vec![
        "added by the proxy".to_string(),
        fmt_duration(quantile(&proxied, 0.5).saturating_sub(quantile(&direct, 0.5))),
        fmt_duration(added),
        String::new(),
    ]);
    section.note(format!(
        "Target (issue 33): under 2 ms added at p99. Measured: {}, {}.",
        fmt_duration(added),
        if added < Duration::from_millis(2) {
            "met"
        } else {
            "missed"
        }
    ));
    section.note(HISTORY);
    Ok(vec![section])
}

/// What the figure was before the changes made from profiling it, and
/// where the time went: kept with the table so a re-run keeps the story.
const HISTORY: &str = "Before (2026-12-07, the same command on the same loaded 2-core machine, before any change): 17.95 ms added at p50, 29.65 ms at p99 (first measurement, quieter machine: 8.55 ms / 19.12 ms). Profile (`valgrind --tool=callgrind target/release/xtask bench proxy`; `strace -f -T -e trace=fdatasync`): per request the proxy ran about 17.5 M instructions, 27 % reading the whole 414 kB body into a JSON tree, 42 % cloning each history item, taking out its cache marks and writing it out again to hash it, 9 % copying the item list, 5 % dropping the trees; and it waited on 4.3 fdatasyncs (p50 0.5 ms, p99 12 ms each on the busy disk), two of them before forwarding and one before the agent's reply stream ended. Changes: the body is read as an outline (model, head and each item's bytes, borrowed, no tree); each item's digest is remembered by a 128-bit hash of its bytes, so only new items are parsed and re-serialised; only items after the known prefix are parsed, to be logged; the whole tree is built only when a compacted history is written; the reply stream ends before the reply is logged; sessions are fsynced at most once a second, not per message (the agent resends its whole history, so a per-message sync guarded nothing it could lose; a sync once per turn, tried first, still held the next request for 6 ms at p50 here, the disk being busy). After: about 4 M instructions per request; one fsync a second can still land on a request. The direct call's own p99 (a few ms) is the machine's load: five builds shared its two cores while this ran.";

async fn measure(store: &std::path::Path) -> anyhow::Result<(Vec<Duration>, Vec<Duration>, usize)> {
    let upstream = upstream().await?;
    let bodies = bodies();
    let client = reqwest::Client::new();
    let direct = send_all(&client, &upstream, &bodies).await?;
    let stores = abridge_proxy::open_stores(store.to_str().context("temp dir is not UTF-8")?)?;
    let config = abridge_proxy::ProxyConfig {
        window: Some(1_000_000),
        ..abridge_proxy::ProxyConfig::new(
            stores,
            abridge_proxy::Upstreams::parse(&[format!("anthropic={upstream}")])?,
        )
    };
    let proxy = abridge_proxy::Proxy::new(config)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    tokio::spawn(proxy.run(listener, std::future::pending()));
    let proxied = send_all(&client, &base, &bodies).await?;
    Ok((direct, proxied, bodies[0].len()))
}
