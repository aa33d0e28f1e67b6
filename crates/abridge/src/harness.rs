//! `Harness`: what an agent loop calls. It owns the session, its one token
//! counter and its Maintenance; it builds each request and records each
//! reply.
//!
//! The loop a framework writes:
//!
//! 1. `harness.append(user message)`;
//! 2. `harness.request()` gives the messages to send;
//! 3. on a reply, `harness.record(response)`, then `harness.after_turn()`
//!    (or `mid_turn()` inside a tool loop); on an error,
//!    `harness.on_error(&error)` and retry when it says so.

mod builder;
mod idle;
mod kept;
mod overhead;
mod pins;
mod recovery;

use std::sync::Arc;
use std::sync::Mutex;
use std::time::Instant;

use abridge_compact::TokenCounter;
use abridge_compact::Trigger;
use abridge_compact::host::MeterCounter;
use abridge_compact::host::SharedSession;
use abridge_compact::host::lock_session;
use abridge_llm::Catalog;
use abridge_llm::LlmClient;
use abridge_llm::Match;
use abridge_llm::Message;
use abridge_llm::ModelEntry;
use abridge_llm::Purpose;
use abridge_llm::Request;
use abridge_llm::Response;
use abridge_prune::ArtifactStore;
use abridge_session::Seq;
use abridge_session::Session;

use crate::counting::CountPrimer;
use crate::counting::PrimeReport;
use crate::error::HarnessError;
pub use crate::harness::builder::HarnessBuilder;
use crate::harness::idle::IdleClock;
pub use crate::harness::pins::USER_PIN;
pub use crate::harness::recovery::Recovery;
use crate::maintenance::Maintenance;
use crate::model_compaction::Pending;
use crate::pass::Pass;
use crate::pass::PassStatus;
use crate::recall::Recall;
use crate::registry::MethodRegistry;
use crate::request::RequestTarget;
use crate::request::build_request_with;
use crate::settings::Limits;
use crate::settings::Settings;

/// One session's agent-side room: request building, recording and
/// maintenance.
#[derive(Debug)]
pub struct Harness {
    session: SharedSession,
    client: Option<Arc<dyn LlmClient>>,
    model: Mutex<String>,
    entry: ModelEntry,
    /// How the catalog found `entry` (`Default`: it did not).
    matched: Match,
    catalog: Catalog,
    counter: Arc<MeterCounter>,
    maintenance: Maintenance,
    settings: Settings,
    primer: Option<CountPrimer>,
    /// Built on the first recall call, refreshed on every later one.
    recall: Mutex<Option<Recall>>,
    /// What recall answers through (`None`: the logged originals).
    recall_redactor: Option<Arc<abridge_compact::host::Redactor>>,
    /// Where shake put what it moved out, for `artifact://` references.
    artifacts: Option<Arc<dyn ArtifactStore>>,
    /// A compaction the model asked for, run by the next `after_turn`.
    requested: Pending,
    /// Where message counts are kept between processes.
    kept: Option<abridge_meter::KeptFile>,
    /// When the session was last active, for the idle trigger.
    idle: Mutex<IdleClock>,
    /// The methods it can name and how checkpoints expand.
    registry: MethodRegistry,
}

impl Harness {
    /// Starts a builder; see [`HarnessBuilder::new`].
    pub fn builder(session: Session, model: impl Into<String>) -> HarnessBuilder {
        HarnessBuilder::new(session, model)
    }

    /// The shared session (lock it briefly; never across an await).
    pub fn session(&self) -> &SharedSession {
        &self.session
    }

    /// The model the next turn should use (changes after a promotion).
    pub fn model(&self) -> String {
        self.model
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The catalog entry the session is measured with.
    pub fn entry(&self) -> &ModelEntry {
        &self.entry
    }

    /// How the catalog found [`entry`](Self::entry): [`Match::Default`]
    /// when the model is unknown and the figures are guessed.
    pub fn model_match(&self) -> &Match {
        &self.matched
    }

    /// The figures this session works under.
    pub fn limits(&self) -> Limits {
        self.maintenance.limits()
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The methods this harness can name, and how their checkpoints
    /// expand into a request.
    pub fn registry(&self) -> &MethodRegistry {
        &self.registry
    }

    /// The state machine, for manual passes and its state.
    pub fn maintenance(&self) -> &Maintenance {
        &self.maintenance
    }

    /// The figure every trigger acts on: `max(anchored, estimated)`.
    pub fn tokens(&self) -> u64 {
        self.counter.context_tokens(&lock_session(&self.session))
    }

    /// The meter's full measure (anchored, estimated, ratio).
    pub fn measure(&self) -> abridge_meter::Measure {
        self.counter.measure(&lock_session(&self.session))
    }

    /// Appends a user or tool message.
    ///
    /// # Errors
    /// [`HarnessError::Pairing`] when it would break the tool-pairing rule
    /// (a result whose call is not on the surface, a reused call id);
    /// otherwise when the session rejects or cannot write it. Nothing is
    /// written on an error.
    pub fn append(&self, message: Message) -> Result<Seq, HarnessError> {
        let seq = append_paired(&self.session, message)?;
        self.note_activity(Instant::now());
        Ok(seq)
    }

    /// Appends the model's reply with its usage (which anchors the meter).
    ///
    /// # Errors
    /// As [`append`](Self::append): a reply reusing a call id is refused.
    pub fn record(&self, response: &Response) -> Result<Seq, HarnessError> {
        let mut message = response.message.clone();
        message.meta.usage = Some(response.usage);
        let seq = append_paired(&self.session, message)?;
        self.note_activity(Instant::now());
        Ok(seq)
    }

    /// Exactly what the next call sends: the surface, with snapcompact
    /// frames drawn from their archives, a native compaction replayed to
    /// the provider that wrote it, thinking kept only where the model reads
    /// it, and every tool call paired (see [`build_request`](crate::build_request)).
    ///
    /// # Errors
    /// [`HarnessError::Frames`] when a checkpoint's archive cannot be read
    /// back.
    pub fn request(&self) -> Result<Vec<Message>, HarnessError> {
        build_request_with(
            &lock_session(&self.session),
            &self.request_target(),
            self.registry.expansions(),
        )
    }

    /// Who [`request`](Self::request) is shaped for: the client's provider,
    /// dialect and account (none without a client), the model and its
    /// rule for earlier thinking.
    pub fn request_target(&self) -> RequestTarget {
        match &self.client {
            Some(client) => RequestTarget::for_client(client.as_ref(), &self.model(), &self.entry),
            None => RequestTarget {
                prior_thinking: abridge_meter::PriorThinking::for_model(&self.entry),
                ..RequestTarget::default()
            },
        }
    }

    /// The next turn's request for the current model, for a host that sets
    /// its own tools, output cap or temperature before sending it.
    ///
    /// # Errors
    /// As [`request`](Self::request).
    pub fn turn_request(&self) -> Result<Request, HarnessError> {
        Ok(Request::new(self.model(), self.request()?, Purpose::Turn))
    }

    /// Sends [`request`](Self::request) through the client as a turn.
    ///
    /// # Errors
    /// [`HarnessError::NoClient`], or the model call's error (hand it to
    /// [`on_error`](Self::on_error)).
    pub async fn complete(
        &self,
        tools: Vec<abridge_llm::ToolSpec>,
    ) -> Result<Response, HarnessError> {
        let client = self.client.clone().ok_or(HarnessError::NoClient)?;
        let mut request = self.turn_request()?;
        request.tools = tools;
        Ok(client.complete(&request).await?)
    }

    /// After a good turn: a threshold pass when the context is above the
    /// threshold, then the auto-continue message when one is set.
    ///
    /// # Errors
    /// Only when the session cannot be written.
    pub async fn after_turn(&self) -> Result<Pass, HarnessError> {
        self.prime_counts().await;
        let pass = match self.requested.take() {
            // The model asked with `compact_context`: a manual pass, with
            // its focus as the checkpoint's instructions.
            Some(requested) => {
                self.maintenance
                    .run_with(&self.session, Trigger::Manual, &[], requested.focus)
                    .await?
            }
            None => {
                self.maintenance
                    .run(&self.session, Trigger::Threshold)
                    .await?
            }
        };
        self.save_counts_after(&pass);
        if pass.status == PassStatus::Succeeded
            && let Some(text) = &self.settings.auto_continue
        {
            self.append(Message::user(text.clone()))?;
        }
        Ok(pass)
    }

    /// Between tool calls inside a turn, before the next request. Does
    /// nothing when `mid_turn` is off in the settings.
    ///
    /// # Errors
    /// Only when the session cannot be written.
    pub async fn mid_turn(&self) -> Result<Pass, HarnessError> {
        if !self.settings.mid_turn {
            return Ok(self.not_run(Trigger::MidTurn));
        }
        self.prime_counts().await;
        Ok(self
            .maintenance
            .run(&self.session, Trigger::MidTurn)
            .await?)
    }

    /// The pass a trigger that the settings turn off reports.
    pub(crate) fn not_run(&self, trigger: Trigger) -> Pass {
        Pass::idle(
            trigger,
            PassStatus::Disabled,
            self.tokens(),
            self.maintenance.goal(trigger),
        )
    }

    /// Asks the count endpoint, when there is one, about the surface's new
    /// messages, so the pass that follows measures them with the
    /// provider's figures. Failures are logged and left to the estimate.
    /// Returns what it did (`None` without an endpoint).
    pub async fn prime_counts(&self) -> Option<PrimeReport> {
        let primer = self.primer.as_ref()?;
        let messages = lock_session(&self.session).surface_messages();
        Some(primer.prime(&self.model(), &messages).await)
    }

    /// A manual pass: the named methods (empty: the configured order) with
    /// optional focus instructions. Resets the breaker.
    ///
    /// # Errors
    /// Only when the session cannot be written.
    pub async fn compact(
        &self,
        methods: &[String],
        instructions: Option<String>,
    ) -> Result<Pass, HarnessError> {
        let pass = self
            .maintenance
            .run_with(&self.session, Trigger::Manual, methods, instructions)
            .await?;
        self.save_counts_after(&pass);
        Ok(pass)
    }

    /// The tools this harness answers, to offer the model beside the host's
    /// own: `recall` when the `recall` setting is on (the default), and
    /// `compact_context` when `model_compaction` is.
    pub fn tools(&self) -> Vec<abridge_llm::ToolSpec> {
        let mut tools = Vec::new();
        if self.settings.recall {
            tools.push(crate::recall::tool_spec());
        }
        if self.settings.model_compaction {
            tools.push(crate::model_compaction::tool_spec());
        }
        tools
    }

    /// Runs a call to one of [`tools`](Self::tools) and returns its result
    /// text, to append as the call's tool result; `None` when `name` is not
    /// one of them (the host's own tool). A bad call answers with text
    /// saying what was wrong, never an error, so the turn goes on.
    pub fn call_tool(&self, name: &str, arguments: &serde_json::Value) -> Option<String> {
        if self.settings.model_compaction && name == crate::model_compaction::TOOL_NAME {
            return Some(self.requested.call(arguments));
        }
        if !self.settings.recall || name != crate::recall::TOOL_NAME {
            return None;
        }
        let session = lock_session(&self.session);
        let mut slot = self
            .recall
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let recall = slot.get_or_insert_with(|| {
            Recall::open(&session, self.artifacts.clone())
                .with_page_tokens(self.settings.recall_page_tokens)
                .with_redactor(self.recall_redactor.clone())
        });
        Some(recall.call(&session, arguments))
    }

    /// Writes buffered events to the store.
    ///
    /// # Errors
    /// When the store cannot write.
    pub fn sync(&self) -> Result<(), HarnessError> {
        Ok(lock_session(&self.session).sync()?)
    }
}

/// Appends `message` after checking, under the same lock, that it keeps
/// every tool call paired: the library refuses what `abridge check` would
/// refuse, instead of writing it durably for `request()` to drop.
fn append_paired(session: &SharedSession, message: Message) -> Result<Seq, HarnessError> {
    let mut session = lock_session(session);
    if let Err((_, fault)) =
        abridge_compact::check::check_appended_pairing(&session, std::slice::from_ref(&message))
    {
        return Err(HarnessError::Pairing {
            position: session.surface().seqs().len(),
            fault,
        });
    }
    Ok(session.append_message(message)?)
}
