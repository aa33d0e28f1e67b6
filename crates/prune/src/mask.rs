//! Mask: every tool observation but the newest N replaced by a one-line
//! placeholder that names the original by its recall reference.
//!
//! # Why
//!
//! Old observations are what an agent needs least and pays for most. A
//! 2025 study of SWE-agent on SWE-bench Verified found that masking them
//! (keeping the agent's own reasoning and calls verbatim) halves the cost
//! at an equal or better solve rate, about as well as summarizing with a
//! model; OpenHands ships the same idea as a condenser. With the `recall`
//! tool behind the placeholder, the model can still read any of them back.
//!
//! # Rules
//!
//! - The newest [`MaskConfig::keep`] tool results on the surface are kept,
//!   counting every visible result (placeholders included), so a second
//!   pass finds nothing new to do.
//! - Results under [`MaskConfig::min_result_tokens`] are kept: the
//!   placeholder would cost about as much.
//! - Results of protected tools and results that are already placeholders
//!   are kept.
//! - Cache-aware as prune is: a per-turn pass rewrites only results near
//!   the tail while the provider's cache is warm (see [`PassContext`]); a
//!   compaction (the window forces it) may rewrite anywhere.

use abridge_compact::TokenCounter;
use abridge_llm::Block;
use serde::Deserialize;
use serde::Serialize;

use crate::PruneError;
use crate::context::PassContext;
use crate::placeholder;
use crate::prune::DEFAULT_PROTECTED_TOOLS;
use crate::report::Reclaim;
use crate::report::Report;
use crate::report::Rule;
use crate::rewrite::rewrite;
use crate::rewrite::with_content;
use crate::scan::Scan;
use crate::scan::Snapshot;

/// The default number of newest tool results `mask` keeps.
pub const DEFAULT_MASK_KEEP: usize = 10;

/// Settings of a mask pass. Every default is the documented one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MaskConfig {
    /// The newest this many tool results stay verbatim (default 10, at
    /// least 1: the newest result is what the model is working from).
    pub keep: usize,
    /// Results under this many tokens are never masked (default 50).
    pub min_result_tokens: u64,
    /// Tools whose results are never masked (compared ignoring ASCII
    /// case). Default: skill and plan reads, as for prune.
    pub protected_tools: Vec<String>,
    /// Per-turn passes rewrite a result only when at most this many
    /// tokens follow it, unless the cache has expired (default 8000).
    pub cache_tail_tokens: u64,
}

impl Default for MaskConfig {
    fn default() -> Self {
        MaskConfig {
            keep: DEFAULT_MASK_KEEP,
            min_result_tokens: 50,
            protected_tools: DEFAULT_PROTECTED_TOOLS
                .iter()
                .map(|s| (*s).to_string())
                .collect(),
            cache_tail_tokens: 8_000,
        }
    }
}

impl MaskConfig {
    /// Checks the settings can work.
    ///
    /// # Errors
    /// [`PruneError::Config`] when `keep` is 0.
    pub fn validate(&self) -> Result<(), PruneError> {
        if self.keep == 0 {
            return Err(PruneError::Config {
                field: "mask.keep",
                reason: "must be at least 1: the newest tool result is what the model works from"
                    .to_string(),
            });
        }
        Ok(())
    }

    fn is_protected(&self, tool: &str) -> bool {
        self.protected_tools
            .iter()
            .any(|p| p.eq_ignore_ascii_case(tool))
    }
}

/// Computes a mask pass over a snapshot of the surface: every tool result
/// older than the newest `config.keep` becomes a [`placeholder::MASKED`]
/// line naming `recall://SEQ` of the result it replaces.
///
/// Current costs are the snapshot's; `counter` prices the rewrites, so
/// pass the counter the snapshot was counted with.
pub fn mask(
    snapshot: &Snapshot,
    config: &MaskConfig,
    context: &PassContext,
    counter: &dyn TokenCounter,
) -> Reclaim {
    let scan = Scan::new(snapshot);
    let _span = tracing::debug_span!("mask", surface = scan.items.len()).entered();
    let mut report = Report {
        surface_tokens: scan.total(),
        ..Report::default()
    };
    let mut chosen = Vec::new();
    let mut newer = 0usize;
    for item in scan.items.iter().rev() {
        let Some(tool) = &item.tool else { continue };
        newer += 1;
        if newer <= config.keep
            || tool.elided
            || config.is_protected(&tool.name)
            || item.tokens < config.min_result_tokens
        {
            continue;
        }
        if !context.allows(item.tokens_after, config.cache_tail_tokens) {
            report.held_for_cache += 1;
            continue;
        }
        let text = placeholder::masked(item.seq, item.tokens);
        let message = with_content(item, vec![Block::text(text)]);
        if let Some(pair) = rewrite(item, message, Rule::Masked, counter) {
            chosen.push(pair);
        }
    }
    chosen.reverse();
    let mut rewrites = Vec::with_capacity(chosen.len());
    for (rewrite, note) in chosen {
        rewrites.push(rewrite);
        report.rewrites.push(note);
    }
    tracing::debug!(
        rewrites = report.rewrites.len(),
        saved = report.saved(),
        "mask pass computed"
    );
    Reclaim { rewrites, report }
}
