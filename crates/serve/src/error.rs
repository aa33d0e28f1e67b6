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
    /// A `postgres://` URL whose database cannot be reached or migrated.
    #[error("--store {url}: {message}")]
    Postgres {
        /// The URL with any password removed.
        url: String,
        /// What went wrong.
        message: String,
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
    /// 409: another worker appended to the session first, so nothing of
    /// this write landed. The worker has caught up; read the session again
    /// and resend what still makes sense (an append is not retried for the
    /// client: it cannot know the batch is still wanted).
    #[error(
        "another worker wrote to this session first (the write started at seq {expected}, the log is at {found}); nothing of it was written: read the session again and resend"
    )]
    StaleWrite {
        /// The seq the refused write started at.
        expected: u64,
        /// The log's next seq when it was refused.
        found: u64,
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
            ApiError::Conflict { .. } | ApiError::StaleWrite { .. } => StatusCode::CONFLICT,
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
            ApiError::StaleWrite { .. } => "stale_write",
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
        let mut body = json!({"error": {"code": self.code(), "message": self.to_string()}});
        if let ApiError::StaleWrite { expected, found } = self {
            body["error"]["expected_seq"] = json!(expected);
            body["error"]["log_seq"] = json!(found);
        }
        (self.status(), Json(body)).into_response()
    }
}

impl From<abridge::HarnessError> for ApiError {
    fn from(error: abridge::HarnessError) -> Self {
        match error {
            abridge::HarnessError::Session(e) => e.into(),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

impl From<abridge_session::SessionError> for ApiError {
    fn from(error: abridge_session::SessionError) -> Self {
        if let abridge_session::SessionError::Store(abridge_session::StoreError::Conflict {
            expected,
            found,
            ..
        }) = error
        {
            return ApiError::StaleWrite { expected, found };
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_lost_append_race_is_a_409_naming_both_seqs() {
        let lost = abridge_session::SessionError::Store(abridge_session::StoreError::Conflict {
            location: "db/team-a/s".to_string(),
            expected: 4,
            found: 6,
        });
        let response = ApiError::from(lost).into_response();
        assert_eq!(response.status(), StatusCode::CONFLICT);
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        let body: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(body["error"]["code"], "stale_write", "{body}");
        assert_eq!(body["error"]["expected_seq"], 4, "{body}");
        assert_eq!(body["error"]["log_seq"], 6, "{body}");
    }
}
