//! What stops the proxy starting, or a conversation being logged.

/// The proxy's errors. A request whose conversation cannot be logged is
/// still forwarded as it came (the agent is never stopped by abridge);
/// these reach the caller only when the proxy is built or bound.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// An `--upstream` value that is not `anthropic=URL` or `openai=URL`
    /// with an http(s) URL.
    #[error("--upstream {value:?}: {message}")]
    Upstream {
        /// The value given.
        value: String,
        /// What is wrong with it.
        message: String,
    },
    /// A listen address off loopback without the flag that allows it.
    #[error(
        "--listen {addr}: not a loopback address; the proxy forwards API keys, so pass --allow-remote to listen there"
    )]
    NotLoopback {
        /// The address asked for.
        addr: String,
    },
    /// The listen address cannot be bound.
    #[error("cannot listen on {addr}: {message}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// The I/O error.
        message: String,
    },
    /// The session store.
    #[error("session store: {0}")]
    Store(String),
    /// The harness (settings, window).
    #[error("harness: {0}")]
    Harness(String),
    /// The HTTP client or the encoders could not be built.
    #[error("client: {0}")]
    Client(String),
}

impl ProxyError {
    pub(crate) fn store(error: impl std::fmt::Display) -> Self {
        ProxyError::Store(error.to_string())
    }

    pub(crate) fn session(error: impl std::fmt::Display) -> Self {
        ProxyError::Store(error.to_string())
    }

    pub(crate) fn harness(error: impl std::fmt::Display) -> Self {
        ProxyError::Harness(error.to_string())
    }
}
