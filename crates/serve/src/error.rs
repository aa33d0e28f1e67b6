//! The service's errors: what stops it starting, and what a request gets
//! back (each with its HTTP status and a stable `code`).

use axum::Json;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::response::Response;
use serde_json::json;

use crate::auth::TokensError;

/// A `--store` value that cannot be served from.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreChoiceError {
    /// A `postgres://` URL: the PostgreSQL store is not part of this build.
    #[error(
        "--store {url}: PostgreSQL support is not built into this abridge yet; use --store DIR for JSONL files"
    )]
    PostgresNotBuilt {
        /// The URL with any password removed.
        url: String,
    },
    /// The directory cannot be created or used.
    #[error("--store {path}: {message}")]
    Directory {
        /// The directory.
        path: String,
        /// The I/O error.
        message: String,
    },
}

/// What stops the service from starting or running.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {message}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// The I/O error.
        message: String,
    },
    /// The server stopped with an I/O error.
    #[error("the server stopped: {0}")]
    Io(#[from] std::io::Error),
    /// The tokens.
    #[error(transparent)]
    Tokens(#[from] TokensError),
    /// The store.
    #[error(transparent)]
    Store(#[from] StoreChoiceError),
}

/// A request's failure, sent as `{"error": {"code", "message"}}` with its
/// status. Codes are stable; messages are for people.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ApiError {
    /// 401: no `Authorization: Bearer` header, or an unknown token.
    #[error("missing or unknown bearer token")]
    Unauthorized,
    /// 404: no such session for this tenant. Another tenant's session
    /// answers the same, so ids cannot be probed.
    #[error("no session {id:?}")]
    NotFound {
        /// The id asked for.
        id: String,
    },
    /// 409: a session with this id exists already.
    #[error("session {id:?} already exists")]
    Conflict {
        /// The id.
        id: String,
    },
    /// 400: the request is malformed.
    #[error("{0}")]
    BadRequest(String),
    /// 422: the session refused the change (for example a tool result
    /// without its call).
    #[error("{0}")]
    Rejected(String),
    /// 503: the service is shutting down or lacks what the call needs.
    #[error("{0}")]
    Unavailable(String),
    /// 502: the model behind the summarizer endpoint failed.
    #[error("{0}")]
    Upstream(String),
    /// 500: the store or something else on our side failed.
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::NotFound { .. } => StatusCode::NOT_FOUND,
            ApiError::Conflict { .. } => StatusCode::CONFLICT,
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Rejected(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Upstream(_) => StatusCode::BAD_GATEWAY,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable code in the body.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Unauthorized => "unauthorized",
            ApiError::NotFound { .. } => "not_found",
            ApiError::Conflict { .. } => "conflict",
            ApiError::BadRequest(_) => "bad_request",
            ApiError::Rejected(_) => "rejected",
            ApiError::Unavailable(_) => "unavailable",
            ApiError::Upstream(_) => "upstream",
            ApiError::Internal(_) => "internal",
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if self.status().is_server_error() {
            tracing::warn!(code = self.code(), error = %self, "request failed");
        }
        let body = json!({"error": {"code": self.code(), "message": self.to_string()}});
        (self.status(), Json(body)).into_response()
    }
}

impl From<abridge::HarnessError> for ApiError {
    fn from(error: abridge::HarnessError) -> Self {
        match error {
            abridge::HarnessError::Session(e) if !is_store_failure(&e) => {
                ApiError::Rejected(e.to_string())
            }
            other => ApiError::Internal(other.to_string()),
        }
    }
}

impl From<abridge_session::SessionError> for ApiError {
    fn from(error: abridge_session::SessionError) -> Self {
        if is_store_failure(&error) {
            ApiError::Internal(error.to_string())
        } else {
            ApiError::Rejected(error.to_string())
        }
    }
}

/// True for a failure of the store under the session (as opposed to an
/// event the session refused).
fn is_store_failure(error: &abridge_session::SessionError) -> bool {
    matches!(error, abridge_session::SessionError::Store(_))
}
