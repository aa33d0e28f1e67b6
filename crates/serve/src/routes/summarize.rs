//! `POST /v1/summarize`: the summary-endpoint shape the `remote` method
//! speaks (`--remote endpoint`), answered by this service's summarizer
//! model, so one abridge can write another's checkpoints.
//!
//! In: `{"system_prompt", "prompt", "max_tokens"}`. Out: `{"summary",
//! "model", "usage": {"input_tokens", "output_tokens"}}`.

use abridge_compact::host::redact_with;
use abridge_llm::Message;
use abridge_llm::Purpose;
use abridge_llm::Request;
use abridge_llm::RetryingClient;
use axum::Extension;
use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use serde::Serialize;

use crate::auth::Tenant;
use crate::error::ApiError;
use crate::state::AppState;

/// The request body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SummaryCall {
    #[serde(default)]
    system_prompt: String,
    prompt: String,
    #[serde(default)]
    max_tokens: Option<u32>,
}

/// Tokens the summary cost.
#[derive(Debug, Serialize)]
pub(super) struct SummaryUsage {
    input_tokens: u64,
    output_tokens: u64,
}

/// The answer.
#[derive(Debug, Serialize)]
pub(super) struct SummaryAnswer {
    summary: String,
    model: String,
    usage: SummaryUsage,
}

/// Summarizes with the service's summarizer model (`--llm`).
pub(super) async fn summarize(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Json(call): Json<SummaryCall>,
) -> Result<Json<SummaryAnswer>, ApiError> {
    let Some(model) = state.sources.summarizer.clone() else {
        return Err(ApiError::Unavailable(
            "this service has no summarizer model; start it with --llm URL --llm-model NAME"
                .to_string(),
        ));
    };
    // The prompt is a history leaving for a third party: redacted like
    // every request abridge sends on a session's behalf.
    let redact = |text: &str| redact_with(state.redactor.as_deref(), text).into_owned();
    let mut messages = Vec::new();
    if !call.system_prompt.is_empty() {
        messages.push(Message::system(redact(&call.system_prompt)));
    }
    messages.push(Message::user(redact(&call.prompt)));
    let mut request = Request::new(model.model.clone(), messages, Purpose::Compaction);
    request.max_output_tokens = call.max_tokens;
    tracing::info!(%tenant, model = %model.model, "summary requested");
    let client = RetryingClient::new(model.client.clone(), model.retry.clone());
    let answer = state
        .tasks
        .run(async move { abridge_llm::LlmClient::complete(&client, &request).await })
        .await?
        .map_err(ApiError::Upstream)?;
    Ok(Json(SummaryAnswer {
        summary: answer.message.plain_text(),
        model: answer.model,
        usage: SummaryUsage {
            input_tokens: answer.usage.input + answer.usage.cache_read + answer.usage.cache_write,
            output_tokens: answer.usage.output,
        },
    }))
}
