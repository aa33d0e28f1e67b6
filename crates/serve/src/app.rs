//! The service: its configuration, shared state, router and run loop
//! with graceful shutdown.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use abridge::MethodRegistry;
use abridge::MethodSources;
use abridge::Settings;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::auth::Tokens;
use crate::error::ServeError;
use crate::heavy::HeavyReads;
use crate::limits::ServiceLimits;
use crate::middleware;
use crate::routes;
use crate::sessions::Registry;
use crate::state::AppState;
use crate::state::Shared;
use crate::stores::SessionStores;
use crate::tasks::Compactions;
use crate::tasks::DrainReport;

/// How long shutdown waits for running compactions by default before it
/// aborts them.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(30);

/// Everything the service is built from. The host (the CLI) reads files
/// and flags; this crate reads nothing itself.
#[derive(Debug)]
pub struct ServiceConfig {
    /// Where sessions live.
    pub stores: Box<dyn SessionStores>,
    /// Accepted bearer tokens.
    pub tokens: Tokens,
    /// What each session's methods are built from (its `model` is replaced
    /// by the session's). Its summarizer also answers `POST /v1/summarize`.
    pub sources: MethodSources,
    /// Settings of a session created without its own.
    pub settings: Settings,
    /// The methods a session's settings and manual passes can name, and
    /// how their checkpoints expand into a request; default the built-in
    /// ones.
    pub methods: MethodRegistry,
    /// Model of a session created without one.
    pub model: String,
    /// What one client or tenant may take: body size, timeouts,
    /// connections, event streams, open sessions, heavy reads, quotas.
    pub limits: ServiceLimits,
    /// How long running compactions may finish at shutdown.
    pub grace: Duration,
}

impl ServiceConfig {
    /// A configuration with the defaults: no summarizer, default settings,
    /// model `unknown` (the catalog's conservative entry), the default
    /// [`ServiceLimits`], 30 s grace.
    pub fn new(stores: Box<dyn SessionStores>, tokens: Tokens) -> Self {
        ServiceConfig {
            stores,
            tokens,
            sources: MethodSources::offline("unknown"),
            settings: Settings::default(),
            methods: MethodRegistry::builtin(),
            model: "unknown".to_string(),
            limits: ServiceLimits::default(),
            grace: DEFAULT_GRACE,
        }
    }
}

/// A built service: route it in a test, or run it on a listener.
#[derive(Debug, Clone)]
pub struct Service {
    shared: AppState,
    grace: Duration,
}

/// How a run ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShutdownReport {
    /// The compactions at shutdown.
    pub compactions: DrainReport,
    /// Sessions synced to their store on the way out.
    pub sessions_synced: usize,
}

impl Service {
    /// Builds the service.
    ///
    /// # Errors
    /// [`ServeError::Limit`] when a limit is out of its bounds.
    pub fn new(config: ServiceConfig) -> Result<Self, ServeError> {
        config.limits.check()?;
        // Settings are validated when they load, so this fails only for
        // settings built by hand with a bad pattern: then the built-in
        // patterns still apply rather than none.
        let redactor = config.settings.redactor().unwrap_or_else(|error| {
            tracing::warn!(%error, "redact_patterns unusable; redacting with the built-in patterns");
            abridge_compact::host::Redactor::builtin().ok().map(Arc::new)
        });
        let limits = Arc::new(config.limits);
        let registry = Registry::new(
            config.stores,
            config.sources.clone(),
            config.settings,
            config.methods,
            config.model,
            Arc::clone(&limits),
        );
        Ok(Service {
            shared: Arc::new(Shared {
                tokens: config.tokens,
                registry,
                tasks: Compactions::default(),
                sources: config.sources,
                redactor,
                closing: watch::channel(false).0,
                heavy: HeavyReads::new(limits.heavy_reads),
                streams: crate::state::Streams::default(),
                limits,
            }),
            grace: config.grace,
        })
    }

    /// The router: `/openapi.json` open to all, everything under `/v1/`
    /// behind a bearer token with its body read under the limits, every
    /// refusal in the service's error shape, every request in the access
    /// log.
    pub fn router(&self) -> Router {
        let shared = &self.shared;
        let (api, _) = routes::api();
        let api = api
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(shared),
                middleware::read_body,
            ))
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(shared),
                middleware::authenticate,
            ));
        Router::new()
            .route("/openapi.json", axum::routing::get(routes::openapi))
            .merge(api)
            .fallback(middleware::no_route)
            .method_not_allowed_fallback(middleware::wrong_method)
            .layer(DefaultBodyLimit::max(shared.limits.body_bytes))
            .layer(axum::middleware::from_fn_with_state(
                Arc::clone(shared),
                middleware::error_shape,
            ))
            .layer(axum::middleware::from_fn(middleware::access_log))
            .with_state(Arc::clone(shared))
    }

    /// Serves on `listener` until `shutdown` completes, then stops
    /// accepting, ends event streams, lets running compactions finish
    /// within the grace period (aborting the rest cleanly), gives open
    /// connections the shutdown timeout, and syncs every open session.
    /// Meanwhile sessions unused for the idle time are closed.
    ///
    /// # Errors
    /// None today; the type leaves room for a listener that fails.
    pub async fn run(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<ShutdownReport, ServeError> {
        let router = self.router();
        let shared = Arc::clone(&self.shared);
        let grace = self.grace;
        let (drained_tx, drained_rx) = tokio::sync::oneshot::channel();
        let stop = async move {
            shutdown.await;
            tracing::info!("shutting down: no new connections");
            shared.closing.send_replace(true);
            let tasks = shared.tasks.clone();
            // Drained beside the server: the requests awaiting these
            // passes are what the server is waiting for.
            tokio::spawn(async move {
                let report = tasks.drain(grace).await;
                let _ = drained_tx.send(report);
            });
        };
        let sweeper = tokio::spawn(close_idle_sessions(Arc::clone(&self.shared)));
        crate::server::serve(listener, router, Arc::clone(&self.shared.limits), stop).await;
        sweeper.abort();
        let compactions = drained_rx.await.unwrap_or_default();
        let mut sessions_synced = 0;
        for live in self.shared.registry.all() {
            match live.harness.sync() {
                Ok(()) => sessions_synced += 1,
                Err(error) => {
                    tracing::error!(session = %live.id, %error, "sync at shutdown failed")
                }
            }
        }
        tracing::info!(
            running = compactions.running,
            aborted = compactions.aborted,
            sessions_synced,
            "stopped"
        );
        Ok(ShutdownReport {
            compactions,
            sessions_synced,
        })
    }
}

/// Closes sessions unused for the idle time, every quarter of it (at
/// least every second), off the async workers.
async fn close_idle_sessions(shared: AppState) {
    let every = (shared.limits.session_idle / 4).max(Duration::from_secs(1));
    loop {
        tokio::time::sleep(every).await;
        let registry = Arc::clone(&shared);
        let closed = tokio::task::spawn_blocking(move || registry.registry.close_idle()).await;
        if let Ok(closed @ 1..) = closed {
            tracing::debug!(closed, "idle sessions closed");
        }
    }
}

/// Resolves on ctrl-c or SIGTERM (on Unix), for [`Service::run`].
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
}
