//! From an HTTP status and error body to an [`LlmError`] class.
//!
//! Providers word the same failure differently; this module knows the
//! wordings so callers only ask `is_retryable` and `is_context_overflow`.

use std::time::Duration;
use std::time::SystemTime;

use abridge_llm::LlmError;

/// Phrases (lower case) with which OpenAI's own API says "the prompt does
/// not fit": the code `context_length_exceeded`; Chat Completions' "This
/// model's maximum context length is N tokens. However, your messages
/// resulted in M tokens"; the Responses API's "Your input exceeds the
/// context window of this model"; and the GPT-5 lines' "Input tokens
/// exceed the configured limit of N tokens".
pub const OPENAI_OVERFLOW_PHRASES: &[&str] = &[
    "context_length_exceeded",
    "maximum context length",
    "exceeds the context window",
    "input tokens exceed the configured limit",
];

/// Phrases (lower case) with which Anthropic's API says "the prompt does
/// not fit": "prompt is too long: N tokens > M maximum", and "input length
/// and `max_tokens` exceed context limit: N + M > L, decrease input length
/// or `max_tokens` and try again" (also seen without the backticks), which
/// newer models return when the prompt plus the requested output passes
/// the window.
pub const ANTHROPIC_OVERFLOW_PHRASES: &[&str] = &["prompt is too long", "exceed context limit"];

/// Phrases (lower case) with which other servers and gateways say "the
/// prompt does not fit". llama.cpp: "the request exceeds the available
/// context size", type `exceed_context_size_error`. llama-cpp-python:
/// "Requested tokens (N) exceed context window of M". vLLM and OpenRouter:
/// "This model's maximum context length is N tokens", "Please reduce the
/// length of the messages or completion", "longer than the maximum model
/// length". LM Studio: "the model is loaded with context length of only
/// N tokens". Gemini's compatible endpoint: "exceeds the maximum number of
/// tokens". Bedrock: "Input is too long for requested model". xAI: "This
/// model's maximum prompt length is N". Others: "context length exceeded",
/// "prompt too long", "too many tokens", "context size", "context window".
///
/// A server that is not OpenAI's or Anthropic's own API is matched against
/// these and both providers' lists, since gateways pass either wording on.
pub const CONTEXT_OVERFLOW_PHRASES: &[&str] = &[
    "context length exceeded",
    "prompt too long",
    "exceeds the available context size",
    "exceed_context_size",
    "exceed context window",
    "maximum model length",
    "context length of only",
    "context size",
    "context window",
    "too many tokens",
    "input is too long",
    "reduce the length of the messages",
    "exceeds the maximum number of tokens",
    "maximum prompt length",
];

/// Whose wording an error is read in: each provider's own API documents
/// its own overflow messages, and any other server may use any of them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum ErrorDialect {
    /// OpenAI's own API ([`OPENAI_OVERFLOW_PHRASES`]).
    OpenAi,
    /// Anthropic's own API ([`ANTHROPIC_OVERFLOW_PHRASES`]); a 413 there is
    /// `request_too_large` (the body passed the byte limit), not an
    /// overflow.
    Anthropic,
    /// Any other server: every list, and a 413 counts as an overflow.
    #[default]
    Compatible,
}

impl ErrorDialect {
    /// The dialect of a client posting to `url` whose provider's own API
    /// lives at `home`, read as `own`: `own` when `url` is on `home`'s
    /// host, [`ErrorDialect::Compatible`] otherwise (a gateway or a local
    /// server speaking the same wire format).
    pub fn for_url(own: ErrorDialect, home: &str, url: &str) -> ErrorDialect {
        if host_of(home).is_some() && host_of(home) == host_of(url) {
            own
        } else {
            ErrorDialect::Compatible
        }
    }

    /// True when `text` (message, type or code) says, in this dialect,
    /// that the prompt is larger than the model's window.
    pub fn is_overflow(self, text: &str) -> bool {
        let lower = text.to_ascii_lowercase();
        let lists: &[&[&str]] = match self {
            ErrorDialect::OpenAi => &[OPENAI_OVERFLOW_PHRASES],
            ErrorDialect::Anthropic => &[ANTHROPIC_OVERFLOW_PHRASES],
            ErrorDialect::Compatible => &[
                OPENAI_OVERFLOW_PHRASES,
                ANTHROPIC_OVERFLOW_PHRASES,
                CONTEXT_OVERFLOW_PHRASES,
            ],
        };
        lists
            .iter()
            .flat_map(|list| list.iter())
            .any(|phrase| lower.contains(phrase))
    }
}

/// The host of an http(s) URL, lower case, without port or path.
fn host_of(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?.split(':').next()?;
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// True when a provider's error text (message, type or code) says the
/// prompt is larger than the model's window, in any provider's wording.
pub fn looks_like_context_overflow(text: &str) -> bool {
    ErrorDialect::Compatible.is_overflow(text)
}

/// The parts of a provider error body we read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ErrorBody {
    /// `error.code` (OpenAI, llama.cpp).
    pub(crate) code: Option<String>,
    /// `error.type` (OpenAI, Anthropic, llama.cpp).
    pub(crate) kind: Option<String>,
    /// The human message, or the raw body when it is not JSON.
    pub(crate) message: String,
}

impl ErrorBody {
    fn text_for_matching(&self) -> String {
        format!(
            "{} {} {}",
            self.code.as_deref().unwrap_or(""),
            self.kind.as_deref().unwrap_or(""),
            self.message
        )
    }

    fn kind_contains(&self, needle: &str) -> bool {
        self.kind.as_deref().is_some_and(|k| k.contains(needle))
            || self.code.as_deref().is_some_and(|c| c.contains(needle))
    }
}

const MAX_MESSAGE_CHARS: usize = 600;

fn clip(text: &str) -> String {
    let trimmed = text.trim();
    if trimmed.chars().count() <= MAX_MESSAGE_CHARS {
        return trimmed.to_string();
    }
    let mut out: String = trimmed.chars().take(MAX_MESSAGE_CHARS).collect();
    out.push_str("...");
    out
}

fn string_field(value: &serde_json::Value, key: &str) -> Option<String> {
    match value.get(key)? {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Null => None,
        other => Some(other.to_string()),
    }
}

/// Reads an error body in any of the shapes providers use:
/// `{"error":{"message","type","code"}}` (OpenAI, llama.cpp, Anthropic's
/// `{"type":"error","error":{...}}`), `{"error":"text"}`, `{"message":..}`,
/// `{"detail":..}`, or plain text.
pub(crate) fn parse_error_body(body: &[u8]) -> ErrorBody {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return ErrorBody {
            message: clip(&String::from_utf8_lossy(body)),
            ..ErrorBody::default()
        };
    };
    error_from_value(&value)
}

/// Like [`parse_error_body`] for a value already parsed (stream events).
pub(crate) fn error_from_value(value: &serde_json::Value) -> ErrorBody {
    let inner = match value.get("error") {
        Some(serde_json::Value::String(text)) => {
            return ErrorBody {
                message: clip(text),
                ..ErrorBody::default()
            };
        }
        Some(inner @ serde_json::Value::Object(_)) => inner,
        _ => value,
    };
    let message = string_field(inner, "message")
        .or_else(|| string_field(inner, "detail"))
        .or_else(|| string_field(value, "message"))
        .unwrap_or_else(|| value.to_string());
    ErrorBody {
        code: string_field(inner, "code"),
        kind: string_field(inner, "type"),
        message: clip(&message),
    }
}

/// Classifies a non-success HTTP answer from any JSON-over-HTTP model
/// service (a summary endpoint, a gateway) exactly as the provider clients
/// classify theirs, so every caller sees the same error classes: `body` is
/// the raw answer, in any of the error shapes providers use (an `error`
/// object or string, `message`, `detail`, or plain text). Read as
/// [`ErrorDialect::Compatible`]; see [`classify_http_error_in`] for a
/// provider's own API.
pub fn classify_http_error(
    provider: &str,
    status: u16,
    retry_after: Option<Duration>,
    body: &[u8],
) -> LlmError {
    classify_http_error_in(
        ErrorDialect::Compatible,
        provider,
        status,
        retry_after,
        body,
    )
}

/// Like [`classify_http_error`], reading the body in `dialect`.
pub fn classify_http_error_in(
    dialect: ErrorDialect,
    provider: &str,
    status: u16,
    retry_after: Option<Duration>,
    body: &[u8],
) -> LlmError {
    classify_status(
        provider,
        dialect,
        status,
        retry_after,
        &parse_error_body(body),
    )
}

/// Error types and codes that say the account cannot pay for the call
/// (OpenAI answers an exhausted quota with 429 `insufficient_quota`, and
/// a plan that does not include API usage with `usage_not_included`,
/// also inside a stream): waiting does not help, so they are neither rate
/// limits nor server errors.
const QUOTA_KINDS: &[&str] = &["insufficient_quota", "billing", "usage_not_included"];

/// Classifies a non-success HTTP answer.
///
/// Order matters: an exhausted quota or billing failure is a bad request
/// whatever the status (OpenAI sends 429 `insufficient_quota`); any other
/// 429 is a rate limit (some providers say "tokens" in rate-limit
/// messages); then the dialect's overflow wording, whatever the status
/// (llama.cpp once answered overflows with 500); then 413, an overflow
/// except on Anthropic's API, where it means the body passed the byte
/// limit; then transient statuses (408, 409, 425, 5xx, 529) and overload
/// types; the rest of 4xx is a bad request.
pub(crate) fn classify_status(
    provider: &str,
    dialect: ErrorDialect,
    status: u16,
    retry_after: Option<Duration>,
    body: &ErrorBody,
) -> LlmError {
    let provider = provider.to_string();
    let message = body.message.clone();
    if QUOTA_KINDS.iter().any(|kind| body.kind_contains(kind)) {
        return LlmError::BadRequest {
            provider,
            status,
            message,
        };
    }
    if status == 429 || body.kind_contains("rate_limit") {
        return LlmError::RateLimited {
            provider,
            retry_after: retry_after.or_else(|| wait_in_message(&message)),
            message,
        };
    }
    if dialect.is_overflow(&body.text_for_matching())
        || (status == 413 && dialect != ErrorDialect::Anthropic)
    {
        return LlmError::ContextOverflow { provider, message };
    }
    if matches!(status, 408 | 409 | 425) || status >= 500 || body.kind_contains("overloaded") {
        return LlmError::Server {
            provider,
            status,
            retry_after,
            message,
        };
    }
    LlmError::BadRequest {
        provider,
        status,
        message,
    }
}

/// Classifies an error reported inside a successful (200) stream, where no
/// status tells the class: the type or code and the wording decide, and an
/// unknown failure counts as a transient server error.
pub(crate) fn classify_stream_error(
    provider: &str,
    dialect: ErrorDialect,
    body: &ErrorBody,
) -> LlmError {
    let status = if dialect.is_overflow(&body.text_for_matching()) {
        400
    } else if body.kind_contains("request_too_large") {
        413
    } else if body.kind_contains("rate_limit") {
        429
    } else if body.kind_contains("overloaded") {
        529
    } else if body.kind_contains("invalid_request") {
        400
    } else if body.kind_contains("authentication") {
        401
    } else if body.kind_contains("permission") {
        403
    } else {
        500
    };
    classify_status(provider, dialect, status, None, body)
}

/// The wait a rate-limit message names, as OpenAI writes it ("Please try
/// again in 1.5s", "in 20ms", "in 1m12.5s"): the only delay a
/// `response.failed` event inside a stream carries, since no header
/// comes with it.
pub(crate) fn wait_in_message(message: &str) -> Option<Duration> {
    const PHRASE: &str = "try again in ";
    let lower = message.to_ascii_lowercase();
    let start = lower.find(PHRASE)? + PHRASE.len();
    let mut rest = &lower[start..];
    let mut total = 0.0_f64;
    let mut read_any = false;
    loop {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let Ok(value) = rest[..digits].parse::<f64>() else {
            break;
        };
        let unit = &rest[digits..];
        let (scale, used) = if unit.starts_with("ms") {
            (0.001, 2)
        } else if unit.starts_with('s') {
            (1.0, 1)
        } else if unit.starts_with('m') {
            (60.0, 1)
        } else if unit.starts_with('h') {
            (3600.0, 1)
        } else {
            break;
        };
        total += value * scale;
        read_any = true;
        rest = &unit[used..];
    }
    (read_any && total.is_finite()).then(|| Duration::from_secs_f64(total))
}

/// Reads how long the server asked us to wait: `retry-after-ms` (OpenAI),
/// else `retry-after` as seconds (integer or decimal) or an HTTP-date.
pub(crate) fn retry_after(
    headers: &reqwest::header::HeaderMap,
    now: SystemTime,
) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = headers.get("retry-after")?.to_str().ok()?;
    parse_retry_after(value, now)
}

/// Parses a `Retry-After` value: delta seconds or an HTTP-date (a date in
/// the past means "now").
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let at = parse_http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the only
/// HTTP-date form servers still send.
pub fn parse_http_date(value: &str) -> Option<SystemTime> {
    let parts: Vec<&str> = value.split_whitespace().collect();
    let [_weekday, day, month, year, time, zone] = parts.as_slice() else {
        return None;
    };
    if *zone != "GMT" && *zone != "UTC" {
        return None;
    }
    let day: u32 = day.parse().ok()?;
    let month = match *month {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: i64 = year.parse().ok()?;
    let mut clock = time.split(':').map(|part| part.parse::<u64>().ok());
    let (hours, minutes, seconds) = (clock.next()??, clock.next()??, clock.next()??);
    if clock.next().is_some()
        || !(1..=31).contains(&day)
        || hours > 23
        || minutes > 59
        || seconds > 60
    {
        return None;
    }
    let days = days_from_civil(year, month, i64::from(day));
    let secs = days * 86_400 + i64::try_from(hours * 3600 + minutes * 60 + seconds).ok()?;
    let secs = u64::try_from(secs).ok()?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs))
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn classify(status: u16, body: &str) -> LlmError {
        classify_in(ErrorDialect::Compatible, status, body)
    }

    fn classify_in(dialect: ErrorDialect, status: u16, body: &str) -> LlmError {
        classify_status(
            "p",
            dialect,
            status,
            None,
            &parse_error_body(body.as_bytes()),
        )
    }

    #[test]
    fn openai_overflow_by_code_and_wording() {
        let body = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        assert!(classify(400, body).is_context_overflow());
        let by_code = r#"{"error":{"message":"Input too big.","type":"invalid_request_error","code":"context_length_exceeded"}}"#;
        assert!(classify(400, by_code).is_context_overflow());
    }

    #[test]
    fn anthropic_overflow_wording() {
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208000 tokens > 200000 maximum"}}"#;
        let error = classify(400, body);
        assert_eq!(
            error,
            LlmError::ContextOverflow {
                provider: "p".into(),
                message: "prompt is too long: 208000 tokens > 200000 maximum".into()
            }
        );
    }

    #[test]
    fn llama_cpp_overflow_wordings() {
        let body = r#"{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (8192 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}"#;
        assert!(classify(400, body).is_context_overflow());
        let old = r#"{"error":{"code":500,"message":"the request exceeds the available context size, try increasing the context size or enable context shift","type":"server_error"}}"#;
        assert!(classify(500, old).is_context_overflow());
        let python = r#"{"error":{"message":"Requested tokens (9000) exceed context window of 2048","type":"invalid_request_error"}}"#;
        assert!(classify(400, python).is_context_overflow());
    }

    #[test]
    fn generic_overflow_wordings() {
        for text in [
            "too many tokens in the prompt",
            "Input is too long for requested model.",
            "Please reduce the length of the messages or completion.",
            "The input token count (300000) exceeds the maximum number of tokens allowed (1048576).",
        ] {
            assert!(classify(400, text).is_context_overflow(), "{text}");
        }
        assert!(classify(413, "Request Entity Too Large").is_context_overflow());
    }

    #[test]
    fn rate_limit_wins_over_token_wording() {
        let error = classify_status(
            "p",
            ErrorDialect::Compatible,
            429,
            Some(Duration::from_secs(3)),
            &parse_error_body(br#"{"error":{"message":"Rate limit reached: too many tokens per min","code":"rate_limit_exceeded"}}"#),
        );
        assert_eq!(error.retry_after(), Some(Duration::from_secs(3)));
        assert!(!error.is_context_overflow());
    }

    #[test]
    fn server_and_bad_request_classes() {
        assert!(matches!(
            classify(500, "boom"),
            LlmError::Server { status: 500, .. }
        ));
        let overloaded =
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        assert!(matches!(
            classify(529, overloaded),
            LlmError::Server { status: 529, .. }
        ));
        assert!(matches!(
            classify(401, "no key"),
            LlmError::BadRequest { status: 401, .. }
        ));
        assert!(!classify(404, "no such model").is_retryable());
    }

    #[test]
    fn stream_errors_are_classed_by_type() {
        let overloaded = error_from_value(
            &serde_json::json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
        );
        assert!(matches!(
            classify_stream_error("p", ErrorDialect::Anthropic, &overloaded),
            LlmError::Server { status: 529, .. }
        ));
        let overflow = error_from_value(
            &serde_json::json!({"code":"context_length_exceeded","message":"too big"}),
        );
        assert!(classify_stream_error("p", ErrorDialect::OpenAi, &overflow).is_context_overflow());
    }

    /// Every documented overflow wording of each provider, in that
    /// provider's dialect and in the compatible one (gateways pass them on).
    #[test]
    fn each_provider_overflow_wording_in_its_own_dialect() {
        let cases = [
            (
                ErrorDialect::Anthropic,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208000 tokens > 200000 maximum"}}"#,
            ),
            (
                ErrorDialect::Anthropic,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or `max_tokens` and try again"}}"#,
            ),
            (
                ErrorDialect::Anthropic,
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"input length and max_tokens exceed context limit: 198981 + 21333 > 200000, decrease input length or max_tokens and try again"}}"#,
            ),
            (
                ErrorDialect::OpenAi,
                r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#,
            ),
            (
                ErrorDialect::OpenAi,
                r#"{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":null}}"#,
            ),
            (
                ErrorDialect::OpenAi,
                r#"{"error":{"message":"Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 280000 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":null}}"#,
            ),
        ];
        for (dialect, body) in cases {
            let error = classify_in(dialect, 400, body);
            assert!(error.is_context_overflow(), "{dialect:?}: {body}");
            assert!(!error.is_retryable(), "{body}");
            assert!(
                classify_in(ErrorDialect::Compatible, 400, body).is_context_overflow(),
                "{body}"
            );
        }
    }

    /// A provider's own API is read in its own words only; other servers'
    /// wordings count only for a compatible server.
    #[test]
    fn a_providers_own_dialect_ignores_other_servers_wording() {
        let llama = r#"{"error":{"code":400,"message":"request (9000 tokens) exceeds the available context size (8192 tokens)","type":"exceed_context_size_error"}}"#;
        assert!(!classify_in(ErrorDialect::OpenAi, 400, llama).is_context_overflow());
        assert!(!classify_in(ErrorDialect::Anthropic, 400, llama).is_context_overflow());
        assert!(classify_in(ErrorDialect::Compatible, 400, llama).is_context_overflow());
    }

    #[test]
    fn the_dialect_follows_the_host() {
        use ErrorDialect as D;
        let anthropic = "https://api.anthropic.com";
        let openai = "https://api.openai.com/v1";
        assert_eq!(
            D::for_url(
                D::Anthropic,
                anthropic,
                "https://api.anthropic.com/v1/messages"
            ),
            D::Anthropic
        );
        assert_eq!(
            D::for_url(D::OpenAi, openai, "https://API.openai.com:443/v1/responses"),
            D::OpenAi
        );
        assert_eq!(
            D::for_url(
                D::OpenAi,
                openai,
                "http://127.0.0.1:8080/v1/chat/completions"
            ),
            D::Compatible
        );
        assert_eq!(
            D::for_url(
                D::Anthropic,
                anthropic,
                "https://openrouter.ai/api/v1/messages"
            ),
            D::Compatible
        );
        assert_eq!(
            D::for_url(D::OpenAi, "not a url", "not a url"),
            D::Compatible
        );
    }

    /// OpenAI answers an exhausted quota with 429; waiting does not help.
    /// Issue 29: a failed response inside a stream has no Retry-After
    /// header; the wait is in its message.
    #[test]
    fn a_streamed_rate_limit_reads_its_wait_from_the_message() {
        let failed = error_from_value(&serde_json::json!({"error": {
            "code": "rate_limit_exceeded",
            "message": "Rate limit reached for gpt-5 in organization org-1 on tokens per min (TPM): Limit 30000, Used 29800, Requested 1200. Please try again in 1.75s. Visit https://platform.openai.com/account/rate-limits to learn more."}}));
        let error = classify_stream_error("openai", ErrorDialect::OpenAi, &failed);
        assert!(
            matches!(error, LlmError::RateLimited { retry_after: Some(d), .. } if d == Duration::from_millis(1750)),
            "{error:?}"
        );
        assert_eq!(
            wait_in_message("Please try again in 20ms."),
            Some(Duration::from_millis(20))
        );
        assert_eq!(
            wait_in_message("try again in 1m12.5s"),
            Some(Duration::from_secs_f64(72.5))
        );
        assert_eq!(wait_in_message("try again in a moment"), None);
        assert_eq!(wait_in_message("no wait named"), None);
    }

    /// Issue 29: a plan without API usage is not a transient failure;
    /// retrying it as a server error only repeats the refusal.
    #[test]
    fn usage_not_included_is_not_retried() {
        let failed = error_from_value(&serde_json::json!({"error": {
            "type": "usage_not_included",
            "message": "Your plan does not include API usage."}}));
        let error = classify_stream_error("openai", ErrorDialect::OpenAi, &failed);
        assert!(matches!(error, LlmError::BadRequest { .. }), "{error:?}");
        assert!(!error.is_retryable());
    }

    #[test]
    fn insufficient_quota_is_not_a_rate_limit() {
        let body = r#"{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}"#;
        for dialect in [ErrorDialect::OpenAi, ErrorDialect::Compatible] {
            let error = classify_status(
                "p",
                dialect,
                429,
                Some(Duration::from_secs(1)),
                &parse_error_body(body.as_bytes()),
            );
            assert!(
                matches!(error, LlmError::BadRequest { status: 429, .. }),
                "{error:?}"
            );
            assert!(!error.is_retryable());
            assert_eq!(error.retry_after(), None);
        }
        // Inside a stream (a failed Responses answer) too.
        let failed = error_from_value(&serde_json::json!({"error": {
            "code": "insufficient_quota", "message": "You exceeded your current quota."}}));
        assert!(!classify_stream_error("p", ErrorDialect::OpenAi, &failed).is_retryable());
        // An ordinary 429 stays a rate limit.
        let limited = r#"{"error":{"message":"Rate limit reached for requests","type":"requests","code":"rate_limit_exceeded"}}"#;
        assert!(classify_in(ErrorDialect::OpenAi, 429, limited).is_retryable());
    }

    /// Anthropic's 413 is `request_too_large`: the body passed the byte
    /// limit (images, documents); it says nothing about the token window.
    #[test]
    fn anthropic_413_is_request_size_not_overflow() {
        let body = r#"{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}"#;
        let error = classify_in(ErrorDialect::Anthropic, 413, body);
        assert!(
            matches!(error, LlmError::BadRequest { status: 413, .. }),
            "{error:?}"
        );
        assert!(!error.is_context_overflow() && !error.is_retryable());
        let streamed = error_from_value(&serde_json::from_str(body).unwrap());
        assert!(
            !classify_stream_error("p", ErrorDialect::Anthropic, &streamed).is_context_overflow()
        );
        // A compatible server's bare 413 is still read as an overflow.
        assert!(
            classify_in(ErrorDialect::Compatible, 413, "Request Entity Too Large")
                .is_context_overflow()
        );
    }

    #[test]
    fn retry_after_seconds_and_http_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(784_111_767); // Sun, 06 Nov 1994 08:49:27 GMT
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("1.5", now),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::from_secs(10))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-3", now), None);
    }

    #[test]
    fn http_date_epoch_and_leap_year() {
        assert_eq!(
            parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"),
            Some(SystemTime::UNIX_EPOCH)
        );
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2028 00:00:01 GMT"),
            Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_835_395_201))
        );
        assert_eq!(parse_http_date("Tue, 29 Foo 2028 00:00:01 GMT"), None);
    }

    #[test]
    fn long_bodies_are_clipped() {
        let long = "x".repeat(5000);
        let body = parse_error_body(long.as_bytes());
        assert_eq!(body.message.len(), MAX_MESSAGE_CHARS + 3);
    }
}
