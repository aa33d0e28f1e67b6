//! Which conversation a request continues, by the rolling hashes of its
//! prefix ([`crate::identity`]), and the sessions conversations are
//! logged in.
//!
//! - The longest prefix whose hash is known, ending where that
//!   conversation's known items end: the request continues it.
//! - A known prefix that ends earlier (the agent edited or dropped later
//!   items, as aider does with the reminder on its newest request): the
//!   same session goes on, on a branch at the last shared item, its
//!   checkpoints carried over where they still apply
//!   ([`Conversation::follow`]).
//! - No known prefix, or one of system items only, but a known head
//!   (same system prompt and tools): the agent compacted on its own or
//!   began another task; a new session whose parent is the last one
//!   with that head (or the one whose system items it shares).
//! - Nothing known: a new session.
//!
//! The index lives in memory: after a restart, the first request of a
//! conversation starts a new session (nothing is lost; the old log stays).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering;

use abridge::Harness;
use abridge::Settings;
use abridge_llm::Message;
use abridge_meter::EstimateCounter;
use abridge_serve::SessionStores;
use abridge_serve::Tenant;
use abridge_session::Header;
use abridge_session::Session;
use serde_json::Value;

use crate::conversation::Conversation;
use crate::dialect::Dialect;
use crate::error::ProxyError;

/// A conversation behind the lock a request holds until its reply is
/// recorded.
pub(crate) type Shared = Arc<tokio::sync::Mutex<Conversation>>;

/// How a request relates to what is known.
pub(crate) enum Found {
    /// It shares a prefix with this conversation: under its lock,
    /// [`Conversation::follow`] says where it continues.
    Continues(Shared),
    /// It starts a session, linked to a parent when one is named.
    Starts(Option<String>),
}

#[derive(Debug, Default)]
struct Index {
    /// Prefix hash to (conversation, items it covers).
    prefixes: HashMap<u64, (usize, usize)>,
    /// Head hash to the last conversation with that head.
    heads: HashMap<u64, usize>,
    conversations: Vec<(String, Shared)>,
}

/// Every conversation this proxy has seen, and where their sessions go.
#[derive(Debug)]
pub(crate) struct Registry {
    index: Mutex<Index>,
    stores: Box<dyn SessionStores>,
    tenant: Tenant,
    settings: Settings,
    methods: abridge::MethodRegistry,
    /// The summarizer and endpoints the model-backed methods use.
    sources: abridge::MethodSources,
    window: Option<u64>,
    model: Option<String>,
    made: AtomicU64,
}

impl Registry {
    pub(crate) fn new(
        stores: Box<dyn SessionStores>,
        tenant: Tenant,
        settings: Settings,
        methods: abridge::MethodRegistry,
        sources: abridge::MethodSources,
        window: Option<u64>,
        model: Option<String>,
    ) -> Self {
        Registry {
            index: Mutex::new(Index::default()),
            stores,
            tenant,
            settings,
            methods,
            sources,
            window,
            model,
            made: AtomicU64::new(0),
        }
    }

    fn index(&self) -> std::sync::MutexGuard<'_, Index> {
        self.index
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The conversation `hashes` (of a request whose head hashes to
    /// `head`) shares its longest known prefix with, if any; the caller
    /// asks it, under its lock, where the request continues (the prefix
    /// may lie on a branch it has since left).
    pub(crate) fn find(&self, head: u64, hashes: &[u64]) -> Found {
        let index = self.index();
        for k in (1..=hashes.len()).rev() {
            if let Some(&(conversation, covered)) = index.prefixes.get(&hashes[k - 1])
                && covered == k
            {
                return Found::Continues(Arc::clone(&index.conversations[conversation].1));
            }
        }
        Found::Starts(
            index
                .heads
                .get(&head)
                .map(|c| index.conversations[*c].0.clone()),
        )
    }

    /// Notes that `conversation` now covers the prefixes `hashes`.
    pub(crate) fn remember(&self, conversation: &mut Conversation, head: u64, hashes: &[u64]) {
        conversation.note_hashes(hashes);
        let mut index = self.index();
        let id = &conversation.id;
        let Some(position) = index.conversations.iter().position(|(c, _)| c == id) else {
            return;
        };
        index.heads.insert(head, position);
        for (k, hash) in hashes.iter().enumerate() {
            index.prefixes.insert(*hash, (position, k + 1));
        }
    }

    /// A new session for a conversation in `dialect` asking `model`,
    /// whose head (system prompt, tools) is `head`.
    ///
    /// # Errors
    /// When the store cannot create the session or the harness refuses
    /// the settings.
    pub(crate) fn start(
        &self,
        dialect: Dialect,
        model: &str,
        head: &Value,
        parent: Option<String>,
    ) -> Result<Shared, ProxyError> {
        let n = self.made.fetch_add(1, Ordering::Relaxed);
        let millis = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let id = format!("proxy-{millis}-{n}");
        let store = self
            .stores
            .store(&self.tenant, &id)
            .map_err(ProxyError::store)?;
        let mut header = Header::new(id.clone());
        header.parent_session = parent;
        let session = Session::create(store, header).map_err(ProxyError::session)?;
        let model = self.model.clone().unwrap_or_else(|| model.to_string());
        let sources = abridge::MethodSources {
            model: model.clone(),
            ..self.sources.clone()
        };
        // Models only in the background: the agent never waits on a
        // summary (crate::upkeep).
        let mut builder = Harness::builder(session, model)
            .settings(self.settings.clone())
            .sources(sources)
            .background_models(true)
            .registry(self.methods.clone());
        if let Some(window) = self.window {
            // The head (system prompt, tool definitions) is sent with
            // every request but never logged: the log gets what is left.
            let head_tokens = EstimateCounter::estimate(&Message::system(head.to_string()));
            builder = builder.window(window.saturating_sub(head_tokens).max(abridge::MIN_WINDOW));
        }
        let harness = builder.build().map_err(ProxyError::harness)?;
        tracing::info!(session = %id, ?dialect, "new proxy session");
        let shared = Arc::new(tokio::sync::Mutex::new(Conversation::new(
            id.clone(),
            dialect,
            harness,
        )));
        self.index().conversations.push((id, Arc::clone(&shared)));
        Ok(shared)
    }
}
