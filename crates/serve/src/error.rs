//! The service's errors: what stops it starting, and what a request gets
//! back (each with its HTTP status and a stable `code`).

use axum::Json;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::response::Response;
use serde_json::json;

/// A tokens file or variable that cannot be used. Messages name the place,
/// never a token's value.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TokensError {
    /// The file could not be read.
    #[error("cannot read the tokens file {path}: {message}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        message: String,
    },
    /// A line is not two words.
    #[error("{origin} line {line}: expected `TOKEN TENANT` (two words)")]
    BadLine {
        /// The file.
        origin: String,
        /// 1-based line number.
        line: usize,
    },
    /// The JSON form does not parse as an object of strings.
    #[error("{origin}: expected a JSON object mapping each token to its tenant: {message}")]
    Json {
        /// The file.
        origin: String,
        /// The parser's complaint.
        message: String,
    },
    /// A token is too short or holds spaces or control characters.
    #[error(
        "{place}: a token must be at least {} printable characters without spaces",
        crate::auth::MIN_TOKEN_LEN
    )]
    Short {
        /// Where it is (file and line, or the variable).
        place: String,
    },
    /// The same token twice.
    #[error("{place}: this token is listed twice")]
    Duplicate {
        /// Where the second one is.
        place: String,
    },
    /// A tenant name that is not 1-64 of `A-Za-z0-9-_`.
    #[error("tenant {tenant:?}: use 1 to 64 ASCII letters, digits, `-` or `_`")]
    BadTenant {
        /// The name given.
        tenant: String,
    },
    /// Nothing to accept: every request would be refused.
    #[error("{origin}: no tokens; add a `TOKEN TENANT` line")]
    Empty {
        /// The file or variable.
        origin: String,
    },
}

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
