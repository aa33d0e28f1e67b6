//! The service: its configuration, shared state, router and run loop
//! with graceful shutdown.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use abridge::MethodSources;
use abridge::Settings;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::extract::Request;
use axum::extract::State;
use axum::middleware::Next;
use axum::response::Response;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::auth::Tokens;
use crate::error::ApiError;
use crate::error::ServeError;
use crate::routes;
use crate::sessions::Registry;
use crate::state::AppState;
use crate::state::Shared;
use crate::stores::SessionStores;
use crate::tasks::Compactions;
use crate::tasks::DrainReport;

/// Largest request body accepted by default (32 MiB: a long batch of
/// messages with images). Larger bodies get 413.
pub const DEFAULT_BODY_LIMIT: usize = 32 * 1024 * 1024;

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
    /// Model of a session created without one.
    pub model: String,
    /// Largest request body in bytes.
    pub body_limit: usize,
    /// How long running compactions may finish at shutdown.
    pub grace: Duration,
}

impl ServiceConfig {
    /// A configuration with the defaults: no summarizer, default settings,
    /// model `unknown` (the catalog's conservative entry), 32 MiB bodies,
    /// 30 s grace.
    pub fn new(stores: Box<dyn SessionStores>, tokens: Tokens) -> Self {
        ServiceConfig {
            stores,
            tokens,
            sources: MethodSources::offline("unknown"),
            settings: Settings::default(),
            model: "unknown".to_string(),
            body_limit: DEFAULT_BODY_LIMIT,
            grace: DEFAULT_GRACE,
        }
    }
}

/// A built service: route it in a test, or run it on a listener.
#[derive(Debug, Clone)]
pub struct Service {
    shared: AppState,
    body_limit: usize,
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
    pub fn new(config: ServiceConfig) -> Self {
        // Settings are validated when they load, so this fails only for
        // settings built by hand with a bad pattern: then the built-in
        // patterns still apply rather than none.
        let redactor = config.settings.redactor().unwrap_or_else(|error| {
            tracing::warn!(%error, "redact_patterns unusable; redacting with the built-in patterns");
            abridge_compact::Redactor::builtin().ok().map(Arc::new)
        });
        let registry = Registry::new(
            config.stores,
            config.sources.clone(),
            config.settings,
            config.model,
        );
        Service {
            shared: Arc::new(Shared {
                tokens: config.tokens,
                registry,
                tasks: Compactions::default(),
                sources: config.sources,
                redactor,
                closing: watch::channel(false).0,
            }),
            body_limit: config.body_limit,
            grace: config.grace,
        }
    }

    /// The router: `/openapi.json` open to all, everything under `/v1/`
    /// behind a bearer token, bodies capped.
    pub fn router(&self) -> Router {
        let (api, _) = routes::api();
        let api = api.layer(axum::middleware::from_fn_with_state(
            self.shared.clone(),
            authenticate,
        ));
        Router::new()
            .route("/openapi.json", axum::routing::get(routes::openapi))
            .merge(api)
            .layer(DefaultBodyLimit::max(self.body_limit))
            .with_state(self.shared.clone())
    }

    /// Serves on `listener` until `shutdown` completes, then stops
    /// accepting, ends event streams, lets running compactions finish
    /// within the grace period (aborting the rest cleanly), waits for
    /// in-flight requests and syncs every open session.
    ///
    /// # Errors
    /// [`ServeError::Io`] when the server fails.
    pub async fn run(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<ShutdownReport, ServeError> {
        let router = self.router();
        let shared = self.shared.clone();
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
        axum::serve(listener, router)
            .with_graceful_shutdown(stop)
            .await?;
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

/// Accepts the request when its bearer token is known, and hands its
/// tenant to the handler. Never logs the header.
async fn authenticate(
    State(shared): State<AppState>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let tenant = shared
        .tokens
        .tenant_of(request.headers())
        .ok_or(ApiError::Unauthorized)?;
    request.extensions_mut().insert(tenant);
    Ok(next.run(request).await)
}
