//! `abridge serve`: the HTTP service (crate abridge-serve) on a local
//! address. This command only reads the flags, the tokens and the
//! settings file, and builds the summarizer the same way `compact --llm`
//! does.

use std::path::Path;
use std::path::PathBuf;
use std::time::Duration;

use abridge::Settings;
use abridge_serve::Service;
use abridge_serve::ServiceConfig;
use abridge_serve::ServiceLimits;
use abridge_serve::Tokens;
use anyhow::Context as _;
use anyhow::bail;

use crate::methods;

/// Arguments of `abridge serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Address to listen on (port 0 picks a free one; the address is
    /// printed on stderr).
    #[arg(long, default_value = "127.0.0.1:8787")]
    listen: String,
    /// Where sessions live: a directory (JSONL files, one directory per
    /// tenant; one worker) or a postgres:// URL, optionally ending in
    /// `#SCHEMA` (several workers may share it; see docs/serve.md).
    #[arg(long, value_name = "DIR_OR_URL")]
    store: String,
    /// Bearer tokens: one `TOKEN TENANT` per line, or a JSON object
    /// mapping tokens to tenants (see docs/serve.md).
    #[arg(long, value_name = "FILE")]
    tokens_file: Option<PathBuf>,
    /// Name of an environment variable holding tokens in the same form
    /// as the file (for one: `TOKEN TENANT`).
    #[arg(long, value_name = "VAR")]
    tokens_env: Option<String>,
    /// Model of sessions created without one (priced and compacted for).
    #[arg(long, default_value = "unknown")]
    model: String,
    /// Settings of sessions created without their own (TOML, or JSON by
    /// extension).
    #[arg(long, value_name = "FILE")]
    settings: Option<PathBuf>,
    /// Seconds running compactions get to finish at shutdown before they
    /// are aborted (and recorded as cancelled).
    #[arg(long, default_value_t = abridge_serve::DEFAULT_GRACE.as_secs())]
    grace: u64,
    #[command(flatten)]
    limits: Limits,
    #[command(flatten)]
    llm: methods::LlmArgs,
}

/// What one client or tenant may take (docs/serve.md, "Security"); each
/// flag's default is the library's ([`ServiceLimits`]).
#[derive(Debug, clap::Args)]
struct Limits {
    /// Largest request body in bytes (larger ones get 413).
    #[arg(long, default_value_t = ServiceLimits::default().body_bytes)]
    max_body_bytes: usize,
    /// Seconds a connection may take to send a request's head; also how
    /// long an idle keep-alive connection is kept.
    #[arg(long, value_name = "SECS", default_value_t = ServiceLimits::default().header_timeout.as_secs())]
    header_timeout: u64,
    /// Seconds a request's body may take to arrive (408 past it).
    #[arg(long, value_name = "SECS", default_value_t = ServiceLimits::default().body_timeout.as_secs())]
    body_timeout: u64,
    /// Seconds an answer may wait on a client that reads nothing before
    /// its connection is closed.
    #[arg(long, value_name = "SECS", default_value_t = ServiceLimits::default().write_timeout.as_secs())]
    write_timeout: u64,
    /// Connections open at once; one more is answered 503 and closed.
    #[arg(long, default_value_t = ServiceLimits::default().max_connections)]
    max_connections: usize,
    /// Event streams one tenant may hold open (429 past it).
    #[arg(long, default_value_t = ServiceLimits::default().event_streams_per_tenant)]
    event_streams_per_tenant: usize,
    /// Seconds shutdown waits for open connections before dropping them.
    #[arg(long, value_name = "SECS", default_value_t = ServiceLimits::default().shutdown_timeout.as_secs())]
    shutdown_timeout: u64,
    /// Sessions kept open in memory at once (the least recently used idle
    /// one is closed to open another).
    #[arg(long, default_value_t = ServiceLimits::default().open_sessions)]
    open_sessions: usize,
    /// Seconds after which an unused session is closed.
    #[arg(long, value_name = "SECS", default_value_t = ServiceLimits::default().session_idle.as_secs())]
    session_idle: u64,
    /// Sessions one tenant may have (403 past it).
    #[arg(long, default_value_t = ServiceLimits::default().sessions_per_tenant)]
    sessions_per_tenant: u64,
    /// Bytes one session's log may hold (403 past it).
    #[arg(long, default_value_t = ServiceLimits::default().session_bytes)]
    session_bytes: u64,
    /// Bytes all of one tenant's sessions may hold (403 past it).
    #[arg(long, default_value_t = ServiceLimits::default().tenant_bytes)]
    tenant_bytes: u64,
    /// Heavy reads (report, recall: they read the whole log) built at
    /// once; one per tenant.
    #[arg(long, default_value_t = ServiceLimits::default().heavy_reads)]
    heavy_reads: usize,
}

impl Limits {
    fn limits(&self) -> ServiceLimits {
        let secs = Duration::from_secs;
        ServiceLimits {
            body_bytes: self.max_body_bytes,
            header_timeout: secs(self.header_timeout),
            body_timeout: secs(self.body_timeout),
            write_timeout: secs(self.write_timeout),
            max_connections: self.max_connections,
            event_streams_per_tenant: self.event_streams_per_tenant,
            shutdown_timeout: secs(self.shutdown_timeout),
            open_sessions: self.open_sessions,
            session_idle: secs(self.session_idle),
            sessions_per_tenant: self.sessions_per_tenant,
            session_bytes: self.session_bytes,
            tenant_bytes: self.tenant_bytes,
            heavy_reads: self.heavy_reads,
        }
    }
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let limits = args.limits.limits();
    limits.check()?;
    let tokens = tokens(args)?;
    let stores = abridge_serve::open_stores(&args.store)?;
    let registry = crate::registry::registry();
    let settings = match &args.settings {
        Some(path) => Settings::load_using(path, registry)?,
        None => Settings::default(),
    };
    let order: Vec<String> = registry.names().into_iter().map(str::to_string).collect();
    let sources = methods::sources(&args.llm, &args.model, &order, false)?;
    let config = ServiceConfig {
        sources,
        settings,
        methods: registry.clone(),
        model: args.model.clone(),
        limits,
        grace: Duration::from_secs(args.grace),
        ..ServiceConfig::new(stores, tokens)
    };
    let service = Service::new(config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        eprintln!(
            "abridge serve: listening on http://{}",
            listener.local_addr()?
        );
        let report = service
            .run(listener, abridge_serve::shutdown_signal())
            .await?;
        eprintln!(
            "abridge serve: stopped ({} compaction(s) running at shutdown, {} aborted; {} session(s) synced)",
            report.compactions.running, report.compactions.aborted, report.sessions_synced
        );
        Ok(())
    })
}

/// The tokens from `--tokens-file` and/or `--tokens-env`.
fn tokens(args: &Args) -> anyhow::Result<Tokens> {
    let mut texts = Vec::new();
    if let Some(path) = &args.tokens_file {
        texts.push((read_tokens_file(path)?, path.display().to_string()));
    }
    if let Some(var) = &args.tokens_env {
        match std::env::var(var) {
            Ok(text) if !text.trim().is_empty() => texts.push((text, format!("${var}"))),
            _ => bail!("--tokens-env {var}: that environment variable is not set or empty"),
        }
    }
    let mut all = Tokens::default();
    if texts.is_empty() {
        bail!("abridge serve needs tokens: pass --tokens-file FILE or --tokens-env VAR");
    }
    for (text, origin) in texts {
        let tokens = Tokens::parse(&text, &origin)?;
        all.merge(tokens, &origin)?;
    }
    Ok(all)
}

/// The tokens file's text, refused when others than its owner may read
/// or write it.
fn read_tokens_file(path: &Path) -> anyhow::Result<String> {
    let file = std::fs::File::open(path)
        .with_context(|| format!("cannot read the tokens file {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = file
            .metadata()
            .with_context(|| format!("cannot read the tokens file {}", path.display()))?
            .permissions()
            .mode();
        Tokens::check_file_mode(&path.display().to_string(), mode)?;
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut &file, &mut text)
        .with_context(|| format!("cannot read the tokens file {}", path.display()))?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Issue 28: a tokens file anyone could read was loaded without a word.
    #[cfg(unix)]
    #[test]
    fn a_tokens_file_others_can_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("tokens.txt");
        std::fs::write(&path, "token-of-team-a-0123456789 team-a\n").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let error = read_tokens_file(&path).unwrap_err().to_string();
        assert!(error.contains("chmod 600"), "{error}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert!(read_tokens_file(&path).expect("private").contains("team-a"));
    }
}
