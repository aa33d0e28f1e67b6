//! What every request passes through besides its handler: the access log,
//! one error shape for every refusal, the bearer token, and the body read
//! under its size and time limits.

use std::time::Instant;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::extract::MatchedPath;
use axum::extract::Request;
use axum::extract::State;
use axum::http::Method;
use axum::http::StatusCode;
use axum::http::Uri;
use axum::http::header::CONTENT_LENGTH;
use axum::http::header::CONTENT_TYPE;
use axum::middleware::Next;
use axum::response::IntoResponse;
use axum::response::Response;
use futures::StreamExt;

use crate::auth::Tenant;
use crate::error::ApiError;
use crate::error::ErrorCode;
use crate::limits::ServiceLimits;
use crate::state::AppState;

/// One line per request, at `info` (`warn` for 401, so guessing tokens
/// shows; `error` for 5xx): who (peer address and tenant), what (method
/// and route, the route's pattern when one matched), the status, the
/// error code if any, and the time taken. Never a header, so never a
/// token.
pub(crate) async fn access_log(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request.extensions().get::<MatchedPath>().map_or_else(
        || request.uri().path().to_string(),
        |m| m.as_str().to_string(),
    );
    let peer = request
        .extensions()
        .get::<ConnectInfo<std::net::SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.to_string())
        .unwrap_or_default();
    let response = next.run(request).await;
    let status = response.status().as_u16();
    let tenant = response
        .extensions()
        .get::<Tenant>()
        .map(Tenant::to_string)
        .unwrap_or_default();
    let code = response.extensions().get::<ErrorCode>().map(|c| c.0);
    let ms = format!("{:.1}", started.elapsed().as_secs_f64() * 1000.0);
    match (status, code) {
        (401, Some(code)) => {
            tracing::warn!(target: "abridge_serve::access", %peer, %method, %route, status, code, %ms, "refused");
        }
        (500.., Some(code)) => {
            tracing::error!(target: "abridge_serve::access", %peer, %tenant, %method, %route, status, code, %ms, "failed");
        }
        (_, Some(code)) => {
            tracing::info!(target: "abridge_serve::access", %peer, %tenant, %method, %route, status, code, %ms, "refused");
        }
        (_, None) => {
            tracing::info!(target: "abridge_serve::access", %peer, %tenant, %method, %route, status, %ms, "answered");
        }
    }
    response
}

/// Gives every refusal the service's error body. The framework refuses
/// some requests before a handler runs (a body that is not JSON or not of
/// the route's shape, a wrong content type, a query that does not parse)
/// with plain text; those answers are rewritten here as
/// `{"error": {"code", "message"}}`, the message the framework's text.
/// A body of the wrong shape is a 400 like any other malformed request.
pub(crate) async fn error_shape(
    State(shared): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) || is_json(&response) {
        return response;
    }
    let bytes = axum::body::to_bytes(response.into_body(), 64 * 1024)
        .await
        .unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes).trim().to_string();
    let error = match status {
        StatusCode::PAYLOAD_TOO_LARGE => ApiError::TooLarge {
            limit: shared.limits.body_bytes,
        },
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::UnsupportedMediaType,
        s if s.is_server_error() => ApiError::Internal(text),
        _ if text.is_empty() => ApiError::BadRequest(format!("the request was refused ({status})")),
        _ => ApiError::BadRequest(text),
    };
    error.into_response()
}

fn is_json(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

/// Accepts the request when its bearer token is known and hands its
/// tenant to the handler (and to the access log, on the response).
/// Never logs the header.
pub(crate) async fn authenticate(
    State(shared): State<AppState>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let tenant = shared
        .tokens
        .tenant_of(request.headers())
        .ok_or(ApiError::Unauthorized)?;
    request.extensions_mut().insert(tenant.clone());
    let mut response = next.run(request).await;
    response.extensions_mut().insert(tenant);
    Ok(response)
}

/// Reads the whole body before the handler runs, so its two limits
/// answer in the service's shape: past `body_bytes` a 413 (at once when
/// the declared length says so), past `body_timeout` a 408. Runs after
/// authentication: an unknown client's body is never read.
pub(crate) async fn read_body(
    State(shared): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let request = read_limited(request, &shared.limits).await?;
    Ok(next.run(request).await)
}

/// The request with its whole body read under `limits`: past
/// `body_bytes` a [`ApiError::TooLarge`] (at once when the declared
/// length says so), past `body_timeout` a [`ApiError::BodyTimeout`]. The
/// one body reader of the HTTP faces: `abridge serve` runs it on every
/// route, `abridge proxy` on every request it forwards.
///
/// # Errors
/// Those two, or [`ApiError::BadRequest`] when the body cannot be read.
pub async fn read_limited(request: Request, limits: &ServiceLimits) -> Result<Request, ApiError> {
    let limit = limits.body_bytes;
    let declared = request
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(ApiError::TooLarge { limit });
    }
    let (parts, body) = request.into_parts();
    let read = async {
        let mut stream = body.into_data_stream();
        let mut bytes = Vec::with_capacity(declared.unwrap_or(0).min(limit as u64) as usize);
        while let Some(chunk) = stream.next().await {
            let chunk = chunk
                .map_err(|e| ApiError::BadRequest(format!("the body could not be read: {e}")))?;
            if bytes.len() + chunk.len() > limit {
                return Err(ApiError::TooLarge { limit });
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    };
    let bytes = tokio::time::timeout(limits.body_timeout, read)
        .await
        .map_err(|_| ApiError::BodyTimeout(limits.body_timeout))??;
    Ok(Request::from_parts(parts, Body::from(bytes)))
}

/// What an unknown path answers.
pub(crate) async fn no_route(uri: Uri) -> ApiError {
    ApiError::NoRoute {
        path: uri.path().to_string(),
    }
}

/// What a known path answers to a method it does not serve.
pub(crate) async fn wrong_method(method: Method, uri: Uri) -> ApiError {
    ApiError::MethodNotAllowed {
        method: method.to_string(),
        path: uri.path().to_string(),
    }
}
