//! Creating, listing and appending to sessions.

use std::sync::Arc;

use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_llm::Message;
use abridge_llm::Role;
use abridge_llm::Usage;
use abridge_session::Seq;
use axum::Extension;
use axum::Json;
use axum::extract::Path;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde::Serialize;

use crate::auth::Tenant;
use crate::error::ApiError;
use crate::extract::Strict;
use crate::sessions::Live;
use crate::sessions::SessionSpec;
use crate::state::AppState;

/// The caller's session `id`, opened or caught up with the store on the
/// blocking pool (see [`blocking`]).
pub(super) async fn session(
    state: &AppState,
    tenant: &Tenant,
    id: &str,
) -> Result<Arc<Live>, ApiError> {
    let (state, tenant, id) = (state.clone(), tenant.clone(), id.to_string());
    blocking(move || state.registry.get(&tenant, &id)).await
}

/// Runs store work (a file write and its fsync, a PostgreSQL round trip,
/// reading a whole session on first use) on tokio's blocking pool. The
/// stores are synchronous; run on a worker thread, that wait would hold
/// up every other request and event stream scheduled there. What the
/// work logs stays in the request's span.
///
/// # Errors
/// `work`'s, or [`ApiError::Internal`] when it panicked.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    // The work logs as part of the request: under its span, to the
    // subscriber the request's thread writes to.
    let span = tracing::Span::current();
    let dispatch = tracing::dispatcher::get_default(Clone::clone);
    tokio::task::spawn_blocking(move || {
        tracing::dispatcher::with_default(&dispatch, || span.in_scope(work))
    })
    .await
    .map_err(|e| ApiError::Internal(format!("store work failed: {e}")))?
}

/// A session's figures, answered by create and append.
#[derive(Debug, Serialize)]
pub(super) struct Figures {
    id: String,
    model: String,
    limits: abridge::Limits,
    /// The figure compaction acts on now.
    tokens: u64,
    /// True when the next `after-turn` will compact.
    over_threshold: bool,
}

impl Figures {
    pub(super) fn of(live: &Live) -> Self {
        let limits = live.harness.limits();
        let tokens = live.harness.tokens();
        Figures {
            id: live.id.clone(),
            model: live.harness.model(),
            limits,
            tokens,
            over_threshold: tokens > limits.threshold,
        }
    }
}

/// `POST /v1/sessions`.
pub(super) async fn create(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Json(spec): Json<SessionSpec>,
) -> Result<(StatusCode, Json<Figures>), ApiError> {
    let live = blocking(move || state.registry.create(&tenant, spec)).await?;
    Ok((StatusCode::CREATED, Json(Figures::of(&live))))
}

/// The body of `GET /v1/sessions`.
#[derive(Debug, Serialize)]
pub(super) struct Listing {
    sessions: Vec<String>,
}

/// `GET /v1/sessions`: the caller's sessions only.
pub(super) async fn list(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
) -> Result<Json<Listing>, ApiError> {
    let sessions = blocking(move || state.registry.list(&tenant)).await?;
    Ok(Json(Listing { sessions }))
}

/// The body of `POST .../messages`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Append {
    /// Messages in abridge's wire form, appended in order.
    messages: Vec<Message>,
    /// The provider's usage for the turn that wrote the last message,
    /// which must then be the assistant's (it anchors the meter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    usage: Option<Usage>,
}

/// The answer of `POST .../messages`.
#[derive(Debug, Serialize)]
pub(super) struct Appended {
    /// The seqs the messages got, in order.
    seqs: Vec<Seq>,
    #[serde(flatten)]
    figures: Figures,
}

/// `POST /v1/sessions/{id}/messages`: all of the batch or none of it, and
/// durable when answered. Refused whole (422, naming the message) when a
/// message breaks the vocabulary's rules, names a blob, or breaks the
/// tool pairing after what the session holds; 403 past a byte quota.
pub(super) async fn append(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Path(id): Path<String>,
    Strict(body): Strict<Append>,
) -> Result<Json<Appended>, ApiError> {
    let mut messages = body.messages;
    if messages.is_empty() {
        return Err(ApiError::BadRequest(
            "`messages` is empty; send at least one".to_string(),
        ));
    }
    for (index, message) in messages.iter().enumerate() {
        check_shape(index, message)?;
        check_images(index, &message.content, "content")?;
        // The session refuses it too; here the answer names the JSON path.
        abridge_llm::check_image_pixels(message, abridge_llm::DEFAULT_MAX_IMAGE_PIXELS)
            .map_err(|fault| ApiError::Rejected(format!("messages[{index}].{fault}")))?;
    }
    if let Some(usage) = body.usage {
        let last = messages.last_mut().filter(|m| m.role == Role::Assistant);
        let Some(last) = last else {
            return Err(ApiError::BadRequest(
                "`usage` belongs to an assistant reply: make the last message the assistant's"
                    .to_string(),
            ));
        };
        last.meta.usage = Some(usage);
    }
    // What the quotas count: the messages as the log will hold them.
    let bytes = messages
        .iter()
        .map(|m| serde_json::to_vec(m).map_or(0, |json| json.len() as u64))
        .sum();
    let live = session(&state, &tenant, &id).await?;
    let writer = Arc::clone(&live);
    let registry = Arc::clone(&state);
    let seqs = blocking(move || registry.registry.append(&writer, messages, bytes)).await?;
    live.harness.note_activity(std::time::Instant::now());
    Ok(Json(Appended {
        seqs,
        figures: Figures::of(&live),
    }))
}

/// A client sends an image's bytes (base64) or a URL; a blob reference
/// names a file or row of the server's own, which only the server writes
/// (issue 28: a client's reference was read as a path, or another
/// tenant's image).
fn check_images(index: usize, blocks: &[Block], path: &str) -> Result<(), ApiError> {
    for (at, block) in blocks.iter().enumerate() {
        match block {
            Block::Image {
                source: ImageSource::Blob { .. },
                ..
            } => {
                return Err(ApiError::Rejected(format!(
                    "messages[{index}].{path}[{at}]: an image is sent as its bytes (`base64`) or a `url`; `blob` references are the server's own; nothing of the batch was written"
                )));
            }
            Block::ToolResult { content, .. } => {
                check_images(index, content, &format!("{path}[{at}].content"))?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// The vocabulary's rule the log does not check itself: a tool message
/// answers exactly one call, and only a tool message carries a result.
fn check_shape(index: usize, message: &Message) -> Result<(), ApiError> {
    let results = message
        .content
        .iter()
        .filter(|b| matches!(b, abridge_llm::Block::ToolResult { .. }))
        .count();
    let fault = match (message.role, results) {
        (Role::Tool, 1) | (Role::System | Role::Developer | Role::User | Role::Assistant, 0) => {
            return Ok(());
        }
        (Role::Tool, n) => format!("a tool message carries exactly one tool result, not {n}"),
        (role, _) => format!("a {role} message cannot carry a tool result"),
    };
    Err(ApiError::Rejected(format!(
        "messages[{index}]: {fault}; nothing of the batch was written"
    )))
}
