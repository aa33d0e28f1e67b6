//! `abridge proxy`: the proxy (crate abridge-proxy) on a local address,
//! between an unmodified agent and its model endpoint. This command only
//! reads the flags and the settings file, and builds the summarizer the
//! same way `serve` and `compact --llm` do (its own key, from
//! `--api-key-env`; never one of the agent's keys passing through).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use abridge::Settings;
use abridge_proxy::Proxy;
use abridge_proxy::ProxyConfig;
use abridge_proxy::Upstreams;
use abridge_serve::ServiceLimits;
use anyhow::Context as _;

use crate::methods;

/// Arguments of `abridge proxy`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Address to listen on: loopback unless --allow-remote (port 0 picks
    /// a free one; the address is printed on stderr).
    #[arg(long, default_value = "127.0.0.1:8788")]
    listen: SocketAddr,
    /// Listen on an address off loopback. The proxy forwards API keys and
    /// has no authentication of its own: put it behind your own.
    #[arg(long)]
    allow_remote: bool,
    /// Where proxy sessions are logged: a directory (JSONL files under
    /// `DIR/proxy/`) or a postgres:// URL.
    #[arg(long, value_name = "DIR_OR_URL")]
    store: String,
    /// Settings for every conversation (TOML, or JSON by extension).
    #[arg(long, value_name = "FILE")]
    settings: Option<PathBuf>,
    /// Where requests go: `anthropic=URL` and/or `openai=URL`, the URL
    /// the request's path is appended to (for example
    /// `anthropic=https://api.anthropic.com`).
    #[arg(long, value_name = "NAME=URL", required = true)]
    upstream: Vec<String>,
    /// Context window to keep requests under, in tokens (default: the
    /// model's, from the catalog).
    #[arg(long)]
    window: Option<u64>,
    /// Model to measure sessions for (default: each request's `model`).
    #[arg(long)]
    model: Option<String>,
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
    /// Connections open at once; one more is answered 503 and closed.
    #[arg(long, default_value_t = ServiceLimits::default().max_connections)]
    max_connections: usize,
    #[command(flatten)]
    llm: methods::LlmArgs,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    abridge_proxy::check_listen(&args.listen, args.allow_remote)?;
    let upstreams = Upstreams::parse(&args.upstream)?;
    let stores = abridge_proxy::open_stores(&args.store)?;
    let registry = crate::registry::registry();
    let settings = match &args.settings {
        Some(path) => Settings::load_using(path, registry)?,
        None => Settings::default(),
    };
    // As serve: every method the registry knows may be named, and each
    // session's model replaces this one (the proxy learns it per request).
    let order: Vec<String> = registry.names().into_iter().map(str::to_string).collect();
    let model = args.model.as_deref().unwrap_or("unknown");
    let sources = methods::sources(&args.llm, model, &order, false)?;
    let limits = ServiceLimits {
        body_bytes: args.max_body_bytes,
        header_timeout: Duration::from_secs(args.header_timeout),
        body_timeout: Duration::from_secs(args.body_timeout),
        max_connections: args.max_connections,
        ..ServiceLimits::default()
    };
    let config = ProxyConfig {
        settings,
        methods: registry.clone(),
        sources,
        window: args.window,
        model: args.model.clone(),
        limits,
        ..ProxyConfig::new(stores, upstreams)
    };
    let proxy = Proxy::new(config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen)
            .await
            .with_context(|| format!("cannot listen on {}", args.listen))?;
        eprintln!(
            "abridge proxy: listening on http://{}",
            listener.local_addr()?
        );
        proxy.run(listener, abridge_serve::shutdown_signal()).await;
        eprintln!("abridge proxy: stopped");
        Ok(())
    })
}
