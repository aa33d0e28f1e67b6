//! The tools a session offers its model (`recall`, `compact_context`), so
//! an agent in any language offers exactly what the Harness answers.

use abridge::model_compaction;
use abridge_llm::ToolSpec;
use axum::Extension;
use axum::Json;
use axum::extract::Path;
use axum::extract::State;
use serde::Serialize;
use serde_json::Value;

use super::sessions::session;
use crate::auth::Tenant;
use crate::error::ApiError;
use crate::state::AppState;

/// The answer of `GET .../tools`.
#[derive(Debug, Serialize)]
pub(super) struct Tools {
    /// Each tool's name, description and JSON Schema, to offer the model
    /// beside the agent's own; a call to one goes to its route
    /// (`recall`, `compact-context`).
    tools: Vec<ToolSpec>,
}

/// `GET /v1/sessions/{id}/tools`: what the session's settings offer.
pub(super) async fn list(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Path(id): Path<String>,
) -> Result<Json<Tools>, ApiError> {
    let live = session(&state, &tenant, &id).await?;
    Ok(Json(Tools {
        tools: live.harness.tools(),
    }))
}

/// The answer of `POST .../compact-context`.
#[derive(Debug, Serialize)]
pub(super) struct Requested {
    /// What the tool answers, to append as the call's result.
    text: String,
}

/// `POST /v1/sessions/{id}/compact-context`: the model's `compact_context`
/// call (`{"focus"?}`). The compaction runs at the next `after-turn`, as a
/// manual pass with the focus as its instructions.
pub(super) async fn compact_context(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Path(id): Path<String>,
    Json(arguments): Json<Value>,
) -> Result<Json<Requested>, ApiError> {
    let live = session(&state, &tenant, &id).await?;
    let text = live
        .harness
        .call_tool(model_compaction::TOOL_NAME, &arguments)
        .ok_or_else(|| {
            ApiError::Unavailable(
                "compact_context is off in this session's settings (`model_compaction = false`)"
                    .to_string(),
            )
        })?;
    Ok(Json(Requested { text }))
}
