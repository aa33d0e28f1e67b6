//! The open sessions: one [`Harness`] per session, opened from the store
//! on first use and kept while the service runs.
//!
//! What a session was created with (its tenant, model, window and
//! settings) is the first event of its log, a log-only `serve/session`
//! event, so a restarted service (or another worker on a shared store)
//! rebuilds the same harness. Opening a session closes the compaction
//! starts a crash left unmatched, so its log says what happened.
//!
//! Several workers may share a store (PostgreSQL). A cached session is
//! then behind as soon as another worker appends, so [`Registry::get`]
//! catches it up (a head check, then only the new events) before every
//! use; a write that still loses a race answers 409 (`stale_write`), and
//! the next request starts from the caught-up log. Compactions are kept
//! one at a time per session across workers by the store's hold (the
//! lock row), which the compaction transaction takes.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;

use abridge::Harness;
use abridge::MaintenanceEvent;
use abridge::MethodSources;
use abridge::Settings;
use abridge_compact::lock_session;
use abridge_session::Draft;
use abridge_session::Header;
use abridge_session::Session;
use abridge_session::SessionStore;
use serde::Deserialize;
use serde::Serialize;
use tokio::sync::broadcast;

use crate::auth::Tenant;
use crate::error::ApiError;
use crate::off_worker::OffWorker;
use crate::stores::SessionStores;
use crate::stores::valid_id;

/// The log-only event that records how a session was created.
pub const TYPE_SERVE_SESSION: &str = "serve/session";

/// Maintenance events kept for a slow reader of the event stream before
/// it misses some (it is told how many).
const EVENT_BUFFER: usize = 256;

/// What a session is created with; also the body of `POST /v1/sessions`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionSpec {
    /// The id; default a fresh one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The model the agent talks to (priced and compacted for); default
    /// the service's model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Overrides the model's context window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
    /// Settings, as the JSON form of a settings file; default the
    /// service's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<serde_json::Value>,
}

/// The `serve/session` event's data.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Recorded {
    tenant: String,
    model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    window: Option<u64>,
    settings: Settings,
}

/// One open session.
#[derive(Debug)]
pub(crate) struct Live {
    /// The session's id.
    pub(crate) id: String,
    /// The harness over it.
    pub(crate) harness: Harness,
    /// Maintenance events, for `compaction/events` readers.
    pub(crate) events: broadcast::Sender<MaintenanceEvent>,
}

/// What the service builds harnesses from.
#[derive(Debug)]
pub(crate) struct Registry {
    stores: Box<dyn SessionStores>,
    sources: MethodSources,
    settings: Settings,
    model: String,
    open: Mutex<HashMap<Key, Arc<Live>>>,
    /// One gate per session key, held while that session is created or
    /// opened from its store: two requests never open (or create) one
    /// session twice, and the map above stays free for every other
    /// session meanwhile (an open reads the whole log).
    gates: Mutex<HashMap<Key, Arc<Mutex<()>>>>,
    fresh: AtomicU64,
}

/// A session as the registry knows it: its tenant and id.
type Key = (Tenant, String);

impl Registry {
    pub(crate) fn new(
        stores: Box<dyn SessionStores>,
        sources: MethodSources,
        settings: Settings,
        model: String,
    ) -> Self {
        Registry {
            stores,
            sources,
            settings,
            model,
            open: Mutex::new(HashMap::new()),
            gates: Mutex::new(HashMap::new()),
            fresh: AtomicU64::new(0),
        }
    }

    fn open_map(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Arc<Live>>> {
        self.open
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The gate of `key` (see `gates`).
    fn gate(&self, key: &Key) -> Arc<Mutex<()>> {
        self.gates
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(key.clone())
            .or_default()
            .clone()
    }

    /// The tenant's session ids.
    pub(crate) fn list(&self, tenant: &Tenant) -> Result<Vec<String>, ApiError> {
        self.stores
            .list(tenant)
            .map_err(|e| ApiError::Internal(e.to_string()))
    }

    /// Creates a session for `tenant`.
    pub(crate) fn create(&self, tenant: &Tenant, spec: SessionSpec) -> Result<Arc<Live>, ApiError> {
        let id = match spec.id {
            Some(id) if valid_id(&id) => id,
            Some(id) => {
                return Err(ApiError::BadRequest(format!(
                    "session id {id:?}: use 1 to 128 ASCII letters, digits, `-`, `_` or `.`, not starting with `.`"
                )));
            }
            None => self.fresh_id(),
        };
        let settings = match &spec.settings {
            Some(value) => Settings::from_json(&value.to_string(), "settings")
                .map_err(|e| ApiError::BadRequest(e.to_string()))?,
            None => self.settings.clone(),
        };
        let recorded = Recorded {
            tenant: tenant.to_string(),
            model: spec.model.unwrap_or_else(|| self.model.clone()),
            window: spec.window,
            settings,
        };
        let key = (tenant.clone(), id.clone());
        let gate = self.gate(&key);
        let _creating = gate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if self.open_map().contains_key(&key) || self.stores.exists(tenant, &id) {
            return Err(ApiError::Conflict { id });
        }
        // Checked before anything is written, so a bad window or settings
        // leave no file behind.
        let probe = Session::in_memory(&id);
        self.harness(probe, &recorded, broadcast::channel(1).0)?;
        let store = self.store(tenant, &id)?;
        let mut session = match Session::create(store, Header::new(id.clone())) {
            Ok(session) => session,
            // Another worker created it between the check and the write.
            Err(abridge_session::SessionError::Store(
                abridge_session::StoreError::AlreadyExists { .. },
            )) => return Err(ApiError::Conflict { id }),
            Err(other) => return Err(other.into()),
        };
        let data =
            serde_json::to_value(&recorded).map_err(|e| ApiError::Internal(e.to_string()))?;
        session.append(Draft::log(TYPE_SERVE_SESSION, data))?;
        let live = self.live(id, session, &recorded)?;
        tracing::info!(%tenant, session = %live.id, model = %recorded.model, "session created");
        self.open_map().insert(key, live.clone());
        Ok(live)
    }

    /// The store of the tenant's session `id`, its calls kept off the
    /// async workers (see [`OffWorker`]).
    fn store(&self, tenant: &Tenant, id: &str) -> Result<Box<dyn SessionStore>, ApiError> {
        let store = self
            .stores
            .store(tenant, id)
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        Ok(Box::new(OffWorker(store)))
    }

    /// The tenant's session `id`, opened from the store on first use and
    /// caught up with other writers on every later one. Another tenant's
    /// session is [`ApiError::NotFound`], as a missing one is.
    pub(crate) fn get(&self, tenant: &Tenant, id: &str) -> Result<Arc<Live>, ApiError> {
        let not_found = || ApiError::NotFound { id: id.to_string() };
        if !valid_id(id) {
            return Err(not_found());
        }
        let key = (tenant.clone(), id.to_string());
        let cached = self.open_map().get(&key).cloned();
        if let Some(live) = cached {
            let read = lock_session(live.harness.session()).catch_up()?;
            if read > 0 {
                tracing::debug!(session = id, read, "caught up with other workers");
            }
            return Ok(live);
        }
        let gate = self.gate(&key);
        let _opening = gate
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Opened by the request that held the gate before this one.
        if let Some(live) = self.open_map().get(&key) {
            return Ok(live.clone());
        }
        if !self.stores.exists(tenant, id) {
            return Err(not_found());
        }
        let store = self.store(tenant, id)?;
        // A torn log is refused here (`StoreError::Torn`, a 500 naming
        // `abridge repair`): the server never cuts a log.
        let (mut session, _) = Session::open(store)?;
        let closed = abridge_compact::close_stale(&mut session)
            .map_err(|e| ApiError::Internal(e.to_string()))?;
        if !closed.is_empty() {
            tracing::warn!(session = id, ends = ?closed, "closed compaction starts a crash left open");
        }
        let recorded = recorded(&session).ok_or_else(|| {
            ApiError::Internal(format!(
                "session {id:?} has no `{TYPE_SERVE_SESSION}` event; it was not created by abridge serve"
            ))
        })?;
        if recorded.tenant != tenant.as_str() {
            return Err(not_found());
        }
        let live = self.live(id.to_string(), session, &recorded)?;
        self.open_map().insert(key, live.clone());
        Ok(live)
    }

    /// Every open session, to sync at shutdown.
    pub(crate) fn all(&self) -> Vec<Arc<Live>> {
        self.open_map().values().cloned().collect()
    }

    fn live(
        &self,
        id: String,
        session: Session,
        recorded: &Recorded,
    ) -> Result<Arc<Live>, ApiError> {
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let harness = self.harness(session, recorded, events.clone())?;
        Ok(Arc::new(Live {
            id,
            harness,
            events,
        }))
    }

    fn harness(
        &self,
        session: Session,
        recorded: &Recorded,
        events: broadcast::Sender<MaintenanceEvent>,
    ) -> Result<Harness, ApiError> {
        let sources = MethodSources {
            model: recorded.model.clone(),
            ..self.sources.clone()
        };
        let mut builder = Harness::builder(session, recorded.model.clone())
            .settings(recorded.settings.clone())
            .sources(sources)
            .observer(Arc::new(move |event: &MaintenanceEvent| {
                // No reader is not an error: events are for whoever listens.
                let _ = events.send(event.clone());
            }));
        if let Some(window) = recorded.window {
            builder = builder.window(window);
        }
        builder
            .build()
            .map_err(|e| ApiError::BadRequest(e.to_string()))
    }

    /// A new id: the time in microseconds and a counter, in hex.
    fn fresh_id(&self) -> String {
        let micros = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros());
        let n = self.fresh.fetch_add(1, Ordering::Relaxed);
        format!("s-{micros:x}-{:x}-{n:x}", std::process::id())
    }
}

/// The `serve/session` record of `session`, if it has one.
fn recorded(session: &Session) -> Option<Recorded> {
    session.events().iter().find_map(|event| {
        let log = event.log()?;
        if log.kind != TYPE_SERVE_SESSION {
            return None;
        }
        serde_json::from_value(log.data.clone()).ok()
    })
}
