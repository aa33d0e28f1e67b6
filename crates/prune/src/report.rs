//! What a pass did, for logs, the CLI and the closing figures.

use abridge_compact::DetailSection;
use abridge_compact::Rewrite;
use abridge_session::Draft;
use abridge_session::Seq;
use serde::Deserialize;
use serde::Serialize;

/// The rule that produced a rewrite.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// An old tool result replaced by [`crate::PRUNED`].
    Pruned,
    /// A read made stale by a later read, replaced by [`crate::SUPERSEDED`].
    Superseded,
    /// A result its tool flagged useless, replaced by [`crate::USELESS`].
    Useless,
    /// A tool result older than the newest N, replaced by
    /// [`crate::MASKED`].
    Masked,
    /// A result with regions moved out ([`crate::SHAKEN`]).
    Shaken,
    /// A result cut to head and tail ([`crate::TRIM_MARKER`]).
    Trimmed,
    /// A rewrite taken back: the original content made visible again.
    Restored,
}

/// One rewrite of a pass.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewriteNote {
    /// The visible seq that is rewritten.
    pub target: Seq,
    /// The call the result answers (kept by the rewrite).
    pub call_id: String,
    /// The tool's name, empty when unknown.
    pub tool: String,
    /// Why.
    pub rule: Rule,
    /// Its cost before.
    pub tokens_before: u64,
    /// Its cost after.
    pub tokens_after: u64,
}

impl RewriteNote {
    /// Tokens this rewrite saves.
    pub fn saved(&self) -> u64 {
        self.tokens_before.saturating_sub(self.tokens_after)
    }
}

/// What a pass found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// The surface's cost before the pass.
    pub surface_tokens: u64,
    /// Every rewrite, in surface order.
    pub rewrites: Vec<RewriteNote>,
    /// Pruning candidates left alone because together they would save
    /// less than the configured minimum: their would-be saving.
    pub below_minimum_saving: u64,
    /// Rewrites withheld by the cache guard.
    pub held_for_cache: usize,
    /// The artifact an older shake pass wrote, as `artifact://ID`; shake
    /// no longer writes one (kept so older reports still read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact: Option<String>,
    /// Image blocks moved out of results (image policy `record`).
    pub images_recorded: usize,
}

/// A pass's report is what the `prune`, `mask`, `shake` and `trim` methods record
/// about their rewrites.
impl DetailSection for Report {
    const KEY: &'static str = "reclaim";
    const VERSION: u32 = 1;
}

impl Report {
    /// Tokens saved by every rewrite.
    pub fn saved(&self) -> u64 {
        self.rewrites.iter().map(RewriteNote::saved).sum()
    }

    /// Tokens saved by the rewrites of one rule.
    pub fn saved_by(&self, rule: Rule) -> u64 {
        self.rewrites
            .iter()
            .filter(|r| r.rule == rule)
            .map(RewriteNote::saved)
            .sum()
    }

    /// Number of rewrites of one rule.
    pub fn count(&self, rule: Rule) -> usize {
        self.rewrites.iter().filter(|r| r.rule == rule).count()
    }
}

/// The outcome of a pass: rewrites, one per target in surface order, and
/// the report.
///
/// Hand the rewrites to `abridge_compact::host::commit` as
/// `MethodOutput::Rewrites`, or append [`Reclaim::drafts`] with
/// `Session::append_batch` (all or nothing) on the session they were
/// computed from: each rewrites a seq that was visible then.
#[derive(Debug, Clone, Default)]
pub struct Reclaim {
    /// New content for visible tool results, each keeping its call id.
    pub rewrites: Vec<Rewrite>,
    /// What they do.
    pub report: Report,
}

impl Reclaim {
    /// True when the pass found nothing to do.
    pub fn is_empty(&self) -> bool {
        self.rewrites.is_empty()
    }

    /// The rewrites as `rewrite` drafts for `Session::append_batch`.
    pub fn drafts(&self) -> Vec<Draft> {
        self.rewrites
            .iter()
            .map(|r| Draft::rewrite(r.message.clone(), r.target))
            .collect()
    }
}
