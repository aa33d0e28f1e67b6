//! How each built-in method is built from what the host configured (the
//! table that names them is [`registry`](crate::registry)), or why it
//! cannot be.

use std::path::PathBuf;
use std::sync::Arc;

use abridge_compact::CompactionMethod;
use abridge_compact_basic::DigestMethod;
use abridge_compact_basic::HandoffConfig;
use abridge_compact_basic::SoftConfig;
use abridge_compact_basic::SoftSetup;
use abridge_llm::Catalog;
use abridge_llm::LlmClient;
use abridge_llm::RetryPolicy;
use abridge_prune::ArtifactStore;
use abridge_prune::MaskConfig;
use abridge_prune::MemoryArtifactStore;
use abridge_prune::ReclaimConfig;

use crate::settings::Settings;

/// A model that writes summaries (`soft`, `handoff`).
#[derive(Clone)]
pub struct SummarizerModel {
    /// The client to call.
    pub client: Arc<dyn LlmClient>,
    /// The model name sent with each request.
    pub model: String,
    /// Retries and the per-call timeout.
    pub retry: RetryPolicy,
    /// `soft`'s input window and output cap.
    pub soft: SoftConfig,
    /// Where `handoff` saves its document as Markdown, if anywhere.
    pub handoff_file: Option<PathBuf>,
    /// `handoff`'s output cap; `None`: its default.
    pub handoff_max_tokens: Option<u32>,
}

impl std::fmt::Debug for SummarizerModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SummarizerModel")
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

/// What the methods of the order are built from. Anything left `None`
/// makes the methods that need it "not configured".
#[derive(Debug, Clone)]
pub struct MethodSources {
    /// The model the session talks to (snapcompact draws frames for it).
    pub model: String,
    /// The catalog to look models up in.
    pub catalog: Catalog,
    /// The summarizer for `soft` and `handoff`.
    pub summarizer: Option<SummarizerModel>,
    /// A ready `remote` method (a summary endpoint or provider-native
    /// compaction), built by the host that knows the endpoint.
    pub remote: Option<Arc<dyn CompactionMethod>>,
    /// Where older logs' `artifact://` references are read from (shake
    /// wrote them before it named `recall://` parts of the log instead).
    pub artifacts: Arc<dyn ArtifactStore>,
}

impl MethodSources {
    /// Sources for `model` with nothing configured but an in-memory
    /// artifact store: the model-free methods only.
    pub fn offline(model: impl Into<String>) -> Self {
        MethodSources {
            model: model.into(),
            catalog: Catalog::builtin(),
            summarizer: None,
            remote: None,
            artifacts: Arc::new(MemoryArtifactStore::default()),
        }
    }
}

/// A method built, or why it could not be (shown as "NAME skipped:
/// REASON").
pub type BuildResult = Result<Arc<dyn CompactionMethod>, String>;

/// What a method is built from: the settings (its knobs) and the sources
/// the host configured (models, endpoints, stores).
#[derive(Debug, Clone, Copy)]
pub struct MethodContext<'a> {
    /// The settings the order comes from.
    pub settings: &'a Settings,
    /// The models and stores the host configured.
    pub sources: &'a MethodSources,
}

/// `prune`, `mask`, `shake` and `trim`, from their settings.
pub(crate) fn reclaim(name: &str, context: MethodContext<'_>) -> BuildResult {
    let settings = context.settings;
    let reclaim = ReclaimConfig {
        prune: settings.prune.clone(),
        mask: MaskConfig {
            keep: settings.mask_keep,
            protected_tools: settings.prune.protected_tools.clone(),
            ..MaskConfig::default()
        },
        shake: settings.shake.clone(),
        trim: settings.trim.clone(),
    };
    match reclaim.method(name) {
        Some(Ok(method)) => Ok(method),
        Some(Err(error)) => Err(error.to_string()),
        None => Err("not a reclaim method".to_string()),
    }
}

/// `digest`: needs nothing.
pub(crate) fn digest(_name: &str, _context: MethodContext<'_>) -> BuildResult {
    Ok(Arc::new(DigestMethod))
}

/// `snapcompact`, drawing for the session's model.
#[cfg(feature = "snapcompact")]
pub(crate) fn snapcompact(_name: &str, context: MethodContext<'_>) -> BuildResult {
    let sources = context.sources;
    Ok(Arc::new(abridge_snapcompact::Snapcompact::new(
        &sources.model,
        &sources.catalog,
    )))
}

/// `snapcompact` without its renderer: named, but never built.
#[cfg(not(feature = "snapcompact"))]
pub(crate) fn snapcompact(_name: &str, _context: MethodContext<'_>) -> BuildResult {
    Err("abridge was built without its `snapcompact` feature".to_string())
}

/// `soft`, from the summarizer.
pub(crate) fn soft(_name: &str, context: MethodContext<'_>) -> BuildResult {
    let s = summarizer(context)?;
    Ok(abridge_compact_basic::soft_method(
        s.client.clone(),
        s.model.clone(),
        SoftSetup {
            soft: s.soft,
            prefix: None,
            retry: s.retry.clone(),
            fallbacks: Vec::new(),
        },
    ))
}

/// `handoff`, from the summarizer.
pub(crate) fn handoff(_name: &str, context: MethodContext<'_>) -> BuildResult {
    let s = summarizer(context)?;
    Ok(abridge_compact_basic::handoff_method(
        s.client.clone(),
        s.model.clone(),
        HandoffConfig {
            save_to: s.handoff_file.clone(),
            retry: s.retry.clone(),
            max_tokens: s
                .handoff_max_tokens
                .unwrap_or(HandoffConfig::default().max_tokens),
            ..HandoffConfig::default()
        },
    ))
}

/// `remote`: the host built it, knowing the endpoint.
pub(crate) fn remote(_name: &str, context: MethodContext<'_>) -> BuildResult {
    context
        .sources
        .remote
        .clone()
        .ok_or_else(|| "no remote summarizer endpoint is configured".to_string())
}

fn summarizer(context: MethodContext<'_>) -> Result<&SummarizerModel, String> {
    context
        .sources
        .summarizer
        .as_ref()
        .ok_or_else(|| "no summarizer model is configured".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_is_built_from_the_settings_order() {
        let settings = Settings {
            method_order: vec!["mask".to_string(), "digest".to_string()],
            mask_keep: 3,
            ..Settings::default()
        };
        let crate::MethodSet { methods, skipped } =
            crate::registry::builtin().build(&settings, &MethodSources::offline("gpt-4o"));
        assert!(skipped.is_empty(), "{skipped:?}");
        let names: Vec<&str> = methods.iter().map(|m| m.name()).collect();
        assert_eq!(names, ["mask", "digest"]);
    }
}
