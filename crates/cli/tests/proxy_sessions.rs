//! A session the proxy logged is an ordinary abridge log: `stats`,
//! `check`, `context` and `report` read it. The proxy runs in-process in
//! front of a tiny loopback upstream; the commands run as a user runs
//! them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::io::Write;
use std::net::TcpListener;
use std::net::TcpStream;

use abridge_proxy::Proxy;
use abridge_proxy::ProxyConfig;
use abridge_proxy::Upstreams;
use abridge_test_support::cli::Cli;
use abridge_test_support::cli::stderr;
use abridge_test_support::cli::stdout;
use abridge_test_support::http::read_request;

const REPLY: &str = r#"{"id":"m","type":"message","role":"assistant","model":"claude-fake","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":900,"output_tokens":2}}"#;

/// An upstream that answers every request with the same Anthropic reply.
fn upstream() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let mut stream = stream.unwrap();
            read_request(&mut stream);
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{REPLY}",
                REPLY.len()
            );
            stream.write_all(answer.as_bytes()).unwrap();
        }
    });
    format!("http://{addr}")
}

/// POSTs `body` to the proxy and returns the status line.
fn post(proxy: &str, body: &str) -> String {
    let mut stream = TcpStream::connect(proxy).unwrap();
    let request = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: {proxy}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    String::from_utf8_lossy(&answer)
        .lines()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn stats_check_context_and_report_read_a_proxy_session() {
    let store = tempfile::tempdir().unwrap();
    let upstream = upstream();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let proxy = runtime.block_on(async {
        let settings =
            abridge::Settings::from_toml("method_order = [\"digest\"]\n", "t.toml").unwrap();
        let config = ProxyConfig {
            settings,
            window: Some(4_096),
            model: Some("unknown-test-model".into()),
            ..ProxyConfig::new(
                abridge_serve::open_stores(store.path().to_str().unwrap()).unwrap(),
                Upstreams::parse(&[format!("anthropic={upstream}")]).unwrap(),
            )
        };
        let proxy = Proxy::new(config).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        tokio::spawn(proxy.run(listener, std::future::pending()));
        addr
    });
    let mut messages = Vec::new();
    for turn in 0..16 {
        let text = format!(
            "step {turn}: {}",
            "please look at this carefully. ".repeat(60)
        );
        messages.push(serde_json::json!({"role": "user", "content": text}));
        let body = serde_json::json!({"model": "claude-x", "max_tokens": 50, "messages": messages});
        assert_eq!(post(&proxy, &body.to_string()), "HTTP/1.1 200 OK");
        messages.push(
            serde_json::json!({"role": "assistant", "content": [{"type": "text", "text": "ok"}]}),
        );
    }
    let logs: Vec<_> = std::fs::read_dir(store.path().join(abridge_proxy::PROXY_TENANT))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let path = logs[0].to_str().unwrap();
    let cli = Cli::new(env!("CARGO_BIN_EXE_abridge"));

    let stats = cli.run(&["stats", path, "--json"]);
    assert!(stats.status.success(), "{}", stderr(&stats));
    let stats: serde_json::Value = serde_json::from_slice(&stats.stdout).unwrap();
    assert!(
        stats["messages_by_role"]["assistant"].as_u64().unwrap() >= 16,
        "{stats}"
    );

    let check = cli.run(&["check", path]);
    assert!(
        check.status.success(),
        "{}{}",
        stdout(&check),
        stderr(&check)
    );

    let context = cli.run(&["context", path, "--json"]);
    assert!(context.status.success(), "{}", stderr(&context));
    let surface: Vec<abridge_llm::Message> = serde_json::from_slice(&context.stdout).unwrap();
    assert!(
        surface.iter().any(abridge_compact::host::is_checkpoint),
        "the proxy compacted"
    );

    let html = store.path().join("report.html");
    let report = cli.run(&["report", path, "-o", html.to_str().unwrap()]);
    assert!(report.status.success(), "{}", stderr(&report));
    assert!(std::fs::read_to_string(&html).unwrap().contains("step 15"));
}
