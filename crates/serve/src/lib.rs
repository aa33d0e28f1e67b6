//! abridge over HTTP, for agents written in any language: sessions,
//! requests shaped per provider, Maintenance after each turn, recall,
//! reports, and the summary endpoint another abridge's `remote` method
//! calls. `abridge serve` runs it; a host can embed it with [`Service`].
//!
//! - Every route but `/openapi.json` needs `Authorization: Bearer TOKEN`;
//!   each token stands for one tenant ([`Tokens`]), and a tenant sees only
//!   its own sessions (another tenant's session answers 404, as a missing
//!   one does).
//! - Sessions live in a [`SessionStores`] chosen by the `--store` value
//!   ([`open_stores`]): JSONL files under a directory for one worker, or
//!   PostgreSQL ([`PgDir`]) shared by several. A worker catches up with
//!   what others appended before it uses a session, answers 409
//!   `stale_write` when another worker wrote first, and compacts a session
//!   only while it holds the session's lock row (docs/serve.md).
//! - Safe on a network ([`ServiceLimits`], docs/serve.md "Security"):
//!   request heads, bodies, idle connections and stalled answers are
//!   timed; connections and event streams are capped; open sessions are a
//!   bounded cache; each tenant has quotas (sessions, bytes per session,
//!   bytes in all); heavy reads run off the async workers a few at a time;
//!   blob references are the server's own; appends keep the tool pairing;
//!   every refusal is `{"error": {...}}`, and a 5xx names an error id, not
//!   what failed.
//! - Maintenance passes run as tracked tasks; shutdown ([`Service::run`])
//!   lets them finish within a grace period and aborts the rest so the log
//!   records them as cancelled; connections still open after the shutdown
//!   timeout are dropped.
//!
//! The routes and their bodies are in the OpenAPI document
//! ([`OPENAPI`], served at `/openapi.json`) and docs/serve.md.
//!
//! # Example
//!
//! ```no_run
//! use abridge_serve::{Service, ServiceConfig, Tokens, open_stores, shutdown_signal};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let tokens = Tokens::single("a-token-of-16-chars-or-more", "team-a")?;
//! let service = Service::new(ServiceConfig::new(open_stores("sessions")?, tokens))?;
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8787").await?;
//! service.run(listener, shutdown_signal()).await?;
//! # Ok(())
//! # }
//! ```

mod app;
mod auth;
mod error;
mod extract;
mod heavy;
mod limits;
mod middleware;
mod off_worker;
mod open;
mod routes;
mod server;
mod sessions;
mod state;
mod stores;
mod stores_pg;
mod tasks;

/// The report and the census are `abridge-views`'s, shared with the
/// command line; re-exported under their old name.
pub use abridge_views as report;

pub use app::DEFAULT_GRACE;
pub use app::Service;
pub use app::ServiceConfig;
pub use app::ShutdownReport;
pub use app::shutdown_signal;
pub use auth::MIN_TOKEN_LEN;
pub use auth::Tenant;
pub use auth::Tokens;
pub use auth::TokensError;
pub use error::ApiError;
pub use error::Quota;
pub use error::ServeError;
pub use error::StoreChoiceError;
pub use limits::DEFAULT_BODY_LIMIT;
pub use limits::LimitError;
pub use limits::ServiceLimits;
pub use middleware::read_limited;
pub use open::open_stores;
pub use open::open_stores_with;
pub use routes::OPENAPI;
pub use server::serve_hardened;
pub use sessions::MAX_WINDOW;
pub use sessions::SessionSpec;
pub use sessions::TYPE_SERVE_SESSION;
pub use stores::JsonlDir;
pub use stores::SessionStores;
pub use stores::valid_id;
pub use stores_pg::PgDir;
pub use tasks::DrainReport;
