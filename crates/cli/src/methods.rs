//! Building compaction methods from their names and the command line's
//! model flags.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use abridge::CountEndpoint;
use abridge::MethodSources;
use abridge::SummarizerModel;
use abridge_compact_basic::RemoteConfig;
use abridge_compact_basic::RemoteKind;
use abridge_compact_basic::SoftConfig;
use abridge_llm::LlmClient;
use abridge_llm::RetryPolicy;
use abridge_providers::CountTokensClient;
use abridge_providers::ProviderConfig;
use abridge_providers::ProviderKind;
use abridge_prune::MemoryArtifactStore;
use anyhow::bail;

/// How to reach a summarizing model.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct LlmArgs {
    /// Base URL of the model endpoint (for example http://127.0.0.1:8080/v1).
    #[arg(long, value_name = "URL")]
    llm: Option<String>,
    /// Model name to ask the endpoint for.
    #[arg(long, value_name = "NAME")]
    llm_model: Option<String>,
    /// The endpoint's protocol: openai-chat (also llama.cpp, vLLM, Ollama),
    /// openai-responses, or anthropic.
    #[arg(long, default_value = "openai-chat")]
    provider: String,
    /// Name of the environment variable holding the API key (the key itself
    /// is never taken on the command line). Also `--llm-key-env`.
    #[arg(long, value_name = "VAR", alias = "llm-key-env")]
    api_key_env: Option<String>,
    /// Tokens of history per summarizer call (lower it for small models).
    #[arg(long, value_name = "TOKENS")]
    llm_input_tokens: Option<u64>,
    /// Cap on the summary's length in tokens.
    #[arg(long, value_name = "TOKENS")]
    llm_max_output: Option<u32>,
    /// Seconds to wait for one call before it counts as failed.
    #[arg(long, default_value_t = 300)]
    llm_timeout: u64,
    /// Attempts per call (transient failures are retried with backoff).
    #[arg(long, default_value_t = 3)]
    llm_attempts: u32,
    /// For `--method remote`: endpoint (a {system_prompt, prompt,
    /// max_tokens} -> {summary} service), chat, responses-compact, or
    /// anthropic.
    #[arg(long, default_value = "chat")]
    remote: String,
    /// For `--method handoff`: also write the handoff document here.
    #[arg(long, value_name = "FILE")]
    handoff_file: Option<PathBuf>,
}

impl LlmArgs {
    fn key(&self) -> anyhow::Result<Option<String>> {
        let Some(var) = &self.api_key_env else {
            return Ok(None);
        };
        match std::env::var(var) {
            Ok(key) if !key.is_empty() => Ok(Some(key)),
            _ => bail!("--api-key-env {var}: that environment variable is not set or empty"),
        }
    }

    fn endpoint(&self, method: &str) -> anyhow::Result<(String, String)> {
        let Some(url) = &self.llm else {
            bail!("--method {method} needs a model: pass --llm URL (and --llm-model NAME)");
        };
        let model = self.llm_model.clone().unwrap_or_default();
        Ok((url.clone(), model))
    }

    fn retry(&self) -> RetryPolicy {
        RetryPolicy {
            max_attempts: self.llm_attempts.max(1),
            timeout: Some(Duration::from_secs(self.llm_timeout.max(1))),
            ..RetryPolicy::default()
        }
    }

    fn soft_config(&self) -> SoftConfig {
        let mut soft = SoftConfig::default();
        if let Some(tokens) = self.llm_input_tokens {
            soft.input_window_tokens = tokens;
        }
        if let Some(tokens) = self.llm_max_output {
            soft.max_summary_tokens = tokens;
        }
        soft
    }

    /// Anthropic's token-counting endpoint, when the endpoint given is
    /// Anthropic's and a key is set: new messages are then priced by the
    /// provider's own count instead of the corrected estimate. `None`
    /// otherwise (no other provider has such an endpoint).
    pub(crate) fn count_endpoint(&self) -> anyhow::Result<Option<Arc<dyn CountEndpoint>>> {
        let Some(url) = &self.llm else {
            return Ok(None);
        };
        // The provider names `--provider` accepts have one owner.
        if !matches!(self.provider.parse(), Ok(ProviderKind::Anthropic)) {
            return Ok(None);
        }
        let Some(key) = self.key()? else {
            return Ok(None);
        };
        let config = ProviderConfig::new(url.clone()).with_api_key(key);
        let client =
            CountTokensClient::new(config).map_err(|e| anyhow::anyhow!("--llm {url}: {e}"))?;
        Ok(Some(Arc::new(client)))
    }

    fn client(&self, method: &str) -> anyhow::Result<(Arc<dyn LlmClient>, String)> {
        let (url, model) = self.endpoint(method)?;
        let kind: ProviderKind = self
            .provider
            .parse()
            .map_err(|e| anyhow::anyhow!("--provider {}: {e}", self.provider))?;
        let mut config = ProviderConfig::new(url).with_default_model(model.clone());
        if let Some(key) = self.key()? {
            config = config.with_api_key(key);
        }
        Ok((kind.client(config)?, model))
    }
}

/// What the settings' method order is built from: the summarizer and
/// remote endpoint from the flags. No method writes beside the session
/// (shake names `recall://` parts of the log), so the artifact store, for
/// reading older logs' `artifact://` references, stays in memory.
pub(crate) fn sources(
    llm: &LlmArgs,
    model: &str,
    order: &[String],
    explicit: bool,
) -> anyhow::Result<MethodSources> {
    let wants = |name: &str| order.iter().any(|m| m == name);
    if explicit && llm.llm.is_none() {
        // Asked for by name, a model method without a model is a mistake
        // to report, not a method to skip.
        for name in ["soft", "handoff", "remote"] {
            if wants(name) {
                llm.endpoint(name)?;
            }
        }
    }
    let summarizer = if llm.llm.is_some() {
        let (client, model) = llm.client("soft")?;
        Some(SummarizerModel {
            client,
            model,
            retry: llm.retry(),
            soft: llm.soft_config(),
            handoff_file: llm.handoff_file.clone(),
            handoff_max_tokens: llm.llm_max_output,
        })
    } else {
        None
    };
    let remote = if wants("remote") && llm.llm.is_some() {
        let (url, model) = llm.endpoint("remote")?;
        let kind = match llm.remote.as_str() {
            "endpoint" => RemoteKind::Endpoint,
            "chat" => RemoteKind::ChatCompletions,
            "responses-compact" => RemoteKind::ResponsesCompact,
            "anthropic" => RemoteKind::AnthropicCompaction,
            other => {
                bail!("--remote {other}: expected endpoint, chat, responses-compact or anthropic")
            }
        };
        let mut config = RemoteConfig::new(kind, url, model);
        config.api_key = llm.key()?.map(abridge_providers::ApiKey::new);
        config.retry = llm.retry();
        config.soft = llm.soft_config();
        Some(abridge_compact_basic::remote_method(config)?)
    } else {
        None
    };
    Ok(MethodSources {
        model: model.to_string(),
        catalog: abridge_llm::Catalog::builtin(),
        summarizer,
        remote,
        artifacts: Arc::new(MemoryArtifactStore::default()),
    })
}

/// The line that says a method of the order did not run, and why. Most
/// skip messages already open with "<method> skipped"; the others get it.
pub(crate) fn skip_note(skip: &abridge::MethodFailure) -> String {
    if skip.message.starts_with(&format!("{} ", skip.method)) {
        skip.message.clone()
    } else {
        format!("{} skipped: {}", skip.method, skip.message)
    }
}
