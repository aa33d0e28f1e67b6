//! `GET /v1/sessions/{id}/compaction/events`: Maintenance's steps as
//! server-sent events, while the stream is open.
//!
//! The first event is `ready` (the subscription is live: passes started
//! from now on are seen). Then one event per [`MaintenanceEvent`], named
//! by its `event` field (`pass_started`, `attempt_started`,
//! `attempt_landed`, `attempt_failed`, `pass_ended`, ...) with the event's
//! JSON as data; `lagged` when a slow reader missed some (`{"missed": N}`);
//! `shutdown` as the last event when the service stops. A tenant may hold
//! `event_streams_per_tenant` streams open at once (429 past it).

use std::convert::Infallible;

use abridge::MaintenanceEvent;
use axum::Extension;
use axum::extract::Path;
use axum::extract::State;
use axum::response::sse::Event;
use axum::response::sse::KeepAlive;
use axum::response::sse::Sse;
use futures::Stream;
use serde_json::json;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::watch;

use super::sessions::session;
use crate::auth::Tenant;
use crate::error::ApiError;
use crate::state::AppState;
use crate::state::StreamSlot;

/// Where a stream is.
struct Cursor {
    events: broadcast::Receiver<MaintenanceEvent>,
    closing: watch::Receiver<bool>,
    started: bool,
    done: bool,
    /// Counts against the tenant's streams until the stream is dropped.
    _slot: StreamSlot,
}

/// The stream of a session's maintenance events.
pub(super) async fn stream(
    State(state): State<AppState>,
    Extension(tenant): Extension<Tenant>,
    Path(id): Path<String>,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let slot = state
        .streams
        .open(&tenant, state.limits.event_streams_per_tenant)?;
    let live = session(&state, &tenant, &id).await?;
    let cursor = Cursor {
        events: live.events.subscribe(),
        closing: state.closing.subscribe(),
        started: false,
        done: false,
        _slot: slot,
    };
    let stream = futures::stream::unfold(cursor, |mut cursor| async move {
        if cursor.done {
            return None;
        }
        if !cursor.started {
            cursor.started = true;
            return Some((Ok(named("ready", json!({}).to_string())), cursor));
        }
        let event = tokio::select! {
            received = cursor.events.recv() => match received {
                Ok(event) => maintenance(&event),
                Err(RecvError::Lagged(missed)) => named("lagged", json!({"missed": missed}).to_string()),
                Err(RecvError::Closed) => return None,
            },
            _ = wait_closing(&mut cursor.closing) => {
                cursor.done = true;
                named("shutdown", json!({}).to_string())
            }
        };
        Some((Ok(event), cursor))
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::default()))
}

/// Resolves once shutdown has begun.
async fn wait_closing(closing: &mut watch::Receiver<bool>) {
    if closing.wait_for(|closing| *closing).await.is_err() {
        std::future::pending::<()>().await;
    }
}

fn named(name: &str, data: String) -> Event {
    Event::default().event(name).data(data)
}

/// A maintenance event named by its `event` tag, its JSON as data.
fn maintenance(event: &MaintenanceEvent) -> Event {
    let value = serde_json::to_value(event).unwrap_or_else(|e| json!({"error": e.to_string()}));
    let name = value
        .get("event")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("maintenance")
        .to_string();
    named(&name, value.to_string())
}
