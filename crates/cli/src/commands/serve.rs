//! `abridge serve`: the HTTP service (crate abridge-serve) on a local
//! address. This command only reads the flags, the tokens and the
//! settings file, and builds the summarizer the same way `compact --llm`
//! does.

use std::path::PathBuf;
use std::time::Duration;

use abridge::Settings;
use abridge_serve::Service;
use abridge_serve::ServiceConfig;
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
    /// Largest request body in bytes (larger ones get 413).
    #[arg(long, default_value_t = abridge_serve::DEFAULT_BODY_LIMIT)]
    max_body_bytes: usize,
    /// Seconds running compactions get to finish at shutdown before they
    /// are aborted (and recorded as cancelled).
    #[arg(long, default_value_t = abridge_serve::DEFAULT_GRACE.as_secs())]
    grace: u64,
    #[command(flatten)]
    llm: methods::LlmArgs,
}

pub(crate) fn run(args: &Args) -> anyhow::Result<()> {
    let tokens = tokens(args)?;
    let stores = abridge_serve::open_stores(&args.store)?;
    let settings = match &args.settings {
        Some(path) => Settings::load(path)?,
        None => Settings::default(),
    };
    let order: Vec<String> = abridge::KNOWN_METHODS
        .iter()
        .map(|m| (*m).to_string())
        .collect();
    let sources = methods::sources(&args.llm, &args.model, &order, false)?;
    let config = ServiceConfig {
        sources,
        settings,
        model: args.model.clone(),
        body_limit: args.max_body_bytes,
        grace: Duration::from_secs(args.grace),
        ..ServiceConfig::new(stores, tokens)
    };
    let service = Service::new(config);
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
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the tokens file {}", path.display()))?;
        texts.push((text, path.display().to_string()));
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
