//! The open sessions: one [`Harness`] per session, opened from the store
//! on first use and kept while it is used (a bounded cache, [`open`]).
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
//!
//! Each tenant has quotas: sessions, bytes per session, bytes in all
//! ([`quota`]); a create or an append past one is refused whole.

mod gates;
mod open;
mod quota;

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;

use abridge::Harness;
use abridge::MaintenanceEvent;
use abridge::MethodRegistry;
use abridge::MethodSources;
use abridge::Settings;
use abridge_compact::host::lock_session;
use abridge_llm::Message;
use abridge_session::Draft;
use abridge_session::Header;
use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::SessionStore;
use serde::Deserialize;
use serde::Serialize;
use tokio::sync::broadcast;

use crate::auth::Tenant;
use crate::error::ApiError;
use crate::error::Quota;
use crate::limits::ServiceLimits;
use crate::off_worker::OffWorker;
use crate::stores::SessionStores;
use crate::stores::valid_id;
use gates::Gates;
use open::OpenSessions;
use quota::Ledger;

/// The log-only event that records how a session was created.
pub const TYPE_SERVE_SESSION: &str = "serve/session";

/// Maintenance events kept for a slow reader of the event stream before
/// it misses some (it is told how many).
const EVENT_BUFFER: usize = 256;

/// The largest `window` a session may be created with, in tokens (the
/// smallest is the library's, [`abridge::MIN_WINDOW`], refused when the
/// harness is built).
pub const MAX_WINDOW: u64 = 16 * 1024 * 1024;

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
    /// Overrides the model's context window: [`abridge::MIN_WINDOW`] to
    /// [`MAX_WINDOW`] tokens.
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
    /// The tenant it belongs to.
    pub(crate) tenant: Tenant,
    /// The harness over it.
    pub(crate) harness: Harness,
    /// Maintenance events, for `compaction/events` readers.
    pub(crate) events: broadcast::Sender<MaintenanceEvent>,
    /// What its log holds in bytes, as its store said when it was opened
    /// plus what was appended here since (the per-session quota).
    bytes: AtomicU64,
}

/// A session as the registry knows it: its tenant and id.
type Key = (Tenant, String);

/// What the service builds harnesses from, and the sessions it has open.
#[derive(Debug)]
pub(crate) struct Registry {
    stores: Box<dyn SessionStores>,
    sources: MethodSources,
    settings: Settings,
    methods: MethodRegistry,
    model: String,
    limits: Arc<ServiceLimits>,
    open: OpenSessions,
    /// Held while a session is created, opened or closed (see [`gates`]).
    gates: Gates,
    ledger: Ledger,
    fresh: AtomicU64,
}

impl Registry {
    pub(crate) fn new(
        stores: Box<dyn SessionStores>,
        sources: MethodSources,
        settings: Settings,
        methods: MethodRegistry,
        model: String,
        limits: Arc<ServiceLimits>,
    ) -> Self {
        Registry {
            stores,
            sources,
            settings,
            methods,
            model,
            open: OpenSessions::new(limits.open_sessions),
            limits,
            gates: Gates::default(),
            ledger: Ledger::default(),
            fresh: AtomicU64::new(0),
        }
    }

    /// The tenant's session ids.
    pub(crate) fn list(&self, tenant: &Tenant) -> Result<Vec<String>, ApiError> {
        self.stores
            .list(tenant)
            .map_err(|e| ApiError::Internal(e.to_string()))
    }

    /// Creates a session for `tenant`. A create that fails once it has
    /// written leaves nothing behind: what it wrote is removed.
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
        if let Some(window) = spec.window
            && window > MAX_WINDOW
        {
            return Err(ApiError::BadRequest(format!(
                "window {window}: use at most {MAX_WINDOW} tokens"
            )));
        }
        let settings = match &spec.settings {
            Some(value) => Settings::from_json_using(&value.to_string(), "settings", &self.methods)
                .map_err(|e| ApiError::BadRequest(e.to_string()))?,
            None => self.settings.clone(),
        };
        let recorded = Recorded {
            tenant: tenant.to_string(),
            model: spec.model.unwrap_or_else(|| self.model.clone()),
            window: spec.window,
            settings,
        };
        // Checked before anything is written, so a bad window or settings
        // leave no file behind.
        let probe = Session::in_memory(&id);
        self.harness(probe, &recorded, broadcast::channel(1).0)?;
        // One create at a time per tenant, so the count below is exact
        // (an id is never empty, so this key is no session's).
        let _counting = self.gates.hold(&(tenant.clone(), String::new()));
        let key = (tenant.clone(), id.clone());
        let _creating = self.gates.hold(&key);
        if self.open.contains(&key) || self.stores.exists(tenant, &id) {
            return Err(ApiError::Conflict { id });
        }
        let count = self.list(tenant)?.len() as u64;
        if count >= self.limits.sessions_per_tenant {
            return Err(ApiError::Quota {
                quota: Quota::Sessions,
                limit: self.limits.sessions_per_tenant,
                used: count + 1,
            });
        }
        self.open.make_room(&self.gates)?;
        let session = match self.write_new(tenant, &id, &recorded) {
            Ok(session) => session,
            Err(conflict @ ApiError::Conflict { .. }) => return Err(conflict),
            Err(error) => {
                // The session is this call's alone (its gate is held and
                // it did not exist): remove what was written of it.
                if let Err(undo) = self.stores.discard(tenant, &id) {
                    tracing::error!(%tenant, session = %id, error = %undo, "cannot remove a half-created session");
                }
                return Err(error);
            }
        };
        let live = self.live(tenant, id, session, &recorded)?;
        tracing::info!(%tenant, session = %live.id, model = %recorded.model, "session created");
        self.open.insert(key, Arc::clone(&live));
        Ok(live)
    }

    /// Creates session `id` in the store with its `serve/session` record.
    fn write_new(
        &self,
        tenant: &Tenant,
        id: &str,
        recorded: &Recorded,
    ) -> Result<Session, ApiError> {
        let store = self.store(tenant, id)?;
        let mut session = match Session::create(store, Header::new(id.to_string())) {
            Ok(session) => session,
            // Another worker created it between the check and the write.
            Err(abridge_session::SessionError::Store(
                abridge_session::StoreError::AlreadyExists { .. },
            )) => return Err(ApiError::Conflict { id: id.to_string() }),
            Err(other) => return Err(other.into()),
        };
        let data = serde_json::to_value(recorded).map_err(|e| ApiError::Internal(e.to_string()))?;
        session.append(Draft::log(TYPE_SERVE_SESSION, data))?;
        Ok(session)
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
    /// session is [`ApiError::NotFound`], as a missing one is; looking up
    /// a missing id keeps nothing.
    pub(crate) fn get(&self, tenant: &Tenant, id: &str) -> Result<Arc<Live>, ApiError> {
        let not_found = || ApiError::NotFound { id: id.to_string() };
        if !valid_id(id) {
            return Err(not_found());
        }
        let key = (tenant.clone(), id.to_string());
        if let Some(live) = self.open.get(&key) {
            let read = lock_session(live.harness.session()).catch_up()?;
            if read > 0 {
                tracing::debug!(session = id, read, "caught up with other workers");
                self.measure(&live);
            }
            return Ok(live);
        }
        if !self.stores.exists(tenant, id) {
            return Err(not_found());
        }
        let _opening = self.gates.hold(&key);
        // Opened by the request that held the gate before this one.
        if let Some(live) = self.open.get(&key) {
            return Ok(live);
        }
        self.open.make_room(&self.gates)?;
        let store = self.store(tenant, id)?;
        // A torn log is refused here (`StoreError::Torn`, a 500 naming
        // `abridge repair`): the server never cuts a log.
        let (mut session, _) = Session::open(store)?;
        let closed = abridge_compact::host::close_stale(&mut session)
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
        let live = self.live(tenant, id.to_string(), session, &recorded)?;
        self.measure(&live);
        self.open.insert(key, Arc::clone(&live));
        Ok(live)
    }

    /// Reads what `live`'s log holds from its store.
    fn measure(&self, live: &Live) {
        match self.stores.size(&live.tenant, &live.id) {
            Ok(bytes) => live.bytes.store(bytes, Ordering::Relaxed),
            Err(error) => {
                tracing::warn!(session = %live.id, %error, "cannot read the session's size")
            }
        }
    }

    /// Appends `messages` (`bytes` of JSON as the log holds them) to
    /// `live` as one batch: within the tenant's byte quotas, and only when
    /// they keep the tool pairing after what the session holds (the rule
    /// the invariant checker reports, `abridge_compact::check::Pairing`).
    ///
    /// # Errors
    /// [`ApiError::Quota`] or [`ApiError::Rejected`] (naming the message)
    /// before anything is written; the session's refusal or the store's
    /// failure (nothing written either).
    pub(crate) fn append(
        &self,
        live: &Live,
        messages: Vec<Message>,
        bytes: u64,
    ) -> Result<Vec<Seq>, ApiError> {
        let held = live.bytes.load(Ordering::Relaxed);
        self.ledger.book(
            self.stores.as_ref(),
            &self.limits,
            &live.tenant,
            held,
            bytes,
        )?;
        let appended = {
            let mut session = lock_session(live.harness.session());
            match abridge_compact::check::check_appended_pairing(&session, &messages) {
                Err((index, fault)) => Err(ApiError::Rejected(format!(
                    "messages[{index}]: {fault}; nothing of the batch was written"
                ))),
                Ok(()) => session
                    .append_batch(messages.into_iter().map(Draft::message).collect())
                    .map_err(ApiError::from),
            }
        };
        match appended {
            Ok(seqs) => {
                live.bytes.fetch_add(bytes, Ordering::Relaxed);
                Ok(seqs)
            }
            Err(error) => {
                self.ledger.unbook(&live.tenant, bytes);
                Err(error)
            }
        }
    }

    /// Closes the sessions unused for the idle time (and not in use);
    /// returns how many.
    pub(crate) fn close_idle(&self) -> usize {
        self.open.close_idle(self.limits.session_idle, &self.gates)
    }

    /// Every open session, to sync at shutdown.
    pub(crate) fn all(&self) -> Vec<Arc<Live>> {
        self.open.all()
    }

    fn live(
        &self,
        tenant: &Tenant,
        id: String,
        session: Session,
        recorded: &Recorded,
    ) -> Result<Arc<Live>, ApiError> {
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        let harness = self.harness(session, recorded, events.clone())?;
        Ok(Arc::new(Live {
            id,
            tenant: tenant.clone(),
            harness,
            events,
            bytes: AtomicU64::new(0),
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
            .registry(self.methods.clone())
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
