//! Building the method order from settings: each named method is built
//! from what the host configured, or left out with a line saying why.

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
use abridge_compact::ErrorKind;
use abridge_compact::MethodFailure;

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

/// Builds `settings.method_order`: the methods that can be built, in
/// order, and a failure of kind `not_configured` for each that cannot.
pub fn build_methods(
    settings: &Settings,
    sources: &MethodSources,
) -> (Vec<Arc<dyn CompactionMethod>>, Vec<MethodFailure>) {
    let mut methods: Vec<Arc<dyn CompactionMethod>> = Vec::new();
    let mut skipped = Vec::new();
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
    for name in &settings.method_order {
        let built: Result<Arc<dyn CompactionMethod>, String> = match name.as_str() {
            "digest" => Ok(Arc::new(DigestMethod)),
            "prune" | "mask" | "shake" | "trim" => match reclaim.method(name) {
                Some(Ok(method)) => Ok(method),
                Some(Err(error)) => Err(error.to_string()),
                None => Err("not a reclaim method".to_string()),
            },
            #[cfg(feature = "snapcompact")]
            "snapcompact" => Ok(Arc::new(abridge_snapcompact::Snapcompact::new(
                &sources.model,
                &sources.catalog,
            ))),
            #[cfg(not(feature = "snapcompact"))]
            "snapcompact" => Err("abridge was built without its `snapcompact` feature".to_string()),
            "soft" => match &sources.summarizer {
                Some(s) => Ok(abridge_compact_basic::soft_method(
                    s.client.clone(),
                    s.model.clone(),
                    SoftSetup {
                        soft: s.soft,
                        prefix: None,
                        retry: s.retry.clone(),
                        fallbacks: Vec::new(),
                    },
                )),
                None => Err("no summarizer model is configured".to_string()),
            },
            "handoff" => match &sources.summarizer {
                Some(s) => Ok(abridge_compact_basic::handoff_method(
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
                )),
                None => Err("no summarizer model is configured".to_string()),
            },
            "remote" => sources
                .remote
                .clone()
                .ok_or_else(|| "no remote summarizer endpoint is configured".to_string()),
            other => Err(format!("unknown method {other:?}")),
        };
        match built {
            Ok(method) => methods.push(method),
            Err(reason) => {
                tracing::info!(method = %name, %reason, "method skipped");
                skipped.push(MethodFailure::new(
                    name.clone(),
                    ErrorKind::NotConfigured,
                    format!("{name} skipped: {reason}"),
                ));
            }
        }
    }
    (methods, skipped)
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
        let (methods, skipped) = build_methods(&settings, &MethodSources::offline("gpt-4o"));
        assert!(skipped.is_empty(), "{skipped:?}");
        let names: Vec<&str> = methods.iter().map(|m| m.name()).collect();
        assert_eq!(names, ["mask", "digest"]);
    }
}
