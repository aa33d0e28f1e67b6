//! Maintenance over HTTP: after a turn, inside a tool loop, when idle,
//! after a failed call, and manual compaction. Each pass runs as a tracked task (see [`crate::tasks`]).

use abridge::Pass;
use abridge::Recovery;
use abridge_llm::LlmError;
use axum::Extension;
use axum::Json;
use axum::extract::Path;
use axum::extract::State;
use serde::Deserialize;
use serde::Serialize;

use super::sessions::session;
use crate::auth::Tenant;
use crate::error::ApiError;
use crate::state::AppState;

/// `POST /v1/sessions/{id}/after-turn`: a threshold pass when the context
/// is over the threshold (the answer's `status` says `not_needed`
/// otherwise).
pub(super) async fn after_turn(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Path(id): Path<String>,
) -> Result<Json<Pass>, ApiError> {
    let live = session(&state, &tenant, &id).await?;
    let pass = state
        .tasks
        .run(async move { live.harness.after_turn().await })
        .await??;
    Ok(Json(pass))
}

/// `POST /v1/sessions/{id}/mid-turn`: between tool calls inside a turn,
/// before the agent's next request (`disabled` when the session's
/// settings turn `mid_turn` off).
pub(super) async fn mid_turn(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Path(id): Path<String>,
) -> Result<Json<Pass>, ApiError> {
    let live = session(&state, &tenant, &id).await?;
    let pass = state
        .tasks
        .run(async move { live.harness.mid_turn().await })
        .await??;
    Ok(Json(pass))
}

/// `POST /v1/sessions/{id}/idle`: the idle trigger's clock, on the
/// server's time. Call it from a timer as often as you like: it runs an
/// idle pass once the session has been quiet for the settings'
/// `idle_minutes` (once per quiet stretch), and otherwise answers
/// `not_needed` (`disabled` without `idle_minutes`).
pub(super) async fn idle(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Path(id): Path<String>,
) -> Result<Json<Pass>, ApiError> {
    let live = session(&state, &tenant, &id).await?;
    let now = std::time::Instant::now();
    let pass = state
        .tasks
        .run(async move { live.harness.tick(now).await })
        .await??;
    Ok(Json(pass))
}

/// What went wrong with the agent's model call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum CallFailure {
    /// The provider said the prompt is larger than the window.
    ContextOverflow,
    /// The reply stopped at the output limit (do not record it).
    OutputLength,
    /// Anything else: not something compaction fixes.
    Other,
}

/// The body of `POST .../on-error`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct OnError {
    error: CallFailure,
    /// What the provider said, kept in the log's reasons.
    #[serde(default)]
    message: Option<String>,
}

/// The answer of `POST .../on-error`.
#[derive(Debug, Serialize)]
#[serde(tag = "recovery", rename_all = "snake_case")]
pub(super) enum Recovered {
    /// Not a failure compaction can fix; handle it as usual.
    NotHandled,
    /// Retry the turn with this larger-window model.
    Promoted {
        /// The model.
        model: String,
    },
    /// A pass ran; retry the turn when it succeeded.
    Compacted {
        /// The pass.
        pass: Pass,
    },
}

impl From<Recovery> for Recovered {
    fn from(recovery: Recovery) -> Self {
        match recovery {
            Recovery::NotHandled => Recovered::NotHandled,
            Recovery::Promoted { model } => Recovered::Promoted { model },
            Recovery::Compacted(pass) => Recovered::Compacted { pass },
        }
    }
}

/// `POST /v1/sessions/{id}/on-error`: a context overflow or a length stop
/// hands control to Maintenance (promotion first, when configured).
pub(super) async fn on_error(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Path(id): Path<String>,
    Json(body): Json<OnError>,
) -> Result<Json<Recovered>, ApiError> {
    let live = session(&state, &tenant, &id).await?;
    let recovery = state
        .tasks
        .run(async move {
            match body.error {
                CallFailure::ContextOverflow => {
                    let error = LlmError::ContextOverflow {
                        provider: "client".to_string(),
                        message: body.message.unwrap_or_default(),
                    };
                    live.harness.on_error(&error).await
                }
                CallFailure::OutputLength => live.harness.on_length_stop().await,
                CallFailure::Other => Ok(Recovery::NotHandled),
            }
        })
        .await??;
    Ok(Json(recovery.into()))
}

/// The body of `POST .../compact`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Compact {
    /// Methods to try in turn; empty: the session's method order.
    #[serde(default)]
    methods: Vec<String>,
    /// What the checkpoint should focus on.
    #[serde(default)]
    instructions: Option<String>,
}

/// `POST /v1/sessions/{id}/compact`: a manual pass (resets the breaker).
pub(super) async fn compact(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Path(id): Path<String>,
    Json(body): Json<Compact>,
) -> Result<Json<Pass>, ApiError> {
    let live = session(&state, &tenant, &id).await?;
    live.harness
        .registry()
        .check_names(&body.methods)
        .map_err(|unknown| ApiError::BadRequest(unknown.to_string()))?;
    let pass = state
        .tasks
        .run(async move { live.harness.compact(&body.methods, body.instructions).await })
        .await??;
    Ok(Json(pass))
}
