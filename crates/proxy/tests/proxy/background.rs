//! With a summarizer: the LLM checkpoint is written in the background
//! after a reply and lands on a later request; the agent never waits on
//! it. The summarizer here answers only when the test opens its gate, so
//! a proxy that waited on it would never answer the agent.

use std::path::Path;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;
use std::time::Duration;

use abridge::MethodSources;
use abridge::Settings;
use abridge::SummarizerModel;
use abridge::llm::LlmClient;
use abridge::llm::LlmError;
use abridge::llm::Message;
use abridge::llm::Request;
use abridge::llm::Response;
use abridge::llm::StopReason;
use abridge::llm::Usage;
use abridge_proxy::Proxy;
use abridge_proxy::ProxyConfig;
use abridge_proxy::Upstreams;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::Session;
use axum::extract::State;
use bytes::Bytes;
use serde_json::Value;
use serde_json::json;
use tokio::sync::Notify;
use tokio::sync::Semaphore;

use crate::common::*;

const WINDOW: u64 = 20_000;
const SUMMARY: &str = "Background summary: the agent is reading src files one by one.";
const AGENT_KEY: &str = "sk-agent-own-key-0123456789";

/// A summarizer that answers only through its gate, and says in `events`
/// when it was called and when it answered.
#[derive(Debug)]
struct Gated {
    gate: Semaphore,
    called: Notify,
    answered: Notify,
    events: Arc<Mutex<Vec<String>>>,
    requests: Mutex<Vec<Request>>,
}

impl Gated {
    fn new(events: Arc<Mutex<Vec<String>>>) -> Arc<Self> {
        Arc::new(Gated {
            gate: Semaphore::new(0),
            called: Notify::new(),
            answered: Notify::new(),
            events,
            requests: Mutex::new(Vec::new()),
        })
    }

    fn calls(&self) -> usize {
        self.requests.lock().unwrap().len()
    }
}

#[abridge::async_trait]
impl LlmClient for Gated {
    fn provider(&self) -> &str {
        "gated"
    }

    async fn complete(&self, request: &Request) -> Result<Response, LlmError> {
        self.requests.lock().unwrap().push(request.clone());
        self.events.lock().unwrap().push("summarizer called".into());
        self.called.notify_one();
        self.gate.acquire().await.unwrap().forget();
        self.events
            .lock()
            .unwrap()
            .push("summarizer answered".into());
        self.answered.notify_one();
        Ok(Response {
            message: Message::assistant(SUMMARY),
            usage: Usage {
                input: 1000,
                output: 50,
                ..Usage::default()
            },
            stop_reason: StopReason::EndTurn,
            model: request.model.clone(),
            native: None,
        })
    }
}

fn settings() -> Settings {
    Settings::from_toml(
        "method_order = [\"soft\", \"digest\"]\nreserve = 4000\n",
        "test.toml",
    )
    .unwrap()
}

/// An Anthropic upstream that answers every request with a text and a
/// tool call, reporting as input tokens the body's bytes / 4. The next
/// reply's text is `long` tokens longer when a test sets it: one reply
/// then moves the session into the speculative band.
#[derive(Debug, Default)]
struct Fake {
    bodies: Mutex<Vec<Bytes>>,
    long: AtomicU64,
}

async fn answer(State(fake): State<Arc<Fake>>, body: Bytes) -> axum::Json<Value> {
    let turn = {
        let mut bodies = fake.bodies.lock().unwrap();
        bodies.push(body.clone());
        bodies.len() - 1
    };
    let input = body.len() as u64 / 4;
    let long = fake.long.swap(0, Ordering::SeqCst);
    let text = format!(
        "reading file {turn}. {}",
        "The parser keeps its state in one table. ".repeat(long as usize / 10)
    );
    axum::Json(json!({
        "id": "msg", "type": "message", "role": "assistant", "model": "claude-fake",
        "content": [
            {"type": "text", "text": text},
            {"type": "tool_use", "id": format!("toolu_{turn}"), "name": "read", "input": {"path": format!("src/{turn}.rs")}}
        ],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": input, "output_tokens": 20 + long}
    }))
}

/// A proxy over a [`Fake`] upstream whose summarizer is `client`.
async fn proxy_with(store: &Path, client: Arc<dyn LlmClient>) -> (String, Arc<Fake>) {
    proxy_retrying(store, client, abridge::llm::RetryPolicy::default()).await
}

/// As [`proxy_with`], the summarizer's calls retried under `retry`.
async fn proxy_retrying(
    store: &Path,
    client: Arc<dyn LlmClient>,
    retry: abridge::llm::RetryPolicy,
) -> (String, Arc<Fake>) {
    let fake = Arc::new(Fake::default());
    let router = axum::Router::new()
        .route("/v1/messages", axum::routing::post(answer))
        .with_state(Arc::clone(&fake));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let base = format!("http://{addr}");
    let sources = MethodSources {
        summarizer: Some(SummarizerModel {
            client,
            model: "summarizer-model".into(),
            retry,
            soft: abridge::basic::SoftConfig::default(),
            handoff_file: None,
            handoff_max_tokens: None,
        }),
        ..MethodSources::offline("unknown")
    };
    let config = ProxyConfig {
        settings: settings(),
        sources,
        window: Some(WINDOW),
        model: Some("unknown-test-model".into()),
        ..ProxyConfig::new(
            abridge_proxy::open_stores(store.to_str().unwrap()).unwrap(),
            Upstreams::parse(&[format!("anthropic={base}")]).unwrap(),
        )
    };
    let proxy = Proxy::new(config).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(proxy.run(listener, std::future::pending()));
    (url, fake)
}

/// An Anthropic agent loop: every reply calls a tool, every result is
/// about 300 tokens, each turn resends the whole history.
struct Agent {
    url: String,
    messages: Vec<Value>,
    sent: Vec<String>,
    /// The input tokens the last reply reported: the session is measured
    /// by it.
    reported: u64,
}

impl Agent {
    fn new(url: String) -> Self {
        Agent {
            url,
            messages: vec![json!({"role": "user", "content": "Read every file under src/."})],
            sent: Vec::new(),
            reported: 0,
        }
    }

    /// One turn; a proxy that holds it on the summarizer fails the test
    /// instead of hanging it.
    async fn turn(&mut self) {
        let turn = self.sent.len();
        let body = json!({"model": "claude-x", "max_tokens": 200, "system": "You read code.",
            "tools": [{"name": "read", "description": "read a file", "input_schema": {"type": "object"}}],
            "messages": self.messages})
        .to_string();
        let answer = post(
            &self.url,
            "/v1/messages",
            &[("x-api-key", AGENT_KEY)],
            body.clone(),
        );
        let (status, reply) = tokio::time::timeout(Duration::from_secs(60), answer)
            .await
            .unwrap_or_else(|_| panic!("turn {turn}: the agent was kept waiting"));
        assert_eq!(status, 200, "turn {turn}");
        self.sent.push(body);
        let reply: Value = serde_json::from_slice(&reply).unwrap();
        self.reported = reply["usage"]["input_tokens"].as_u64().unwrap();
        let call = reply["content"][1]["id"].as_str().unwrap().to_string();
        self.messages
            .push(json!({"role": "assistant", "content": reply["content"]}));
        let output = format!(
            "// src/{turn}.rs\n{}",
            "let total = add(left, right);\n".repeat(40)
        );
        self.messages.push(json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call, "content": output}
        ]}));
    }
}

/// The threshold and the line past which a request may not wait, for the
/// test's settings and window.
fn lines() -> (u64, u64) {
    let limits = settings().limits(WINDOW).unwrap();
    (limits.threshold, limits.window - limits.reserve / 2)
}

/// The single session the proxy logged, loaded.
fn logged_session(store: &Path) -> Session {
    let logs = session_logs(store);
    assert_eq!(
        logs.len(),
        1,
        "{:?}",
        logs.iter().map(|l| &l.0).collect::<Vec<_>>()
    );
    let options = JsonlOptions {
        read_only: true,
        ..JsonlOptions::default()
    };
    let store = JsonlStore::open(&logs[0].0, options).unwrap();
    Session::open(Box::new(store)).unwrap().0
}

/// The turns whose request went upstream changed (compacted).
fn compacted(upstream: &Fake, agent: &Agent) -> Vec<usize> {
    let got = upstream.bodies.lock().unwrap().clone();
    (0..got.len())
        .filter(|&i| got[i] != agent.sent[i].as_bytes())
        .collect()
}

fn sent_upstream(upstream: &Fake, turn: usize) -> Value {
    serde_json::from_slice(&upstream.bodies.lock().unwrap()[turn]).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_llm_checkpoint_is_written_after_a_reply_and_lands_later_without_the_agent_waiting() {
    let store = tempfile::tempdir().unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let summarizer = Gated::new(Arc::clone(&events));
    let (url, upstream) = proxy_with(store.path(), summarizer.clone()).await;
    let (threshold, line) = lines();
    let mut agent = Agent::new(url);
    let band = threshold - threshold * abridge_proxy::DEFAULT_SPECULATIVE_PERCENT / 100;

    // Well below the band: no summary.
    while agent.reported < band / 2 {
        assert!(agent.sent.len() < 100, "the session never grew");
        agent.turn().await;
    }
    // One long reply puts the session in the band: the summary starts
    // from that reply alone, with no request after it.
    upstream
        .long
        .store(band + 1_500 - agent.reported, Ordering::SeqCst);
    agent.turn().await;
    assert!(
        agent.reported < band,
        "the request before it was below the band"
    );
    tokio::time::timeout(Duration::from_secs(60), summarizer.called.notified())
        .await
        .expect("no summary started after the reply that entered the band");
    assert_eq!(events.lock().unwrap().as_slice(), ["summarizer called"]);
    // Past the threshold with the summarizer still held: every request is
    // answered, sent as the agent wrote it (nothing was waited for).
    while agent.reported <= threshold + 400 {
        agent.turn().await;
        events
            .lock()
            .unwrap()
            .push(format!("reply {} arrived", agent.sent.len()));
        assert!(
            compacted(&upstream, &agent).is_empty(),
            "nothing lands while the summary is written"
        );
    }
    assert!(agent.reported < line - 800, "the test overshot the line");
    assert_eq!(summarizer.calls(), 1);

    events.lock().unwrap().push("gate opened".into());
    summarizer.gate.add_permits(1);
    summarizer.answered.notified().await;
    // The next requests land the speculated checkpoint: the summary the
    // summarizer wrote in the background, with no second call.
    let before = agent.sent.len();
    let mut calls_before = 0;
    while compacted(&upstream, &agent).is_empty() {
        assert!(agent.sent.len() < before + 4, "the summary never landed");
        calls_before = summarizer.calls();
        agent.turn().await;
        assert!(
            agent.reported < line,
            "the summary did not land before the line"
        );
    }
    let first = compacted(&upstream, &agent)[0];
    let out = sent_upstream(&upstream, first);
    assert!(
        out["messages"][0].to_string().contains(SUMMARY),
        "{}",
        out["messages"][0]
    );
    // No live call for it (the gate let one answer through).
    assert_eq!(
        calls_before, 1,
        "the summary was written once, in the background"
    );

    // The order of what happened: the summarizer answered only after the
    // replies to the requests past the threshold had reached the agent.
    let events = events.lock().unwrap().clone();
    let at = |name: &str| events.iter().position(|e| e == name).unwrap();
    let replies: Vec<usize> = (0..events.len())
        .filter(|&i| events[i].starts_with("reply "))
        .collect();
    assert!(!replies.is_empty());
    assert!(at("summarizer called") < replies[0]);
    assert!(replies.iter().all(|&r| r < at("gate opened")));
    assert!(at("gate opened") < at("summarizer answered"));

    // An ordinary log: its invariants hold, the checkpoint is soft's.
    let session = logged_session(store.path());
    let report = abridge::compact::check::check_invariants(&session);
    assert!(report.is_ok(), "{report:?}");
    let surface = session.surface_messages();
    assert!(abridge::compact::host::is_checkpoint(&surface[0]));
    assert!(surface[0].plain_text().contains(SUMMARY));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_line_with_the_summary_still_held_the_model_free_checkpoint_lands_now() {
    let store = tempfile::tempdir().unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let summarizer = Gated::new(events);
    let (url, upstream) = proxy_with(store.path(), summarizer.clone()).await;
    let (threshold, line) = lines();
    let mut agent = Agent::new(url);
    // The gate never opens: the agent goes on past the threshold, and
    // once a request would leave the reply less than half the reserve,
    // digest lands at once.
    let mut reported_before = 0;
    while compacted(&upstream, &agent).is_empty() {
        assert!(
            agent.reported < line + 2_000,
            "nothing landed past the line"
        );
        reported_before = agent.reported;
        agent.turn().await;
    }
    assert!(
        reported_before > threshold,
        "it landed at {reported_before}, before the summary had its turns past the threshold ({threshold})"
    );
    assert_eq!(
        summarizer.calls(),
        1,
        "one summary, started in the background"
    );
    let session = logged_session(store.path());
    let surface = session.surface_messages();
    assert!(abridge::compact::host::is_checkpoint(&surface[0]));
    assert!(!surface[0].plain_text().contains(SUMMARY));
    assert!(abridge::compact::check::check_invariants(&session).is_ok());
}

/// A summarizer endpoint that answers 500 to every call; counts them.
#[derive(Debug, Default)]
struct Broken {
    calls: AtomicU64,
}

#[abridge::async_trait]
impl LlmClient for Broken {
    fn provider(&self) -> &str {
        "broken"
    }

    async fn complete(&self, _request: &Request) -> Result<Response, LlmError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        Err(LlmError::Server {
            provider: "broken".into(),
            status: 500,
            retry_after: None,
            message: "internal server error".into(),
        })
    }
}

/// Issue 33: a summarizer that fails every time is not started after
/// every reply. Its failures open its breaker, so over sixty turns in the
/// band it gets a bounded number of calls, while digest still lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summarizer_that_answers_500_gets_a_bounded_number_of_calls_and_digest_still_lands() {
    let store = tempfile::tempdir().unwrap();
    let summarizer = Arc::new(Broken::default());
    // One call per summary: the count is of summaries started.
    let (url, upstream) = proxy_retrying(
        store.path(),
        summarizer.clone(),
        abridge::llm::RetryPolicy::no_retries(),
    )
    .await;
    let (threshold, _) = lines();
    let band = threshold - threshold * abridge_proxy::DEFAULT_SPECULATIVE_PERCENT / 100;
    let mut agent = Agent::new(url);
    let mut in_band = 0;
    while in_band < 60 {
        assert!(
            agent.sent.len() < 600,
            "the session never stayed in the band"
        );
        agent.turn().await;
        if agent.reported >= band {
            in_band += 1;
        }
        // Every request fits the window with room for its reply.
        assert!(
            agent.reported + 200 <= WINDOW,
            "turn {}: {} tokens sent",
            agent.sent.len(),
            agent.reported
        );
    }
    let calls = summarizer.calls.load(Ordering::SeqCst);
    let landings = compacted(&upstream, &agent).len();
    // The breaker opens at its third failure in a row; its cool-down
    // lets one trial through after three more passes, then six, so a
    // couple of trials at most over these turns (one summary per pass,
    // about ten here, without the breaker).
    assert!(
        calls <= u64::from(abridge::DEFAULT_BREAKER_FAILURES) + 2,
        "{calls} calls to a summarizer that always fails, over {} turns",
        agent.sent.len()
    );
    assert!(landings > 0, "digest never landed");
    let session = logged_session(store.path());
    let surface = session.surface_messages();
    assert!(abridge::compact::host::is_checkpoint(&surface[0]));
    let report = abridge::compact::check::check_invariants(&session);
    assert!(report.is_ok(), "{report:?}");
    eprintln!(
        "{} turns, {in_band} in the band or past it, {calls} summarizer calls, {landings} compacted requests",
        agent.sent.len()
    );
}
