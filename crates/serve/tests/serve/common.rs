//! A service on 127.0.0.1 for the tests, and a small client for it.

use std::sync::Arc;
use std::time::Duration;

use abridge::MethodSources;
use abridge::SummarizerModel;
use abridge_llm::LlmClient;
use abridge_llm::RetryPolicy;
use abridge_serve::JsonlDir;
use abridge_serve::Service;
use abridge_serve::ServiceConfig;
use abridge_serve::ShutdownReport;
use abridge_serve::Tokens;
use serde_json::Value;
use serde_json::json;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Tenant `team-a`'s token.
pub(crate) const TOKEN_A: &str = "token-of-team-a-0123456789";
/// Tenant `team-b`'s token.
pub(crate) const TOKEN_B: &str = "token-of-team-b-9876543210";

/// The tokens file the tests use, in its line form.
pub(crate) fn tokens_text() -> String {
    format!("# test tokens\n{TOKEN_A} team-a\n{TOKEN_B} team-b\n")
}

/// A summarizer model over `client`, for `soft` and `/v1/summarize`.
pub(crate) fn summarizer(client: Arc<dyn LlmClient>) -> SummarizerModel {
    SummarizerModel {
        client,
        model: "scripted-summarizer".to_string(),
        retry: RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        },
        soft: abridge_compact_basic::SoftConfig::default(),
        handoff_file: None,
        handoff_max_tokens: None,
    }
}

/// How a test service is set up.
pub(crate) struct Setup {
    /// The JSONL directory, unless `pg` is set.
    pub(crate) dir: std::path::PathBuf,
    /// Sessions in PostgreSQL instead of `dir`.
    pub(crate) pg: Option<abridge_store_postgres::PgSessions>,
    pub(crate) summarizer: Option<Arc<dyn LlmClient>>,
    /// What clients may take (default: the defaults).
    pub(crate) limits: abridge_serve::ServiceLimits,
    pub(crate) grace: Duration,
    /// The service's settings (default: the defaults).
    pub(crate) settings: abridge::Settings,
    /// Wraps the stores the service gets (to stall or fail them).
    pub(crate) wrap: Option<WrapStores>,
}

/// Wraps a service's session stores.
pub(crate) type WrapStores = Arc<
    dyn Fn(Box<dyn abridge_serve::SessionStores>) -> Box<dyn abridge_serve::SessionStores>
        + Send
        + Sync,
>;

impl Setup {
    pub(crate) fn new(dir: &std::path::Path) -> Self {
        Setup {
            dir: dir.to_path_buf(),
            pg: None,
            summarizer: None,
            limits: abridge_serve::ServiceLimits::default(),
            grace: Duration::from_secs(30),
            settings: abridge::Settings::default(),
            wrap: None,
        }
    }

    pub(crate) fn config(&self) -> ServiceConfig {
        let tokens = Tokens::parse(&tokens_text(), "test").expect("tokens");
        let stores: Box<dyn abridge_serve::SessionStores> = match &self.pg {
            Some(pg) => Box::new(abridge_serve::PgDir::new(pg.clone())),
            None => Box::new(JsonlDir::new(&self.dir).expect("store dir")),
        };
        let stores = match &self.wrap {
            Some(wrap) => wrap(stores),
            None => stores,
        };
        let mut sources = MethodSources::offline("gpt-4o");
        sources.summarizer = self.summarizer.clone().map(summarizer);
        ServiceConfig {
            sources,
            model: "gpt-4o".to_string(),
            limits: self.limits.clone(),
            grace: self.grace,
            settings: self.settings.clone(),
            ..ServiceConfig::new(stores, tokens)
        }
    }

    /// Starts the service on a free port.
    pub(crate) async fn start(&self) -> Running {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let (stop, stopped) = oneshot::channel::<()>();
        let service = Service::new(self.config()).expect("a valid configuration");
        let task = tokio::spawn(async move {
            service
                .run(listener, async move {
                    let _ = stopped.await;
                })
                .await
                .expect("serve")
        });
        Running {
            base,
            stop: Some(stop),
            task,
        }
    }
}

/// A running service.
pub(crate) struct Running {
    pub(crate) base: String,
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<ShutdownReport>,
}

impl Running {
    /// A client acting with `token`.
    pub(crate) fn client(&self, token: &str) -> Api {
        Api::new(&self.base, Some(token))
    }

    /// Begins shutdown and waits for the service to stop.
    pub(crate) async fn shutdown(mut self) -> ShutdownReport {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.task.await.expect("service task")
    }
}

/// A tiny JSON client.
#[derive(Clone)]
pub(crate) struct Api {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

impl Api {
    pub(crate) fn new(base: &str, token: Option<&str>) -> Self {
        Api {
            base: base.to_string(),
            token: token.map(str::to_string),
            http: reqwest::Client::new(),
        }
    }

    fn with_auth(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// `GET path`: status and body text.
    pub(crate) async fn get_text(&self, path: &str) -> (u16, String) {
        let response = self
            .with_auth(self.http.get(format!("{}{path}", self.base)))
            .send()
            .await
            .expect("send");
        let status = response.status().as_u16();
        (status, response.text().await.expect("body"))
    }

    /// `GET path`: status and JSON.
    pub(crate) async fn get(&self, path: &str) -> (u16, Value) {
        let (status, text) = self.get_text(path).await;
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// `POST path` with a JSON body: status and JSON.
    pub(crate) async fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.post_raw(path, body.to_string()).await
    }

    /// `POST path`, `None` when the connection fails (a killed server).
    pub(crate) async fn try_post(&self, path: &str, body: &Value) -> Option<(u16, Value)> {
        let response = self
            .with_auth(self.http.post(format!("{}{path}", self.base)))
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .ok()?;
        let status = response.status().as_u16();
        let text = response.text().await.ok()?;
        Some((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    /// `POST path` with raw JSON text.
    pub(crate) async fn post_raw(&self, path: &str, body: String) -> (u16, Value) {
        let response = self
            .with_auth(self.http.post(format!("{}{path}", self.base)))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("send");
        let status = response.status().as_u16();
        let text = response.text().await.expect("body");
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Opens the compaction event stream.
    pub(crate) async fn events(&self, id: &str) -> reqwest::Response {
        self.with_auth(
            self.http
                .get(format!("{}/v1/sessions/{id}/compaction/events", self.base)),
        )
        .send()
        .await
        .expect("events")
    }

    /// Creates a session and returns its id.
    pub(crate) async fn create(&self, spec: &Value) -> String {
        let (status, body) = self.post("/v1/sessions", spec).await;
        assert_eq!(status, 201, "{body}");
        body["id"].as_str().expect("id").to_string()
    }
}

/// A session spec: `gpt-4o` with a small window, the given method order.
pub(crate) fn small(id: &str, methods: &[&str]) -> Value {
    json!({"id": id, "window": 24_000, "settings": {"method_order": methods}})
}

/// One turn: a long user message and a short reply, in abridge's form.
pub(crate) fn turn(i: usize) -> Value {
    json!([
        {"role": "user", "content": [{"type": "text", "text": format!("marker-{i}: {}", "details about the task ".repeat(60))}]},
        {"role": "assistant", "content": [{"type": "text", "text": format!("did step {i}")}]},
    ])
}

/// Appends `turns` turns to session `id`, failing on any refusal.
pub(crate) async fn fill(api: &Api, id: &str, turns: std::ops::Range<usize>) -> Value {
    let mut last = Value::Null;
    for i in turns {
        let (status, body) = api
            .post(
                &format!("/v1/sessions/{id}/messages"),
                &json!({"messages": turn(i)}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        last = body;
    }
    last
}

/// A summarizer that answers only when the test opens its gate (or
/// never), so a compaction can be caught in flight.
#[derive(Debug)]
pub(crate) struct Gate {
    open: tokio::sync::Semaphore,
    /// Calls that reached the gate.
    pub(crate) arrived: std::sync::atomic::AtomicUsize,
}

impl Default for Gate {
    fn default() -> Self {
        Gate {
            open: tokio::sync::Semaphore::new(0),
            arrived: std::sync::atomic::AtomicUsize::new(0),
        }
    }
}

impl Gate {
    /// Permits enough for every call a test makes.
    pub(crate) const MANY: usize = tokio::sync::Semaphore::MAX_PERMITS / 2;

    /// A gate that lets every call through.
    pub(crate) fn opened() -> Self {
        let gate = Gate::default();
        gate.release(Self::MANY);
        gate
    }

    /// Lets `n` waiting or future calls through.
    pub(crate) fn release(&self, n: usize) {
        self.open.add_permits(n);
    }
}

#[async_trait::async_trait]
impl LlmClient for Gate {
    fn provider(&self) -> &str {
        "gate"
    }

    async fn complete(
        &self,
        request: &abridge_llm::Request,
    ) -> Result<abridge_llm::Response, abridge_llm::LlmError> {
        self.arrived
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let permit = self.open.acquire().await.expect("gate");
        permit.forget();
        let mut response = abridge_test_support::scripted::text_reply("Summary: the steps so far.");
        response.model = request.model.clone();
        Ok(response)
    }
}

/// Waits until the session file of `team-a`'s `id` under `dir` holds
/// `needle` (an event type written by the server).
pub(crate) async fn wait_in_log(dir: &std::path::Path, id: &str, needle: &str) {
    let path = dir.join("team-a").join(format!("{id}.jsonl"));
    for _ in 0..2000 {
        if std::fs::read_to_string(&path).is_ok_and(|text| text.contains(needle)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{needle} never reached {}", path.display());
}

/// The session file of `team-a`'s `id`, opened read-only.
pub(crate) fn open_log(dir: &std::path::Path, id: &str) -> abridge_session::Session {
    let path = dir.join("team-a").join(format!("{id}.jsonl"));
    let store = abridge_session::JsonlStore::open(
        &path,
        abridge_session::JsonlOptions {
            read_only: true,
            ..abridge_session::JsonlOptions::default()
        },
    )
    .expect("store");
    abridge_session::Session::open(Box::new(store))
        .expect("session")
        .0
}

/// `(status, kind)` of every `compaction/end` in `session`.
pub(crate) fn ends(session: &abridge_session::Session) -> Vec<(String, Option<String>)> {
    session
        .events()
        .iter()
        .filter_map(|event| {
            let log = event.log()?;
            (log.kind == abridge_compact::host::TYPE_COMPACTION_END).then(|| {
                (
                    log.data["status"].as_str().unwrap_or("").to_string(),
                    log.data["kind"].as_str().map(str::to_string),
                )
            })
        })
        .collect()
}
