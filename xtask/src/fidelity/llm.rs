//! The LLM mode: each method compacts a copy of the point with a real
//! model behind the model-backed methods, then the probes are asked of
//! that model over the context the next request would send.

use std::sync::Arc;
use std::time::Duration;

use abridge::Harness;
use abridge::MethodSources;
use abridge::PassStatus;
use abridge::SummarizerModel;
use abridge_compact_basic::RemoteConfig;
use abridge_compact_basic::RemoteKind;
use abridge_compact_basic::SoftConfig;
use abridge_llm::LlmClient;
use abridge_llm::RetryPolicy;
use abridge_providers::ProviderConfig;
use abridge_providers::ProviderKind;
use anyhow::Context;
use anyhow::bail;

use super::ask::Answer;
use super::ask::AskLimits;
use super::ask::ask_all;
use super::counting::Counting;
use super::key::Key;
use super::point::MODEL;
use super::point::Point;
use super::point::harness_sourced;
use super::run::REAL;

/// Every method the LLM mode can run, by its row label and the names a
/// manual pass is given (empty: the default order).
pub(crate) const LLM_METHODS: &[(&str, &[&str])] = &[
    ("digest", &["digest"]),
    ("prune", &["prune"]),
    ("mask", &["mask"]),
    ("snapcompact", &["snapcompact"]),
    ("soft", &["soft"]),
    ("handoff", &["handoff"]),
    ("remote", &["remote"]),
    ("default order", &[]),
];

/// The label `--methods` uses for the default order.
pub(crate) const DEFAULT_ORDER: &str = "default";

/// How to reach the model and what to ask it.
#[derive(Debug, Clone)]
pub(crate) struct LlmOptions {
    /// Base URL of an OpenAI-compatible endpoint.
    pub(crate) url: String,
    /// The model to ask for.
    pub(crate) model: String,
    /// The environment variable holding the API key, if any.
    pub(crate) api_key_env: Option<String>,
    /// The row labels to run (`None`: all of [`LLM_METHODS`]).
    pub(crate) methods: Option<Vec<String>>,
    /// Tokens of history per summarizer call.
    pub(crate) input_tokens: Option<u64>,
    /// Cap on a summary's length.
    pub(crate) max_output: Option<u32>,
    /// Cap on an answer's length.
    pub(crate) answer_tokens: u32,
    /// Time one call may take.
    pub(crate) timeout: Duration,
    /// Only the first this many messages of each session (`--messages`):
    /// a cut a small model can be asked about. The session's own
    /// compaction, past the cut, is then not graded.
    pub(crate) messages: Option<usize>,
}

impl LlmOptions {
    /// Options with the defaults for everything but the endpoint.
    pub(crate) fn new(url: &str, model: &str) -> Self {
        LlmOptions {
            url: url.to_string(),
            model: model.to_string(),
            api_key_env: None,
            methods: None,
            input_tokens: None,
            max_output: None,
            answer_tokens: 400,
            timeout: Duration::from_secs(300),
            messages: None,
        }
    }

    /// The methods to run, in table order; fails on a name it does not
    /// know, so a typo is not a silently empty table.
    pub(crate) fn selected(&self) -> anyhow::Result<Vec<(&'static str, &'static [&'static str])>> {
        let Some(names) = &self.methods else {
            return Ok(LLM_METHODS.to_vec());
        };
        for name in names {
            let known = name == DEFAULT_ORDER || LLM_METHODS.iter().any(|(n, _)| n == name);
            if !known {
                bail!(
                    "--methods {name}: expected one of digest, prune, mask, snapcompact, soft, handoff, remote, {DEFAULT_ORDER}"
                );
            }
        }
        Ok(LLM_METHODS
            .iter()
            .filter(|(label, _)| {
                names
                    .iter()
                    .any(|n| n == label || (n == DEFAULT_ORDER && label.starts_with(DEFAULT_ORDER)))
            })
            .copied()
            .collect())
    }

    fn key(&self) -> anyhow::Result<Option<String>> {
        let Some(var) = &self.api_key_env else {
            return Ok(None);
        };
        match std::env::var(var) {
            Ok(key) if !key.is_empty() => Ok(Some(key)),
            _ => bail!("--api-key-env {var}: that environment variable is not set or empty"),
        }
    }

    /// The project's own chat client for the endpoint.
    pub(crate) fn client(&self) -> anyhow::Result<Arc<dyn LlmClient>> {
        let mut config =
            ProviderConfig::new(self.url.clone()).with_default_model(self.model.clone());
        if let Some(key) = self.key()? {
            config = config.with_api_key(key);
        }
        ProviderKind::OpenAiChat
            .client(config)
            .with_context(|| format!("--llm {}", self.url))
    }

    fn retry(&self) -> RetryPolicy {
        RetryPolicy {
            max_attempts: 2,
            timeout: Some(self.timeout),
            ..RetryPolicy::default()
        }
    }

    fn soft(&self) -> SoftConfig {
        let mut soft = SoftConfig::default();
        if let Some(tokens) = self.input_tokens {
            soft.input_window_tokens = tokens;
        }
        if let Some(tokens) = self.max_output {
            soft.max_summary_tokens = tokens;
        }
        soft
    }

    /// What the methods are built from: `summarizer` behind soft and
    /// handoff, and a chat-completions remote on the same endpoint when
    /// `remote` is wanted.
    fn sources(
        &self,
        summarizer: Arc<dyn LlmClient>,
        remote: bool,
    ) -> anyhow::Result<MethodSources> {
        let mut sources = MethodSources::offline(MODEL);
        sources.summarizer = Some(SummarizerModel {
            client: summarizer,
            model: self.model.clone(),
            retry: self.retry(),
            soft: self.soft(),
            handoff_file: None,
            handoff_max_tokens: self.max_output,
        });
        if remote {
            let mut config = RemoteConfig::new(
                RemoteKind::ChatCompletions,
                self.url.clone(),
                self.model.clone(),
            );
            config.api_key = self.key()?.map(abridge_providers::ApiKey::new);
            config.retry = self.retry();
            config.soft = self.soft();
            sources.remote = Some(abridge_compact_basic::remote_method(config)?);
        }
        Ok(sources)
    }
}

/// One method's context, asked.
pub(crate) struct LlmGraded {
    /// The row label (or [`REAL`]).
    pub(crate) method: String,
    /// The methods that landed; empty when the pass changed nothing.
    pub(crate) landed: Vec<String>,
    /// How the pass ended, or why it could not run; `None` for the
    /// agent's own summary.
    pub(crate) status: Option<String>,
    /// Tokens the next request costs.
    pub(crate) tokens: u64,
    /// Calls the pass made to the summarizing model (soft, handoff).
    pub(crate) compaction_calls: usize,
    /// Questions sent.
    pub(crate) questions: usize,
    /// Each probe's grade, in the key's order.
    pub(crate) answers: Vec<Answer>,
    /// Failed questions, each with its category and why.
    pub(crate) errors: Vec<String>,
}

/// Every selected method at `point`, then the session's own compaction,
/// each context asked every category of `key`.
pub(crate) async fn run_all(
    point: Point,
    key: &Key,
    options: &LlmOptions,
    client: &Arc<dyn LlmClient>,
) -> anyhow::Result<Vec<LlmGraded>> {
    let limits = AskLimits {
        answer_tokens: options.answer_tokens,
        timeout: options.timeout,
    };
    let mut out = Vec::new();
    for (label, methods) in options.selected()? {
        let counting = Arc::new(Counting::new(client.clone()));
        let wants_remote = methods.is_empty() || methods.contains(&"remote");
        let sources = options.sources(counting.clone(), wants_remote)?;
        let harness = harness_sourced(
            point.settings.clone(),
            methods,
            point.window,
            &point.prefix,
            Some(sources),
        )?;
        let names: Vec<String> = methods.iter().map(|m| (*m).to_string()).collect();
        let (landed, status) = match harness.compact(&names, None).await {
            Ok(pass) if pass.status == PassStatus::NotNeeded => {
                (Vec::new(), format!("{:?}", pass.status))
            }
            Ok(pass) => {
                let mut status = format!("{:?}", pass.status);
                for failure in &pass.failures {
                    status.push_str(&format!("; {} failed: {}", failure.method, failure.message));
                }
                (
                    pass.outcomes.iter().map(|o| o.method.clone()).collect(),
                    status,
                )
            }
            Err(error) => (Vec::new(), format!("error: {error}")),
        };
        let calls = counting.calls();
        out.push(
            asked(
                label,
                landed,
                Some(status),
                calls,
                &harness,
                key,
                options,
                client,
                limits,
            )
            .await?,
        );
    }
    if let Some(real) = point.real {
        let harness = Harness::builder(real.session, MODEL)
            .settings(point.settings.clone())
            .window(point.window)
            .build()?;
        let landed = vec!["(imported)".to_string()];
        out.push(
            asked(
                REAL, landed, None, 0, &harness, key, options, client, limits,
            )
            .await?,
        );
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
async fn asked(
    method: &str,
    landed: Vec<String>,
    status: Option<String>,
    compaction_calls: usize,
    harness: &Harness,
    key: &Key,
    options: &LlmOptions,
    client: &Arc<dyn LlmClient>,
    limits: AskLimits,
) -> anyhow::Result<LlmGraded> {
    let context = harness.request()?;
    let asked = ask_all(client.as_ref(), &options.model, &context, key, limits).await;
    Ok(LlmGraded {
        method: method.to_string(),
        landed,
        status,
        tokens: harness.tokens(),
        compaction_calls,
        questions: asked.questions,
        answers: asked.answers,
        errors: asked.errors,
    })
}
