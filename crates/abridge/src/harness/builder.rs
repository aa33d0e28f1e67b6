//! `HarnessBuilder`: what a harness is made of, and the checks made when
//! it is built (the model's window against the settings, an unknown model
//! warned about once).

use std::sync::Arc;
use std::sync::Mutex;

use abridge_compact::CompactionMethod;
use abridge_compact::Policy;
use abridge_compact::host::CompactionHooks;
use abridge_compact::host::MeterCounter;
use abridge_compact::host::SharedSession;
use abridge_compact::host::lock_session;
use abridge_llm::Catalog;
use abridge_llm::LlmClient;
use abridge_llm::Lookup;
use abridge_meter::CostModel;
use abridge_session::Session;

use crate::counting::CountCache;
use crate::counting::CountEndpoint;
use crate::counting::CountPrimer;
use crate::error::HarnessError;
use crate::harness::idle::IdleClock;
use crate::harness::recovery::speculative_band;
use crate::maintenance::Maintenance;
use crate::methods::MethodSources;
use crate::model_compaction::Pending;
use crate::pass::Observer;
use crate::registry::MethodRegistry;
use crate::registry::MethodSet;
use crate::settings::Settings;

use abridge_meter::KeptFile;
use abridge_meter::KeptLoad;
use abridge_meter::TokenMeter;

use super::Harness;

/// Builds a [`Harness`].
#[derive(Debug)]
pub struct HarnessBuilder {
    session: SharedSession,
    client: Option<Arc<dyn LlmClient>>,
    model: String,
    catalog: Catalog,
    settings: Settings,
    window: Option<u64>,
    methods: Option<MethodSet>,
    registry: MethodRegistry,
    sources: Option<MethodSources>,
    hooks: Option<Arc<dyn CompactionHooks>>,
    observer: Option<ObserverSlot>,
    count_endpoint: Option<Arc<dyn CountEndpoint>>,
    pub(super) kept: Option<abridge_meter::KeptFile>,
    pub(super) fixed_overhead: Option<u64>,
    background_models: bool,
}

struct ObserverSlot(Observer);

impl std::fmt::Debug for ObserverSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Observer")
    }
}

impl HarnessBuilder {
    /// A harness over `session` for `model` (looked up in the catalog for
    /// its window, tokenizer and image rules).
    pub fn new(session: Session, model: impl Into<String>) -> Self {
        Self::shared(std::sync::Arc::new(Mutex::new(session)), model)
    }

    /// The same over a session the host already shares.
    pub fn shared(session: SharedSession, model: impl Into<String>) -> Self {
        HarnessBuilder {
            session,
            client: None,
            model: model.into(),
            catalog: Catalog::builtin(),
            settings: Settings::default(),
            window: None,
            methods: None,
            registry: MethodRegistry::builtin(),
            sources: None,
            hooks: None,
            observer: None,
            count_endpoint: None,
            kept: None,
            fixed_overhead: None,
            background_models: false,
        }
    }

    /// The provider's token-counting endpoint (for Claude models,
    /// `CountTokensClient` (feature `providers`) with the
    /// user's Anthropic key). New messages are then priced with the
    /// provider's count, fetched before each pass, instead of the
    /// corrected estimate; see [`CountPrimer`]. Off when the settings'
    /// `count_with_endpoint` is false.
    pub fn count_endpoint(mut self, endpoint: Arc<dyn CountEndpoint>) -> Self {
        self.count_endpoint = Some(endpoint);
        self
    }

    /// The client the agent's turns go through ([`Harness::complete`]).
    pub fn client(mut self, client: Arc<dyn LlmClient>) -> Self {
        self.client = Some(client);
        self
    }

    /// Settings; default [`Settings::default`].
    pub fn settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }

    /// The catalog to look the model up in; default the built-in one.
    pub fn catalog(mut self, catalog: Catalog) -> Self {
        self.catalog = catalog;
        self
    }

    /// Overrides the model's context window (a smaller deployment, a test).
    pub fn window(mut self, tokens: u64) -> Self {
        self.window = Some(tokens);
        self
    }

    /// What the settings' method order is built from (summarizer, remote
    /// endpoint, artifact store). Default: model-free methods only.
    pub fn sources(mut self, sources: MethodSources) -> Self {
        self.sources = Some(sources);
        self
    }

    /// Exactly these methods, in this order, instead of building the
    /// settings' order. To keep the methods [`build_methods`](crate::build_methods)
    /// could not build, pass its answer to [`method_set`](Self::method_set)
    /// instead; to add a method of your own, register it
    /// ([`registry`](Self::registry)).
    pub fn methods(mut self, methods: Vec<Arc<dyn CompactionMethod>>) -> Self {
        self.methods = Some(methods.into());
        self
    }

    /// These methods, in this order, and the ones that could not be built
    /// (what [`build_methods`](crate::build_methods) or
    /// [`MethodRegistry::build`] returns, edited or not): every pass
    /// reports the latter as skipped, as it does for the settings' order.
    pub fn method_set(mut self, set: impl Into<MethodSet>) -> Self {
        self.methods = Some(set.into());
        self
    }

    /// The registry the settings' method order is built from (default:
    /// the built-in methods); register a host's own methods in it to name
    /// them in `method_order` and in manual passes. Its expansions shape
    /// [`Harness::request`].
    pub fn registry(mut self, registry: MethodRegistry) -> Self {
        self.registry = registry;
        self
    }

    /// Model-backed methods only in the background: passes commit their
    /// finished speculations and never wait on a model
    /// ([`Maintenance::with_background_models`]); default off. A host
    /// that turns it on starts speculations after each reply
    /// ([`Maintenance::speculate`]) and sets `speculative_percent`.
    pub fn background_models(mut self, on: bool) -> Self {
        self.background_models = on;
        self
    }

    /// Host hooks around every compaction.
    pub fn hooks(mut self, hooks: Arc<dyn CompactionHooks>) -> Self {
        self.hooks = Some(hooks);
        self
    }

    /// Receives every maintenance step.
    pub fn observer(mut self, observer: Observer) -> Self {
        self.observer = Some(ObserverSlot(observer));
        self
    }

    /// How the catalog knows the model: [`Match::Default`](abridge_llm::Match::Default) means it does
    /// not, and the window, tokenizer and image rules are a conservative
    /// guess (give [`window`](Self::window), or a [`catalog`](Self::catalog)
    /// entry). [`build`](Self::build) logs a warning in that case.
    pub fn lookup(&self) -> Lookup {
        self.catalog.lookup(&self.model)
    }

    /// Builds the harness.
    ///
    /// # Errors
    /// [`HarnessError::Settings`] when the settings cannot work with the
    /// model's window.
    pub fn build(self) -> Result<Harness, HarnessError> {
        let lookup = self.lookup();
        if lookup.is_default() {
            tracing::warn!(
                model = %self.model,
                window = self.window.unwrap_or(lookup.entry.context_window),
                "model is not in the catalog; its window, tokenizer and image rules are conservative guesses"
            );
        }
        let matched = lookup.matched;
        let mut entry = lookup.entry;
        if let Some(window) = self.window {
            entry.context_window = window;
        }
        let limits = self.settings.limits(entry.context_window)?;
        let cost = CostModel::for_model(&entry);
        let primer = self
            .count_endpoint
            .filter(|_| self.settings.count_with_endpoint)
            .map(|endpoint| CountPrimer::new(endpoint, Arc::new(CountCache::new()), cost.clone()));
        let cost = match &primer {
            Some(primer) => cost.with_known(primer.cache().clone()),
            None => cost,
        };
        let mut meter = meter(cost, self.kept.as_ref());
        if let Some(tokens) = self.fixed_overhead {
            meter = meter.with_fixed_overhead(tokens);
        }
        let counter = Arc::new(MeterCounter::new(meter));
        let artifacts = self.sources.as_ref().map(|s| s.artifacts.clone());
        let mut built_artifacts = None;
        let MethodSet { methods, skipped } = match self.methods {
            Some(methods) => methods,
            None => {
                let sources = self.sources.unwrap_or_else(|| MethodSources {
                    catalog: self.catalog.clone(),
                    ..MethodSources::offline(self.model.clone())
                });
                built_artifacts = Some(sources.artifacts.clone());
                self.registry.build(&self.settings, &sources)
            }
        };
        let mut policy = Policy::new(counter.clone());
        if let Some(redactor) = self.settings.redactor()? {
            policy = policy.with_redactor(redactor);
        }
        let recall_redactor = self.settings.recall_redactor()?;
        let artifacts = artifacts.or_else(|| built_artifacts.clone());
        let mut maintenance = Maintenance::new(methods, policy, limits)
            .with_not_configured(skipped)
            .with_enabled(self.settings.enabled)
            .with_breaker(self.settings.breaker_failures)
            .with_speculation(speculative_band(&self.settings, &limits))
            .with_background_models(self.background_models);
        if let Some(hooks) = self.hooks {
            maintenance = maintenance.with_hooks(hooks);
        }
        if let Some(ObserverSlot(observer)) = self.observer {
            maintenance = maintenance.with_observer(observer);
        }
        let seen = lock_session(&self.session).len();
        Ok(Harness {
            idle: Mutex::new(IdleClock::new(seen)),
            session: self.session,
            client: self.client,
            model: Mutex::new(self.model),
            entry,
            matched,
            catalog: self.catalog,
            counter,
            maintenance,
            settings: self.settings,
            primer,
            recall: Mutex::new(None),
            recall_redactor,
            artifacts,
            requested: Pending::default(),
            kept: self.kept,
            registry: self.registry,
        })
    }
}

/// The harness's meter for `cost`, holding the counts of `kept` when given.
fn meter(cost: CostModel, kept: Option<&KeptFile>) -> TokenMeter {
    let mut meter = TokenMeter::new(cost);
    if let Some(file) = kept {
        match file.load(&mut meter) {
            KeptLoad::Refused(error) => tracing::warn!(
                path = %file.path().display(),
                %error,
                "kept counts not usable; counting again and rewriting them"
            ),
            outcome => tracing::debug!(path = %file.path().display(), ?outcome, "kept counts"),
        }
    }
    meter
}
