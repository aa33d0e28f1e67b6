//! `abridge proxy --llm`: the summarizer is built from serve's flags, its
//! checkpoints reach the agent's requests, it is called with its own key
//! only (never the agent's, which passes through to the upstream), and
//! the log passes `abridge check`. The binary runs as a user runs it,
//! between a loopback agent, upstream and summarizer.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::BufRead;
use std::io::BufReader;
use std::io::Read;
use std::io::Write;
use std::net::TcpListener;
use std::net::TcpStream;
use std::process::Command;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::Mutex;

use abridge_test_support::cli::Cli;
use abridge_test_support::cli::stderr;
use abridge_test_support::cli::stdout;
use abridge_test_support::http::read_request;
use serde_json::Value;
use serde_json::json;

const AGENT_KEY: &str = "sk-ant-agent-own-key-0123456789abcdef";
const SUMMARIZER_KEY: &str = "summarizer-own-key-9876543210";
const SUMMARY: &str = "Checkpoint from the summarizer: the agent reads src files.";

fn body_of(request: &[u8]) -> &[u8] {
    let end = request.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    &request[end + 4..]
}

/// A loopback server answering each request with `answer(request)`,
/// keeping every request it got, head and body.
fn server(answer: fn(&[u8]) -> String) -> (String, Arc<Mutex<Vec<Vec<u8>>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keep = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            let request = read_request(&mut stream);
            let body = answer(&request);
            keep.lock().unwrap().push(request);
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes());
        }
    });
    (format!("http://{addr}"), seen)
}

/// The Anthropic upstream: a text and a tool call, usage by the body's
/// size.
fn upstream_answer(request: &[u8]) -> String {
    let input = body_of(request).len() / 4;
    json!({"id": "m", "type": "message", "role": "assistant", "model": "claude-fake",
        "content": [{"type": "text", "text": "reading"},
            {"type": "tool_use", "id": format!("toolu_{input}"), "name": "read", "input": {}}],
        "stop_reason": "tool_use", "usage": {"input_tokens": input, "output_tokens": 10}})
    .to_string()
}

/// The summarizer, an OpenAI Chat endpoint.
fn summarizer_answer(_request: &[u8]) -> String {
    json!({"id": "c", "object": "chat.completion", "model": "summarizer-model",
        "choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": SUMMARY}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20}})
    .to_string()
}

/// POSTs an Anthropic request with the agent's key; the answer's body.
fn post(proxy: &str, body: &str) -> Value {
    let mut stream = TcpStream::connect(proxy).unwrap();
    let request = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: {proxy}\r\ncontent-type: application/json\r\nx-api-key: {AGENT_KEY}\r\nauthorization: Bearer {AGENT_KEY}\r\nanthropic-version: 2023-06-01\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        unchunk(body)
    } else {
        body.to_string()
    };
    serde_json::from_str(&body).unwrap()
}

/// A chunked body's data.
fn unchunk(mut rest: &str) -> String {
    let mut out = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n").unwrap();
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            return out;
        }
        out.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
}

/// Kills the proxy when the test ends, however it ends.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn proxy_llm_checkpoints_use_the_summarizers_own_key_and_pass_check() {
    let dir = tempfile::tempdir().unwrap();
    let (upstream, upstream_seen) = server(upstream_answer);
    let (summarizer, summarizer_seen) = server(summarizer_answer);
    let settings = dir.path().join("abridge.toml");
    std::fs::write(
        &settings,
        "method_order = [\"soft\", \"digest\"]\nreserve = 2000\n",
    )
    .unwrap();
    let store = dir.path().join("store");
    let mut child = Command::new(env!("CARGO_BIN_EXE_abridge"))
        .args(["proxy", "--listen", "127.0.0.1:0", "--store"])
        .arg(&store)
        .arg("--settings")
        .arg(&settings)
        .args(["--upstream", &format!("anthropic={upstream}")])
        .args(["--window", "8000", "--model", "unknown-test-model"])
        .args([
            "--llm",
            &format!("{summarizer}/v1"),
            "--llm-model",
            "summarizer-model",
        ])
        .args(["--llm-key-env", "ABRIDGE_TEST_SUMMARIZER_KEY"])
        .env("ABRIDGE_TEST_SUMMARIZER_KEY", SUMMARIZER_KEY)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let _running = Running(child);
    let addr = loop {
        let line = lines
            .next()
            .expect("the proxy exited before listening")
            .unwrap();
        if let Some(url) = line.split("listening on http://").nth(1) {
            break url.trim().to_string();
        }
    };
    // Keep reading its log so it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));

    let mut messages = vec![json!({"role": "user", "content": "Read every file under src/."})];
    let mut landed = false;
    for turn in 0..120 {
        let body =
            json!({"model": "claude-x", "max_tokens": 100, "messages": messages}).to_string();
        let reply = post(&addr, &body);
        let call = reply["content"][1]["id"].clone();
        messages.push(json!({"role": "assistant", "content": reply["content"]}));
        messages.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call,
            "content": format!("// src/{turn}.rs\n{}", "let total = add(left, right);\n".repeat(40))}]}));
        let last = upstream_seen.lock().unwrap().last().cloned().unwrap();
        if String::from_utf8_lossy(body_of(&last)).contains(SUMMARY) {
            landed = true;
            break;
        }
    }
    assert!(
        landed,
        "the summarizer's checkpoint never reached the upstream"
    );

    let upstream_seen = upstream_seen.lock().unwrap().clone();
    assert!(
        upstream_seen
            .iter()
            .all(|r| String::from_utf8_lossy(r).contains(AGENT_KEY)),
        "the agent's key goes to the upstream"
    );
    let summarizer_seen = summarizer_seen.lock().unwrap().clone();
    assert!(!summarizer_seen.is_empty());
    for request in &summarizer_seen {
        let text = String::from_utf8_lossy(request);
        assert!(
            !text.contains(AGENT_KEY),
            "the agent's key reached the summarizer:\n{text}"
        );
        assert!(
            text.to_ascii_lowercase()
                .contains(&format!("authorization: bearer {SUMMARIZER_KEY}").to_ascii_lowercase()),
            "the summarizer is called with its own key:\n{text}"
        );
    }

    let logs: Vec<_> = std::fs::read_dir(store.join(abridge_proxy::PROXY_TENANT))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let path = logs[0].to_str().unwrap();
    let log = std::fs::read_to_string(path).unwrap();
    assert!(!log.contains(AGENT_KEY) && !log.contains(SUMMARIZER_KEY));
    let cli = Cli::new(env!("CARGO_BIN_EXE_abridge"));
    let check = cli.run(&["check", path]);
    assert!(
        check.status.success(),
        "{}{}",
        stdout(&check),
        stderr(&check)
    );
}
