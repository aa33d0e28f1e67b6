//! The one HTTP path every provider shares: headers, authentication,
//! sending, and turning a failed answer into a classified error with the
//! key scrubbed out.
//!
//! Public as [`Http`] so that other JSON-over-HTTP model services (a
//! summary endpoint, a provider's native compaction route) reach the
//! network the same way the provider clients do, with the same error
//! classes, instead of a second copy of this path.

use std::fmt;
use std::time::SystemTime;

use reqwest::header::HeaderMap;
use reqwest::header::HeaderName;
use reqwest::header::HeaderValue;

use crate::common::classify;
use crate::common::config::ApiKey;
use crate::common::config::ProviderConfig;
use abridge_llm::LlmError;
use abridge_llm::Purpose;

/// How the key of a [`ProviderConfig`] is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer KEY` (OpenAI and compatible servers).
    Bearer,
    /// `x-api-key: KEY` (Anthropic).
    XApiKey,
}

/// One configured JSON endpoint: its URL, headers (key and extras marked
/// sensitive), error dialect and connect timeout. Sending never retries;
/// wrap the caller in a [`RetryingClient`](abridge_llm::RetryingClient) for
/// that. Failed answers come back as classified [`LlmError`]s with the key
/// scrubbed from their text.
pub struct Http {
    client: reqwest::Client,
    url: String,
    /// Whose endpoint and credentials this is (see [`Http::account`]).
    account: String,
    headers: HeaderMap,
    provider: String,
    secret: Option<ApiKey>,
    purpose_header: Option<HeaderName>,
    dialect: classify::ErrorDialect,
    max_response_bytes: usize,
}

impl fmt::Debug for Http {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Http")
            .field("provider", &self.provider)
            .field("url", &self.url)
            .field("header_names", &self.headers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

fn config_error(provider: &str, message: String) -> LlmError {
    LlmError::InvalidConfig {
        provider: provider.to_string(),
        message,
    }
}

impl Http {
    /// Builds the endpoint `base + path` with the caller's headers and the
    /// provider's fixed ones. Errors are read in `own` when the base is on
    /// `default_base`'s host, in the compatible dialect otherwise.
    ///
    /// # Errors
    /// `InvalidConfig` for a header that is not valid HTTP, a URL that does
    /// not start with `http://` or `https://`, or a TLS setup failure.
    pub fn new(
        provider: &str,
        config: &ProviderConfig,
        default_base: &str,
        path: &str,
        auth: Auth,
        own: classify::ErrorDialect,
        fixed_headers: &[(&'static str, &'static str)],
    ) -> Result<Self, LlmError> {
        let base = config.base_url.as_deref().unwrap_or(default_base);
        let base = base.trim_end_matches('/');
        if !(base.starts_with("http://") || base.starts_with("https://")) {
            return Err(config_error(
                provider,
                format!("base url {base:?} must start with http:// or https://"),
            ));
        }
        let mut headers = HeaderMap::new();
        for (name, value) in fixed_headers {
            headers.insert(*name, HeaderValue::from_static(value));
        }
        for (name, value) in &config.headers {
            let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                config_error(provider, format!("header name {name:?} is not valid"))
            })?;
            // A caller's beta flags join the ones the endpoint needs
            // instead of replacing them.
            let value = match headers.get(&header) {
                Some(fixed) if header.as_str() == ANTHROPIC_BETA => {
                    join_betas(fixed.to_str().ok(), &[value.as_str()])
                }
                _ => value.clone(),
            };
            let mut value = HeaderValue::from_str(&value).map_err(|_| {
                config_error(
                    provider,
                    format!("the value of header {name:?} is not valid"),
                )
            })?;
            value.set_sensitive(true);
            headers.insert(header, value);
        }
        if let Some(key) = &config.api_key {
            let (name, text) = match auth {
                Auth::Bearer => (
                    reqwest::header::AUTHORIZATION,
                    format!("Bearer {}", key.expose()),
                ),
                Auth::XApiKey => (
                    HeaderName::from_static("x-api-key"),
                    key.expose().to_string(),
                ),
            };
            let mut value = HeaderValue::from_str(&text).map_err(|_| {
                config_error(provider, "the api key is not a valid header value".into())
            })?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        let purpose_header = match &config.purpose_header {
            Some(name) => Some(HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                config_error(
                    provider,
                    format!("purpose header name {name:?} is not valid"),
                )
            })?),
            None => None,
        };
        let mut builder = reqwest::Client::builder();
        if let Some(timeout) = config.connect_timeout {
            builder = builder.connect_timeout(timeout);
        }
        let client = builder
            .build()
            .map_err(|e| config_error(provider, format!("could not build the http client: {e}")))?;
        Ok(Http {
            client,
            account: account_of(base, config),
            dialect: classify::ErrorDialect::for_url(own, default_base, base),
            url: format!("{base}{path}"),
            headers,
            provider: provider.to_string(),
            secret: config.api_key.clone(),
            purpose_header,
            max_response_bytes: config
                .max_response_bytes
                .unwrap_or(crate::common::config::DEFAULT_MAX_RESPONSE_BYTES),
        })
    }

    /// The provider name errors carry.
    pub fn provider(&self) -> &str {
        &self.provider
    }

    /// The full address requests are posted to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Whose endpoint and credentials this is: the base URL and a
    /// fingerprint of the key and the account headers
    /// (`OpenAI-Organization`, `OpenAI-Project`), never the key itself.
    /// Opaque provider output (an encrypted compaction item, a signed
    /// block) is readable only by the account and backend that made it,
    /// so it is replayed only where this matches; two clients of the same
    /// base and key, whatever their paths, agree.
    pub fn account(&self) -> &str {
        &self.account
    }

    /// The largest answer body this endpoint reads, in bytes.
    pub fn max_response_bytes(&self) -> usize {
        self.max_response_bytes
    }

    /// The error for an answer that grew past the size cap.
    pub(crate) fn too_large(&self) -> LlmError {
        too_large(&self.provider, self.max_response_bytes)
    }

    /// Whose wording this endpoint's errors are read in.
    pub(crate) fn dialect(&self) -> classify::ErrorDialect {
        self.dialect
    }

    /// Removes the key from text that may echo it (error bodies, transport
    /// messages).
    pub(crate) fn scrub(&self, text: String) -> String {
        match &self.secret {
            Some(key) if key.expose().len() >= 4 && text.contains(key.expose()) => {
                text.replace(key.expose(), "<redacted>")
            }
            _ => text,
        }
    }

    /// A transport failure, scrubbed, with the cause chain but no URL.
    pub(crate) fn transport(&self, error: &reqwest::Error) -> LlmError {
        let mut message = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        LlmError::Transport {
            provider: self.provider.clone(),
            message: self.scrub(message),
        }
    }

    /// A transport-class error with our own message.
    pub(crate) fn malformed(&self, message: impl Into<String>) -> LlmError {
        LlmError::Transport {
            provider: self.provider.clone(),
            message: self.scrub(message.into()),
        }
    }

    /// Posts a JSON body and returns the response once its status is a
    /// success; any other status is read and classified.
    ///
    /// # Errors
    /// Transport failures and classified HTTP errors.
    ///
    /// # Cancel safety
    /// Dropping the future drops the connection.
    pub(crate) async fn post(
        &self,
        body: Vec<u8>,
        purpose: Purpose,
        streaming: bool,
    ) -> Result<reqwest::Response, LlmError> {
        self.post_with_betas(body, purpose, streaming, &[]).await
    }

    /// [`post`](Self::post) with `betas` joined to the `anthropic-beta`
    /// flags the endpoint already sends: the flags this body's contents
    /// need.
    ///
    /// # Errors
    /// As [`post`](Self::post).
    pub(crate) async fn post_with_betas(
        &self,
        body: Vec<u8>,
        purpose: Purpose,
        streaming: bool,
        betas: &[&str],
    ) -> Result<reqwest::Response, LlmError> {
        tracing::debug!(
            provider = %self.provider,
            ?purpose,
            streaming,
            bytes = body.len(),
            "sending model request"
        );
        let mut headers = self.headers.clone();
        if !betas.is_empty() {
            // One header listing every flag: a second `anthropic-beta`
            // line would leave the server reading only one of them.
            let value = HeaderValue::from_str(&self.betas(betas))
                .map_err(|_| self.malformed("a beta flag is not a valid header value"))?;
            headers.insert(ANTHROPIC_BETA, value);
        }
        let mut request = self
            .client
            .post(&self.url)
            .headers(headers)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        if streaming {
            request = request.header(reqwest::header::ACCEPT, "text/event-stream");
        }
        if let Some(name) = &self.purpose_header {
            request = request.header(name.clone(), purpose_name(purpose));
        }
        let response = request
            .send()
            .await
            .map_err(|e| self.transport(&e.without_url()))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let retry_after = classify::retry_after(response.headers(), SystemTime::now());
        let bytes = self.read_capped(response).await?;
        let mut body = classify::parse_error_body(&bytes);
        body.message = self.scrub(body.message);
        let error = classify::classify_status(
            &self.provider,
            self.dialect,
            status.as_u16(),
            retry_after,
            &body,
        );
        tracing::warn!(provider = %self.provider, status = status.as_u16(), error = %error, "model request failed");
        Err(error)
    }

    /// Posts `body` as JSON and reads the whole answer as JSON: the path of
    /// a service that answers with one JSON object.
    ///
    /// # Errors
    /// Transport failures, classified HTTP errors, and `Transport` when
    /// the answer is not JSON.
    ///
    /// # Cancel safety
    /// Dropping the future drops the connection.
    pub async fn post_json(
        &self,
        body: &serde_json::Value,
        purpose: Purpose,
    ) -> Result<serde_json::Value, LlmError> {
        let bytes = serde_json::to_vec(body)
            .map_err(|e| self.malformed(format!("could not encode the request ({e})")))?;
        let response = self.post(bytes, purpose, false).await?;
        self.read_json(response).await
    }

    /// Reads a whole body, chunk by chunk, stopping (and dropping the
    /// connection) as soon as it passes the size cap: an announced length
    /// over the cap is refused before any of the body is read.
    ///
    /// # Errors
    /// `Transport` when the connection fails or is cut; `Unusable` naming
    /// the cap when the body is larger.
    async fn read_capped(&self, mut response: reqwest::Response) -> Result<Vec<u8>, LlmError> {
        let cap = self.max_response_bytes;
        let announced = response.content_length().unwrap_or(0);
        if usize::try_from(announced).map_or(true, |n| n > cap) {
            return Err(self.too_large());
        }
        let mut body = Vec::with_capacity(usize::try_from(announced).unwrap_or(0));
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.transport(&e.without_url()))?
        {
            if body.len() + chunk.len() > cap {
                return Err(self.too_large());
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body)
    }

    /// Reads a whole JSON body, within the size cap.
    ///
    /// # Errors
    /// `Transport` when the connection fails or the body is not the JSON
    /// shape expected; `Unusable` when it is larger than the cap.
    pub(crate) async fn read_json<T: serde::de::DeserializeOwned>(
        &self,
        response: reqwest::Response,
    ) -> Result<T, LlmError> {
        let bytes = self.read_capped(response).await?;
        serde_json::from_slice(&bytes)
            .map_err(|e| self.malformed(format!("the answer is not the expected json ({e})")))
    }
}

impl Http {
    /// The `anthropic-beta` value a request carrying `needed` sends: the
    /// endpoint's own flags (fixed and configured) and `needed`, each once.
    pub fn betas(&self, needed: &[&str]) -> String {
        let own = self
            .headers
            .get(ANTHROPIC_BETA)
            .and_then(|value| value.to_str().ok());
        join_betas(own, needed)
    }
}

/// The header that lists Anthropic's beta flags, comma-separated.
pub(crate) const ANTHROPIC_BETA: &str = "anthropic-beta";

/// `existing` (a comma-separated list, if any) with each of `more` added
/// unless it is already there.
fn join_betas(existing: Option<&str>, more: &[&str]) -> String {
    let mut flags: Vec<&str> = existing
        .into_iter()
        .flat_map(|list| list.split(','))
        .chain(more.iter().flat_map(|list| list.split(',')))
        .map(str::trim)
        .filter(|flag| !flag.is_empty())
        .collect();
    let mut seen = std::collections::HashSet::new();
    flags.retain(|flag| seen.insert(*flag));
    flags.join(",")
}

/// Headers that name the account a key acts for, beside the key itself.
const ACCOUNT_HEADERS: &[&str] = &["openai-organization", "openai-project"];

/// `base#fingerprint`: the base URL and the first 16 hex digits of the
/// SHA-256 of the key and the account headers' values (see
/// [`Http::account`]). A configuration without a key has the fingerprint
/// of an empty key.
fn account_of(base: &str, config: &ProviderConfig) -> String {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    hash.update(b"abridge-account\0");
    if let Some(key) = &config.api_key {
        hash.update(key.expose().as_bytes());
    }
    for wanted in ACCOUNT_HEADERS {
        for (name, value) in &config.headers {
            if name.eq_ignore_ascii_case(wanted) {
                hash.update(b"\0");
                hash.update(name.to_ascii_lowercase().as_bytes());
                hash.update(b"=");
                hash.update(value.as_bytes());
            }
        }
    }
    let digest = hash.finalize();
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    format!("{base}#{hex}")
}

/// The error for an answer from `provider` that grew past `cap` bytes. Not
/// retryable: the same request would most likely get the same answer.
pub(crate) fn too_large(provider: &str, cap: usize) -> LlmError {
    LlmError::Unusable {
        provider: provider.to_string(),
        message: format!("the answer is larger than the {cap}-byte cap (max_response_bytes)"),
    }
}

/// The wire name of a purpose, as sent in the purpose header.
pub(crate) fn purpose_name(purpose: Purpose) -> &'static str {
    match purpose {
        Purpose::Turn => "turn",
        Purpose::Compaction => "compaction",
        Purpose::BranchSummary => "branch_summary",
        Purpose::Handoff => "handoff",
    }
}
