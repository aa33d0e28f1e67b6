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
    /// A limit out of its bounds.
    #[error(transparent)]
    Limit(#[from] crate::limits::LimitError),
}

/// A request's failure, sent as `{"error": {"code", "message", ...}}` with
/// its status. Codes are stable; messages are for people. Every answer
/// the service gives that is not a success has this shape, the
/// framework's own refusals (a body that is not JSON, too large, of the
/// wrong type; an unknown route or method) included.
///
/// A 5xx never carries what failed inside the service (a file path, the
/// database's host or schema): its body holds an `error_id`, and the
/// detail goes to the log under that id.
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
    /// 404: no route has this path.
    #[error("no route {path:?}; the routes are listed at /openapi.json")]
    NoRoute {
        /// The path asked for.
        path: String,
    },
    /// 405: the path exists, the method does not.
    #[error("{method} is not served at {path:?}; the routes are listed at /openapi.json")]
    MethodNotAllowed {
        /// The method used.
        method: String,
        /// The path.
        path: String,
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
    /// 400: the request is malformed (not JSON, a field of the wrong type,
    /// an unknown field, a value out of bounds).
    #[error("{0}")]
    BadRequest(String),
    /// 408: the body did not arrive in time.
    #[error("the request body did not arrive within {} s", .0.as_secs())]
    BodyTimeout(std::time::Duration),
    /// 413: the body is larger than the service accepts.
    #[error("the request body is over the limit of {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// 415: a body that is not declared as JSON.
    #[error("send the body as JSON with `Content-Type: application/json`")]
    UnsupportedMediaType,
    /// 403: the tenant is at one of its quotas; nothing was written.
    #[error("{quota} quota reached: {used} of {limit}{}; nothing was written", quota.unit())]
    Quota {
        /// Which quota.
        quota: Quota,
        /// Its limit.
        limit: u64,
        /// What is used, counting this request.
        used: u64,
    },
    /// 422: the session refused the change (for example a tool result
    /// without its call).
    #[error("{0}")]
    Rejected(String),
    /// 429: the tenant already has as many of something as it may
    /// (event streams).
    #[error("{what}: {limit} at once per tenant; close one first")]
    TooMany {
        /// What there are too many of.
        what: &'static str,
        /// The limit.
        limit: usize,
    },
    /// 503: the service is shutting down or lacks what the call needs.
    #[error("{0}")]
    Unavailable(String),
    /// 502: the model behind the summarizer endpoint failed. The answer
    /// says how (rate limited, timed out, ...); the provider's own text
    /// goes to the log.
    #[error("{}", upstream_summary(.0))]
    Upstream(abridge_llm::LlmError),
    /// 500: the store or something else on our side failed. The text is
    /// logged, never sent.
    #[error("{0}")]
    Internal(String),
    /// 500: the session's log ends in a write a crash cut short, so the
    /// service writes nothing after it until an operator sets those bytes
    /// aside (`abridge repair`). The store's text, which names the file,
    /// is logged, never sent.
    #[error(
        "this session's log ends in a write a crash cut short; nothing was written: an operator sets those bytes aside with `abridge repair`, then the session opens"
    )]
    TornLog(String),
}

/// A tenant's quota (see [`ServiceLimits`](crate::ServiceLimits)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Quota {
    /// Sessions a tenant may have.
    Sessions,
    /// Bytes one session's log may hold.
    SessionBytes,
    /// Bytes all of a tenant's sessions may hold together.
    TenantBytes,
}

impl Quota {
    fn unit(self) -> &'static str {
        match self {
            Quota::Sessions => " sessions",
            Quota::SessionBytes | Quota::TenantBytes => " bytes",
        }
    }
}

impl std::fmt::Display for Quota {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Quota::Sessions => "sessions per tenant",
            Quota::SessionBytes => "bytes per session",
            Quota::TenantBytes => "bytes per tenant",
        })
    }
}

/// What a client is told of a failed summarizer call: the kind of
/// failure, never the provider's address or text.
fn upstream_summary(error: &abridge_llm::LlmError) -> String {
    use abridge_llm::LlmError;
    let how = match error {
        LlmError::ContextOverflow { .. } => "the prompt is larger than its window".to_string(),
        LlmError::RateLimited { retry_after, .. } => match retry_after {
            Some(wait) => format!("rate limited (retry after {} s)", wait.as_secs().max(1)),
            None => "rate limited".to_string(),
        },
        LlmError::Server { status, .. } => format!("its provider failed with status {status}"),
        LlmError::Timeout { after, .. } => format!("no answer within {} s", after.as_secs()),
        LlmError::BadRequest { status, .. } => {
            format!("its provider refused the request with status {status}")
        }
        _ => "it failed".to_string(),
    };
    format!("the summarizer model: {how}")
}

impl ApiError {
    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::NotFound { .. } | ApiError::NoRoute { .. } => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict { .. } | ApiError::StaleWrite { .. } => StatusCode::CONFLICT,
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::BodyTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            ApiError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Quota { .. } => StatusCode::FORBIDDEN,
            ApiError::Rejected(_) => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::TooMany { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Upstream(_) => StatusCode::BAD_GATEWAY,
            ApiError::Internal(_) | ApiError::TornLog(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The stable code in the body.
    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Unauthorized => "unauthorized",
            ApiError::NotFound { .. } | ApiError::NoRoute { .. } => "not_found",
            ApiError::MethodNotAllowed { .. } => "method_not_allowed",
            ApiError::Conflict { .. } => "conflict",
            ApiError::StaleWrite { .. } => "stale_write",
            ApiError::BadRequest(_) => "bad_request",
            ApiError::BodyTimeout(_) => "timeout",
            ApiError::TooLarge { .. } => "too_large",
            ApiError::UnsupportedMediaType => "unsupported_media_type",
            ApiError::Quota { .. } => "quota_exceeded",
            ApiError::Rejected(_) => "rejected",
            ApiError::TooMany { .. } => "too_many",
            ApiError::Unavailable(_) => "unavailable",
            ApiError::Upstream(_) => "upstream",
            ApiError::Internal(_) => "internal",
            ApiError::TornLog(_) => "torn_log",
        }
    }

    /// The body: `{"error": {"code", "message", ...}}`, with the fields a
    /// client acts on (the limit of a quota, the seqs of a lost race, the
    /// id under which a 5xx's detail was logged).
    fn body(&self) -> serde_json::Value {
        let mut error = json!({"code": self.code(), "message": self.to_string()});
        match self {
            ApiError::StaleWrite { expected, found } => {
                error["expected_seq"] = json!(expected);
                error["log_seq"] = json!(found);
            }
            ApiError::TooLarge { limit } | ApiError::TooMany { limit, .. } => {
                error["limit"] = json!(limit);
            }
            ApiError::Quota { quota, limit, used } => {
                error["quota"] = json!(quota);
                error["limit"] = json!(limit);
                error["used"] = json!(used);
            }
            ApiError::Internal(detail) => {
                let id = error_id();
                tracing::error!(error_id = %id, error = %detail, "request failed");
                error["message"] = json!(format!(
                    "the service failed; its log has the details under error id {id}"
                ));
                error["error_id"] = json!(id);
            }
            ApiError::TornLog(detail) => {
                let id = error_id();
                tracing::error!(error_id = %id, error = %detail, "a session's log is torn");
                error["error_id"] = json!(id);
            }
            ApiError::Upstream(detail) => {
                let id = error_id();
                tracing::warn!(error_id = %id, error = %detail, "the summarizer model failed");
                error["error_id"] = json!(id);
                error["retryable"] = json!(detail.is_retryable());
            }
            _ => {}
        }
        json!({ "error": error })
    }
}

/// A short id to find a failure's detail in the log: the time in seconds
/// and a counter, in hex (unique within a process's life).
fn error_id() -> String {
    use std::sync::atomic::AtomicU32;
    use std::sync::atomic::Ordering;
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{secs:x}-{:x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status(), Json(self.body())).into_response();
        // The access log line names the code; the body is already built.
        response.extensions_mut().insert(ErrorCode(self.code()));
        response
    }
}

/// The `code` of an error answer, for the access log.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ErrorCode(pub(crate) &'static str);

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
        if let abridge_session::SessionError::Store(abridge_session::StoreError::Torn { .. }) =
            error
        {
            return ApiError::TornLog(error.to_string());
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

    // Issue 28: a 500 named server paths and the database's host, port
    // and schema; now it names an error id, and the detail is logged.
    #[tokio::test]
    async fn a_500_carries_an_error_id_and_no_detail() {
        let failure = ApiError::Internal(
            "postgres://abridge@db.internal:5432/abridge#prod: /srv/sessions/team-a/x.jsonl"
                .to_string(),
        );
        let response = failure.into_response();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        let body: serde_json::Value = serde_json::from_slice(&bytes).expect("json");
        let text = body.to_string();
        for leak in ["db.internal", "5432", "prod", "/srv", "team-a"] {
            assert!(!text.contains(leak), "{leak} in {text}");
        }
        let id = body["error"]["error_id"].as_str().expect("an error id");
        assert!(
            body["error"]["message"]
                .as_str()
                .expect("message")
                .contains(id),
            "{body}"
        );
    }
}
