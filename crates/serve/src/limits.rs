//! What one client, or one tenant, may take of the service: time on a
//! connection, connections, event streams, open sessions, heavy reads,
//! and the tenant's quotas. Each is a setting with a documented default
//! and bounds (docs/serve.md, "Security"); [`ServiceLimits::check`]
//! refuses a value outside them, naming the setting.

use std::time::Duration;

/// Largest request body accepted by default (32 MiB: a long batch of
/// messages with images). Larger bodies get 413.
pub const DEFAULT_BODY_LIMIT: usize = 32 * 1024 * 1024;

/// Every limit the service enforces. [`Default`] gives the documented
/// defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceLimits {
    /// Largest request body in bytes (413 past it). Default 32 MiB.
    pub body_bytes: usize,
    /// How long a connection may take to send a request's head, counted
    /// from when the service starts waiting for it: so also how long an
    /// idle keep-alive connection is kept. Then it is closed. Default 10 s.
    pub header_timeout: Duration,
    /// How long a request's whole body may take to arrive (408 past it).
    /// Default 60 s.
    pub body_timeout: Duration,
    /// How long an answer may wait for a client that does not read it
    /// (a write making no progress); then the connection is closed.
    /// Default 60 s.
    pub write_timeout: Duration,
    /// Connections open at once. One more is answered 503 and closed.
    /// Default 1,024 (keep it under the process's file limit).
    pub max_connections: usize,
    /// Event streams (`compaction/events`) one tenant may hold open
    /// (429 past it). Default 16.
    pub event_streams_per_tenant: usize,
    /// How long shutdown waits for open connections (requests in flight,
    /// event streams ending) before it drops them. Default 60 s.
    pub shutdown_timeout: Duration,
    /// Sessions kept open in memory at once (each holds its log, and on
    /// files two descriptors). The least recently used idle one is closed
    /// to open another; when none is idle the request answers 503.
    /// Default 256.
    pub open_sessions: usize,
    /// A session unused this long is closed (its next request opens it
    /// again). Default 10 minutes.
    pub session_idle: Duration,
    /// Sessions one tenant may have (403 `quota_exceeded` past it).
    /// Default 10,000.
    pub sessions_per_tenant: u64,
    /// Bytes one session's log may hold (403 past it). Default 1 GiB.
    pub session_bytes: u64,
    /// Bytes all of one tenant's sessions may hold together (403 past
    /// it). Default 10 GiB.
    pub tenant_bytes: u64,
    /// Heavy reads (`report`, `recall`: they read the whole log) built
    /// at once, off the async workers; one tenant runs one at a time, so
    /// another tenant always finds a turn. Default 2.
    pub heavy_reads: usize,
}

impl Default for ServiceLimits {
    fn default() -> Self {
        ServiceLimits {
            body_bytes: DEFAULT_BODY_LIMIT,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(60),
            write_timeout: Duration::from_secs(60),
            max_connections: 1024,
            event_streams_per_tenant: 16,
            shutdown_timeout: Duration::from_secs(60),
            open_sessions: 256,
            session_idle: Duration::from_secs(600),
            sessions_per_tenant: 10_000,
            session_bytes: 1 << 30,
            tenant_bytes: 10 << 30,
            heavy_reads: 2,
        }
    }
}

/// A limit set outside its bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting} = {value} is out of bounds: use {min} to {max}")]
pub struct LimitError {
    /// The setting (its flag name without `--`).
    pub setting: &'static str,
    /// The value given.
    pub value: String,
    /// The smallest value accepted.
    pub min: String,
    /// The largest value accepted.
    pub max: String,
}

impl ServiceLimits {
    /// Checks every limit against its bounds.
    ///
    /// # Errors
    /// [`LimitError`] naming the first setting out of bounds.
    pub fn check(&self) -> Result<(), LimitError> {
        const SECOND: Duration = Duration::from_secs(1);
        const HOUR: Duration = Duration::from_secs(3600);
        count("max-body-bytes", self.body_bytes as u64, 1024, 1 << 30)?;
        span("header-timeout", self.header_timeout, SECOND, HOUR)?;
        span("body-timeout", self.body_timeout, SECOND, HOUR)?;
        span("write-timeout", self.write_timeout, SECOND, HOUR)?;
        count("max-connections", self.max_connections as u64, 1, 1 << 20)?;
        count(
            "event-streams-per-tenant",
            self.event_streams_per_tenant as u64,
            1,
            1 << 16,
        )?;
        span(
            "shutdown-timeout",
            self.shutdown_timeout,
            Duration::ZERO,
            HOUR,
        )?;
        count("open-sessions", self.open_sessions as u64, 1, 1 << 20)?;
        span("session-idle", self.session_idle, SECOND, 24 * HOUR)?;
        count("sessions-per-tenant", self.sessions_per_tenant, 1, 1 << 32)?;
        count("session-bytes", self.session_bytes, 1 << 20, 1 << 50)?;
        count("tenant-bytes", self.tenant_bytes, 1 << 20, 1 << 50)?;
        count("heavy-reads", self.heavy_reads as u64, 1, 1024)?;
        Ok(())
    }
}

fn count(setting: &'static str, value: u64, min: u64, max: u64) -> Result<(), LimitError> {
    if (min..=max).contains(&value) {
        return Ok(());
    }
    Err(LimitError {
        setting,
        value: value.to_string(),
        min: min.to_string(),
        max: max.to_string(),
    })
}

fn span(
    setting: &'static str,
    value: Duration,
    min: Duration,
    max: Duration,
) -> Result<(), LimitError> {
    if (min..=max).contains(&value) {
        return Ok(());
    }
    Err(LimitError {
        setting,
        value: format!("{} s", value.as_secs_f64()),
        min: format!("{} s", min.as_secs()),
        max: format!("{} s", max.as_secs()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_within_bounds() {
        ServiceLimits::default().check().expect("defaults");
    }

    #[test]
    fn a_limit_out_of_bounds_is_named() {
        let limits = ServiceLimits {
            max_connections: 0,
            ..ServiceLimits::default()
        };
        assert_eq!(
            limits.check().unwrap_err().to_string(),
            "max-connections = 0 is out of bounds: use 1 to 1048576"
        );
        let limits = ServiceLimits {
            header_timeout: Duration::from_millis(10),
            ..ServiceLimits::default()
        };
        assert_eq!(limits.check().unwrap_err().setting, "header-timeout",);
    }
}
