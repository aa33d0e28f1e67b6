//! What a session holds, read without changing it: the next request, the
//! context, its figures, recall and the HTML report. All but the figures
//! are built off the async workers and (but recall's page) streamed; the
//! report and recall, which read the whole log, are heavy reads that wait
//! for a turn (see [`crate::heavy`]).

use abridge::RequestTarget;
use abridge::build_request_with;
use abridge_compact::host::lock_session;
use abridge_llm::LlmClient;
use abridge_llm::LlmError;
use abridge_llm::Message;
use abridge_llm::Purpose;
use abridge_llm::Request;
use abridge_llm::SharedMessage;
use abridge_providers::AnthropicClient;
use abridge_providers::AnthropicOptions;
use abridge_providers::ChatOptions;
use abridge_providers::OpenAiChatClient;
use abridge_providers::OpenAiResponsesClient;
use abridge_providers::ProviderConfig;
use abridge_providers::ProviderKind;
use abridge_session::Seq;
use axum::Extension;
use axum::Json;
use axum::extract::Path;
use axum::extract::Query;
use axum::extract::State;
use axum::response::Response;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

use super::sessions::Figures;
use super::sessions::blocking;
use super::sessions::session;
use crate::auth::Tenant;
use crate::error::ApiError;
use crate::heavy::snapshot;
use crate::heavy::streamed;
use crate::state::AppState;

/// The query of `GET .../request`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RequestQuery {
    /// `openai-chat`, `openai-responses` or `anthropic`; absent: the
    /// messages in abridge's own form only.
    #[serde(default)]
    provider: Option<String>,
}

/// The answer of `GET .../request`.
#[derive(Debug, Serialize)]
pub(super) struct NextRequest {
    model: String,
    /// The provider the request is shaped for, if one was asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    provider: Option<String>,
    /// The messages to send, in abridge's form.
    messages: Vec<Message>,
    /// The provider's request body for them (no tools, no output cap:
    /// add the agent's own before sending).
    #[serde(skip_serializing_if = "Option::is_none")]
    body: Option<Value>,
}

/// `GET /v1/sessions/{id}/request?provider=...`: exactly what the next
/// model call should send. Built off the async workers from the surface
/// (under the session's lock: its cost is the window's, not the log's,
/// and agents call it every turn, so it takes no heavy-read turn), and
/// streamed.
pub(super) async fn request(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Path(id): Path<String>,
    Query(query): Query<RequestQuery>,
) -> Result<Response, ApiError> {
    let name = query.provider;
    let kind: Option<ProviderKind> = name
        .as_deref()
        .map(str::parse)
        .transpose()
        .map_err(ApiError::BadRequest)?;
    let live = session(&state, &tenant, &id).await?;
    let model = live.harness.model();
    let entry = live.harness.entry().clone();
    let plain_target = live.harness.request_target();
    let answer = blocking(move || {
        // Built from the surface under the session's lock (what the next
        // call sends is bounded by the window, not by the log); then the
        // lock is let go and the answer written out.
        let session = lock_session(live.harness.session());
        let Some(kind) = kind else {
            let messages = build_request_with(
                &session,
                &plain_target,
                live.harness.registry().expansions(),
            )?;
            return Ok(NextRequest {
                model,
                provider: None,
                messages,
                body: None,
            });
        };
        let encoder = Encoder::new(kind).map_err(|e| ApiError::Internal(e.to_string()))?;
        let client = encoder.client();
        let target = RequestTarget::for_client(client, &model, &entry);
        let messages = build_request_with(&session, &target, live.harness.registry().expansions())?;
        drop(session);
        let wire = Request::new(model.clone(), messages.clone(), Purpose::Turn);
        let body = encoder
            .body(&wire)
            .map_err(|e| ApiError::Rejected(e.to_string()))?;
        Ok(NextRequest {
            model,
            provider: name,
            messages,
            body: Some(body),
        })
    })
    .await?;
    Ok(json_streamed(answer))
}

/// `value` as a streamed JSON answer, written on the blocking pool.
fn json_streamed<T: Serialize + Send + 'static>(value: T) -> Response {
    streamed("application/json", (), move |out| {
        serde_json::to_writer(out, &value).map_err(|e| e.to_string())
    })
}

/// A provider client used only for its request encoder (it never sends).
enum Encoder {
    Chat(OpenAiChatClient),
    Responses(OpenAiResponsesClient),
    Anthropic(AnthropicClient),
}

impl Encoder {
    fn new(kind: ProviderKind) -> Result<Self, LlmError> {
        let config = ProviderConfig::default();
        Ok(match kind {
            ProviderKind::OpenAiChat => {
                Encoder::Chat(OpenAiChatClient::new(config, ChatOptions::openai())?)
            }
            ProviderKind::OpenAiResponses => Encoder::Responses(OpenAiResponsesClient::new(
                config,
                abridge_providers::ResponsesOptions::default(),
            )?),
            ProviderKind::Anthropic => {
                Encoder::Anthropic(AnthropicClient::new(config, AnthropicOptions::default())?)
            }
        })
    }

    fn client(&self) -> &dyn LlmClient {
        match self {
            Encoder::Chat(c) => c,
            Encoder::Responses(c) => c,
            Encoder::Anthropic(c) => c,
        }
    }

    fn body(&self, request: &Request) -> Result<Value, LlmError> {
        match self {
            Encoder::Chat(c) => c.build_body(request, false),
            Encoder::Responses(c) => c.build_body(request, false),
            Encoder::Anthropic(c) => c.build_body(request, false),
        }
    }
}

/// One message on the surface.
#[derive(Debug, Serialize)]
pub(super) struct Visible {
    seq: Seq,
    message: SharedMessage,
}

/// The answer of `GET .../context`.
#[derive(Debug, Serialize)]
pub(super) struct Context {
    #[serde(flatten)]
    figures: Figures,
    /// The surface: what the model sees, with the seq of each message.
    messages: Vec<Visible>,
}

/// `GET /v1/sessions/{id}/context`: the surface with seqs and figures.
/// The surface's messages are taken under the lock (shared, not copied),
/// then written out off the async workers, streamed; like `request`, its
/// cost is the window's, so it takes no heavy-read turn.
pub(super) async fn context(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let live = session(&state, &tenant, &id).await?;
    let context = blocking(move || {
        let messages = {
            let session = lock_session(live.harness.session());
            session
                .surface()
                .seqs()
                .iter()
                .filter_map(|seq| {
                    Some(Visible {
                        seq: *seq,
                        message: session.message(*seq)?.clone(),
                    })
                })
                .collect()
        };
        Ok(Context {
            figures: Figures::of(&live),
            messages,
        })
    })
    .await?;
    Ok(json_streamed(context))
}

/// The answer of `GET .../stats`.
#[derive(Debug, Serialize)]
pub(super) struct Stats {
    #[serde(flatten)]
    figures: Figures,
    /// The meter's full measure.
    measure: abridge_meter::Measure,
    /// Events in the log.
    events: usize,
    /// Messages on the surface.
    surface_messages: usize,
    /// Grows on every compaction that changed the surface.
    generation: u64,
    /// Failed automatic passes in a row.
    consecutive_failures: u32,
    /// True when automatic maintenance stopped after repeated failures.
    breaker_open: bool,
    /// The method order, as built.
    methods: Vec<String>,
}

/// `GET /v1/sessions/{id}/stats`.
pub(super) async fn stats(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Path(id): Path<String>,
) -> Result<Json<Stats>, ApiError> {
    let live = session(&state, &tenant, &id).await?;
    let (events, surface_messages, generation) = {
        let session = lock_session(live.harness.session());
        (
            session.len(),
            session.surface().seqs().len(),
            session.surface().generation(),
        )
    };
    let maintenance = live.harness.maintenance();
    Ok(Json(Stats {
        figures: Figures::of(&live),
        measure: live.harness.measure(),
        events,
        surface_messages,
        generation,
        consecutive_failures: maintenance.consecutive_failures(),
        breaker_open: maintenance.breaker_open(),
        methods: maintenance
            .methods()
            .iter()
            .map(|m| m.name().to_string())
            .collect(),
    }))
}

/// The answer of `POST .../recall`.
#[derive(Debug, Serialize)]
pub(super) struct Recalled {
    /// What the `recall` tool answers, as the model would read it.
    text: String,
}

/// `POST /v1/sessions/{id}/recall`: the `recall` tool's arguments (`ref`,
/// `query`, `toc`, `page`) in, its answer out. Arguments that do not fit
/// the tool's schema are a 400, not an answer for a model to read. A
/// heavy read: run off the async workers (the search holds the session's
/// lock, whose index it keeps up to date).
pub(super) async fn recall(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Path(id): Path<String>,
    Json(arguments): Json<Value>,
) -> Result<Json<Recalled>, ApiError> {
    check_recall(&arguments)?;
    let live = session(&state, &tenant, &id).await?;
    let _turn = state.heavy.turn(&tenant).await?;
    let text = blocking(move || {
        live.harness
            .call_tool(abridge::recall::TOOL_NAME, &arguments)
            .ok_or_else(|| {
                ApiError::Unavailable(
                    "recall is off in this session's settings (`recall = false`)".to_string(),
                )
            })
    })
    .await?;
    Ok(Json(Recalled { text }))
}

/// Refuses recall arguments that do not fit the tool's schema: the model
/// would be told what was wrong, a client gets a 400.
fn check_recall(arguments: &Value) -> Result<(), ApiError> {
    use abridge::recall::RecallArgs;
    use abridge::recall::RecallMiss;
    let args = RecallArgs::parse(arguments)
        .map_err(|miss| ApiError::BadRequest(format!("recall arguments: {miss}")))?;
    args.call()
        .map_err(|miss| ApiError::BadRequest(format!("recall arguments: {miss}")))?;
    if args.page == Some(0) {
        let miss = RecallMiss::BadArguments("`page` counts from 1".to_string());
        return Err(ApiError::BadRequest(format!("recall arguments: {miss}")));
    }
    Ok(())
}

/// `GET /v1/sessions/{id}/report`: the HTML page `abridge report` writes.
/// A heavy read: drawn from a copy of the session off the async workers,
/// and streamed as it is drawn.
pub(super) async fn report(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let live = session(&state, &tenant, &id).await?;
    let turn = state.heavy.turn(&tenant).await?;
    let model = live.harness.model();
    let entry = live.harness.entry().clone();
    let label = format!("{tenant}/{id}");
    let redactor = live
        .harness
        .settings()
        .redactor()
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let copy = blocking(move || snapshot(&live)).await?;
    Ok(streamed("text/html; charset=utf-8", turn, move |out| {
        abridge_views::write(
            &copy,
            &label,
            &model,
            &entry,
            redactor.as_deref(),
            abridge_views::DEFAULT_MAX_REPORT_BYTES,
            out,
        )
        .map(drop)
        .map_err(|e| e.to_string())
    }))
}
