//! The service: one handler for every path. Compacted routes find their
//! conversation, log what is new, let Maintenance run, and send either
//! the agent's bytes or the rebuilt history; every other path goes to
//! its upstream as it came.

use std::net::SocketAddr;
use std::sync::Arc;

use abridge::Settings;
use abridge_serve::ServiceLimits;
use abridge_serve::SessionStores;
use abridge_serve::Tenant;
use axum::Router;
use axum::extract::Request;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::Method;
use axum::response::IntoResponse;
use axum::response::Response;
use bytes::Bytes;
use serde_json::Value;

use crate::dialect::Dialect;
use crate::dialect::Upstream;
use crate::encode::Encoders;
use crate::error::ProxyError;
use crate::forward::Turn;
use crate::forward::forward;
use crate::identity::Digests;
use crate::outline::Outline;
use crate::registry::Found;
use crate::registry::Registry;

/// Where requests go: base URLs the request's path is appended to (for
/// example `https://api.anthropic.com`, `http://127.0.0.1:8080`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Upstreams {
    /// Chat Completions, Responses, and other paths without Anthropic
    /// headers.
    pub openai: Option<String>,
    /// Anthropic Messages and paths carrying `anthropic-version` or
    /// `x-api-key`.
    pub anthropic: Option<String>,
}

impl Upstreams {
    /// Reads `--upstream` values: `anthropic=URL` or `openai=URL`.
    ///
    /// # Errors
    /// [`ProxyError::Upstream`] naming the value that is not one of them.
    pub fn parse<S: AsRef<str>>(values: &[S]) -> Result<Self, ProxyError> {
        let mut upstreams = Upstreams::default();
        for value in values {
            let value = value.as_ref();
            let bad = |message: &str| ProxyError::Upstream {
                value: value.to_string(),
                message: message.to_string(),
            };
            let (name, url) = value
                .split_once('=')
                .ok_or_else(|| bad("expected anthropic=URL or openai=URL"))?;
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(bad("the URL must start with http:// or https://"));
            }
            let slot = match name {
                "anthropic" => &mut upstreams.anthropic,
                "openai" => &mut upstreams.openai,
                _ => return Err(bad("the name must be anthropic or openai")),
            };
            *slot = Some(url.trim_end_matches('/').to_string());
        }
        Ok(upstreams)
    }

    fn get(&self, upstream: Upstream) -> Option<&str> {
        match upstream {
            Upstream::OpenAi => self.openai.as_deref(),
            Upstream::Anthropic => self.anthropic.as_deref(),
        }
    }
}

/// Everything the proxy is built from.
#[derive(Debug)]
pub struct ProxyConfig {
    /// Where sessions are logged (`abridge_serve::open_stores`).
    pub stores: Box<dyn SessionStores>,
    /// The settings every conversation's harness gets.
    pub settings: Settings,
    /// The methods settings may name (a host's own beside the built-in
    /// ones), and how their checkpoints expand into requests.
    pub methods: abridge::MethodRegistry,
    /// The summarizer (and `remote` endpoint) the model-backed methods
    /// use, as `abridge serve` builds it; offline by default (the
    /// model-backed methods are skipped, `digest` writes checkpoints).
    /// Its key is its own: the agent's keys pass through to the upstream
    /// and are never handed to it. Models run only in the background
    /// (see `upkeep`).
    pub sources: abridge::MethodSources,
    /// The context window to keep requests under; `None`: the model's.
    pub window: Option<u64>,
    /// The model sessions are measured for; `None`: the request's.
    pub model: Option<String>,
    /// Where requests go.
    pub upstreams: Upstreams,
    /// Timeouts, body and connection limits (serve's).
    pub limits: ServiceLimits,
}

impl ProxyConfig {
    /// A configuration with default settings and limits.
    pub fn new(stores: Box<dyn SessionStores>, upstreams: Upstreams) -> Self {
        ProxyConfig {
            stores,
            settings: Settings::default(),
            methods: abridge::MethodRegistry::builtin(),
            sources: abridge::MethodSources::offline("unknown"),
            window: None,
            model: None,
            upstreams,
            limits: ServiceLimits::default(),
        }
    }
}

/// How often the proxy's JSONL sessions are fsynced at most.
pub const SYNC_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// The stores a `--store` value names, as the proxy keeps them: JSONL
/// sessions are fsynced at most once a second ([`SYNC_EVERY`]), not per
/// message. Why: the agent holds its whole history and resends it every
/// turn, so a sync per message guards nothing the agent could lose, and
/// it put the disk's latency (half a millisecond typically, over ten on
/// a busy disk) in front of every request (`cargo xtask bench proxy`).
/// A process crash loses nothing (the OS holds the written lines); a
/// power loss, at most the last second's lines, never one before them.
///
/// # Errors
/// As [`abridge_serve::open_stores`].
pub fn open_stores(value: &str) -> Result<Box<dyn SessionStores>, abridge_serve::StoreChoiceError> {
    abridge_serve::open_stores_with(value, abridge_session::FsyncPolicy::Interval(SYNC_EVERY))
}

/// The tenant directory proxy sessions are kept under in the store.
pub const PROXY_TENANT: &str = "proxy";

#[derive(Debug)]
struct Inner {
    registry: Registry,
    digests: Digests,
    encoders: Encoders,
    client: reqwest::Client,
    upstreams: Upstreams,
    limits: ServiceLimits,
}

/// The proxy: build it, then [`run`](Proxy::run) it on a listener.
#[derive(Debug, Clone)]
pub struct Proxy {
    inner: Arc<Inner>,
}

/// Refuses an address off loopback unless `allow_remote`: the proxy
/// carries API keys and has no authentication of its own.
///
/// # Errors
/// [`ProxyError::NotLoopback`].
pub fn check_listen(addr: &SocketAddr, allow_remote: bool) -> Result<(), ProxyError> {
    if addr.ip().is_loopback() || allow_remote {
        Ok(())
    } else {
        Err(ProxyError::NotLoopback {
            addr: addr.to_string(),
        })
    }
}

impl Proxy {
    /// Builds the proxy.
    ///
    /// # Errors
    /// [`ProxyError::Client`] when the HTTP client or encoders cannot be
    /// built; [`ProxyError::Harness`] for limits out of bounds.
    pub fn new(config: ProxyConfig) -> Result<Self, ProxyError> {
        config.limits.check().map_err(ProxyError::harness)?;
        let tenant = Tenant::new(PROXY_TENANT).map_err(ProxyError::store)?;
        let client = reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(30))
            .read_timeout(std::time::Duration::from_secs(600))
            .build()
            .map_err(|e| ProxyError::Client(e.to_string()))?;
        let encoders = Encoders::new().map_err(|e| ProxyError::Client(e.to_string()))?;
        Ok(Proxy {
            inner: Arc::new(Inner {
                registry: Registry::new(
                    config.stores,
                    tenant,
                    crate::upkeep::proxy_settings(config.settings),
                    config.methods,
                    config.sources,
                    config.window,
                    config.model,
                ),
                digests: Digests::default(),
                encoders,
                client,
                upstreams: config.upstreams,
                limits: config.limits,
            }),
        })
    }

    /// The proxy as a router (every path goes to one handler).
    pub fn router(&self) -> Router {
        Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&self.inner))
    }

    /// Serves on `listener` with serve's accept loop and limits until
    /// `shutdown` completes.
    pub async fn run(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        let limits = self.inner.limits.clone();
        abridge_serve::serve_hardened(listener, self.router(), limits, shutdown).await;
    }
}

/// Which upstream a path the proxy does not read goes to.
fn upstream_of(headers: &HeaderMap, path: &str) -> Upstream {
    if path.starts_with("/v1/messages")
        || headers.contains_key("anthropic-version")
        || headers.contains_key("x-api-key")
    {
        Upstream::Anthropic
    } else {
        Upstream::OpenAi
    }
}

async fn handle(State(inner): State<Arc<Inner>>, request: Request) -> Response {
    let request = match abridge_serve::read_limited(request, &inner.limits).await {
        Ok(request) => request,
        Err(error) => return error.into_response(),
    };
    let (parts, body) = request.into_parts();
    let bytes = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(bytes) => bytes,
        Err(error) => {
            return abridge_serve::ApiError::BadRequest(format!(
                "the body could not be read: {error}"
            ))
            .into_response();
        }
    };
    let dialect = Dialect::of_path(parts.uri.path()).filter(|_| parts.method == Method::POST);
    let upstream = dialect.map_or_else(
        || upstream_of(&parts.headers, parts.uri.path()),
        Dialect::upstream,
    );
    let Some(base) = inner.upstreams.get(upstream) else {
        return abridge_serve::ApiError::BadRequest(format!(
            "no upstream for {}: start the proxy with --upstream {}=URL",
            parts.uri.path(),
            match upstream {
                Upstream::OpenAi => "openai",
                Upstream::Anthropic => "anthropic",
            }
        ))
        .into_response();
    };
    let (body, turn) = match dialect {
        Some(dialect) => inner.prepare(dialect, bytes).await,
        None => (bytes, None),
    };
    forward(&inner.client, base, &parts, body, turn).await
}

impl Inner {
    /// The body to send and the turn to record, for a compacted route.
    /// Anything that cannot be read or logged is forwarded as it came.
    async fn prepare(&self, dialect: Dialect, bytes: Bytes) -> (Bytes, Option<Turn>) {
        let Some(outline) = Outline::read(dialect, &bytes) else {
            return (bytes, None);
        };
        let head_hash = self.digests.head(dialect, &outline);
        let hashes = self.digests.prefix_hashes(head_hash, &outline.items);
        let start = |parent| {
            self.registry
                .start(dialect, &outline.model, &outline.head(), parent)
        };
        let (conversation, known) = match self.registry.find(head_hash, &hashes) {
            Found::Continues(shared) => {
                let mut held = shared.lock_owned().await;
                match held.follow(&hashes) {
                    Some(known) => (held, known),
                    None => {
                        let parent = Some(held.id.clone());
                        drop(held);
                        match start(parent) {
                            Ok(shared) => (shared.lock_owned().await, 0),
                            Err(error) => return unlogged(bytes, &error),
                        }
                    }
                }
            }
            Found::Starts(parent) => match start(parent) {
                Ok(shared) => (shared.lock_owned().await, 0),
                Err(error) => return unlogged(bytes, &error),
            },
        };
        let mut conversation = conversation;
        let logged = outline
            .parsed(known)
            .map_err(|e| e.to_string())
            .and_then(|new| conversation.absorb(&new).map_err(|e| e.to_string()));
        if let Err(error) = logged {
            tracing::warn!(session = %conversation.id, %error, "new messages could not be logged; forwarding as sent");
            return (bytes, None);
        }
        self.registry
            .remember(&mut conversation, head_hash, &hashes);
        crate::upkeep::before_request(conversation.harness(), &conversation.id).await;
        let turn = |conversation| Turn {
            conversation,
            dialect,
        };
        if !conversation.compacted() {
            return (bytes, Some(turn(conversation)));
        }
        // Only a compacted history is written into the body: then, and
        // only then, the whole body is read into a tree.
        let Ok(mut body) = serde_json::from_slice::<Value>(&bytes) else {
            return (bytes, Some(turn(conversation)));
        };
        let items = dialect.items(&body).unwrap_or_default();
        let rebuilt = match conversation.rebuilt_items(&items, &self.encoders) {
            Ok(rebuilt) => rebuilt,
            Err(error) => {
                tracing::warn!(session = %conversation.id, %error, "the compacted history could not be encoded; forwarding as sent");
                return (bytes, Some(turn(conversation)));
            }
        };
        let sent = rebuilt.len();
        body[dialect.history_key()] = Value::Array(rebuilt);
        tracing::info!(session = %conversation.id, agent_items = items.len(), sent_items = sent, tokens = conversation.harness().tokens(), "sending the compacted history");
        match serde_json::to_vec(&body) {
            Ok(out) => (Bytes::from(out), Some(turn(conversation))),
            Err(_) => (bytes, Some(turn(conversation))),
        }
    }
}

fn unlogged(bytes: Bytes, error: &ProxyError) -> (Bytes, Option<Turn>) {
    tracing::warn!(%error, "no session for this conversation; forwarding as sent");
    (bytes, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_off_loopback_is_refused_without_the_flag() {
        let remote: SocketAddr = "0.0.0.0:8788".parse().unwrap();
        let error = check_listen(&remote, false).unwrap_err();
        assert_eq!(
            error.to_string(),
            "--listen 0.0.0.0:8788: not a loopback address; the proxy forwards API keys, so pass --allow-remote to listen there"
        );
        assert!(check_listen(&remote, true).is_ok());
        assert!(check_listen(&"127.0.0.1:0".parse().unwrap(), false).is_ok());
        assert!(check_listen(&"[::1]:0".parse().unwrap(), false).is_ok());
    }

    #[test]
    fn upstreams_name_their_endpoint_and_a_bad_one_is_named() {
        let upstreams = Upstreams::parse(&[
            "anthropic=https://api.anthropic.com/",
            "openai=http://127.0.0.1:8080",
        ])
        .unwrap();
        assert_eq!(
            upstreams.anthropic.as_deref(),
            Some("https://api.anthropic.com")
        );
        assert_eq!(upstreams.openai.as_deref(), Some("http://127.0.0.1:8080"));
        let error = Upstreams::parse(&["gemini=https://x"]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "--upstream \"gemini=https://x\": the name must be anthropic or openai"
        );
        assert!(Upstreams::parse(&["openai=ftp://x"]).is_err());
        assert!(Upstreams::parse(&["openai"]).is_err());
    }
}
