//! Pruning: superseded reads, useless results and old tool outputs
//! replaced by short placeholders.

use std::collections::HashMap;
use std::collections::HashSet;

use abridge_compact::TokenCounter;
use abridge_llm::Block;
use serde::Deserialize;
use serde::Serialize;

use crate::context::PassContext;
use crate::placeholder;
use crate::reads::ReadTool;
use crate::reads::Selector;
use crate::reads::classify;
use crate::reads::default_read_tools;
use crate::report::Reclaim;
use crate::report::Report;
use crate::report::Rule;
use crate::rewrite::rewrite;
use crate::rewrite::with_content;
use crate::scan::Item;
use crate::scan::Scan;
use crate::scan::Snapshot;

/// Settings of a prune pass. Every default is the documented one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PruneConfig {
    /// The newest tool output, this many tokens of it, is never pruned
    /// (default 40000): the model is most likely still using it.
    pub protect_tokens: u64,
    /// Old outputs are pruned only when together they save at least this
    /// many tokens (default 20000); a smaller gain is not worth changing
    /// the prompt and losing its cache.
    pub min_saving_tokens: u64,
    /// Results under this many tokens are never touched (default 50): the
    /// placeholder would cost about as much.
    pub min_result_tokens: u64,
    /// Tools whose results are never touched by prune, superseded, useless
    /// or shake (compared ignoring ASCII case). Default: skill and plan
    /// reads.
    pub protected_tools: Vec<String>,
    /// Replace reads made stale by a later read of the same file
    /// (default on).
    pub superseded: bool,
    /// Blank results their tool flagged useless (default on).
    pub useless: bool,
    /// Prune old outputs (default on).
    pub old_outputs: bool,
    /// Which tools read files (default: [`default_read_tools`]).
    pub read_tools: Vec<ReadTool>,
    /// Per-turn passes rewrite a result only when at most this many
    /// tokens follow it, unless the cache has expired (default 8000).
    pub cache_tail_tokens: u64,
}

/// Tool names that read skills and plans, kept by default.
pub const DEFAULT_PROTECTED_TOOLS: &[&str] = &[
    "skill",
    "read_skill",
    "load_skill",
    "plan",
    "read_plan",
    "update_plan",
    "todoread",
    "todowrite",
    "exitplanmode",
];

impl Default for PruneConfig {
    fn default() -> Self {
        PruneConfig {
            protect_tokens: 40_000,
            min_saving_tokens: 20_000,
            min_result_tokens: 50,
            protected_tools: DEFAULT_PROTECTED_TOOLS
                .iter()
                .map(|s| (*s).to_string())
                .collect(),
            superseded: true,
            useless: true,
            old_outputs: true,
            read_tools: default_read_tools(),
            cache_tail_tokens: 8_000,
        }
    }
}

impl PruneConfig {
    /// True when results of `tool` must be left alone.
    pub fn is_protected(&self, tool: &str) -> bool {
        self.protected_tools
            .iter()
            .any(|p| p.eq_ignore_ascii_case(tool))
    }
}

/// Computes a prune pass over the surface of `session`: superseded reads,
/// then useless results, then old outputs.
///
/// Only visible tool results are candidates, so what a checkpoint hides
/// is never touched, and checkpoints themselves are never rewritten.
/// Results that are already placeholders, protected tools and results
/// under `min_result_tokens` are skipped; every rewrite is cheaper than
/// what it replaces.
///
/// Current costs are the snapshot's; `counter` prices the rewrites, so
/// pass the counter the snapshot was counted with.
pub fn prune(
    snapshot: &Snapshot,
    config: &PruneConfig,
    context: &PassContext,
    counter: &dyn TokenCounter,
) -> Reclaim {
    let scan = Scan::new(snapshot);
    let _span = tracing::debug_span!("prune", surface = scan.items.len()).entered();
    let mut report = Report {
        surface_tokens: scan.total(),
        ..Report::default()
    };
    let mut chosen: Vec<(usize, abridge_compact::Rewrite, crate::RewriteNote)> = Vec::new();
    let mut taken: HashSet<usize> = HashSet::new();
    // Reads that supersede a read this pass replaces: the placeholder tells
    // the model a copy is in context, so that copy must stay.
    let mut superseding: HashSet<usize> = HashSet::new();

    let eligible = |item: &Item| {
        item.tool.as_ref().is_some_and(|t| {
            !t.elided && !config.is_protected(&t.name) && item.tokens >= config.min_result_tokens
        })
    };

    if config.superseded {
        for stale in superseded(&scan, &config.read_tools) {
            let (index, path) = (stale.index, stale.path);
            let item = &scan.items[index];
            if !eligible(item) {
                continue;
            }
            if !context.allows(item.tokens_after, config.cache_tail_tokens) {
                report.held_for_cache += 1;
                continue;
            }
            let text = placeholder::superseded(item.seq, &path, item.tokens);
            let message = with_content(item, vec![Block::text(text)]);
            if let Some((draft, note)) = rewrite(item, message, Rule::Superseded, counter) {
                taken.insert(index);
                superseding.insert(stale.by);
                chosen.push((index, draft, note));
            }
        }
    }

    if config.useless {
        for (index, item) in scan.items.iter().enumerate() {
            let Some(tool) = &item.tool else { continue };
            if !tool.useless
                || tool.is_error
                || tool.elided
                || taken.contains(&index)
                || superseding.contains(&index)
            {
                continue;
            }
            if config.is_protected(&tool.name) {
                continue;
            }
            if !context.allows(item.tokens_after, config.cache_tail_tokens) {
                report.held_for_cache += 1;
                continue;
            }
            let message = with_content(item, vec![Block::text(placeholder::useless(item.seq))]);
            if let Some((draft, note)) = rewrite(item, message, Rule::Useless, counter) {
                taken.insert(index);
                chosen.push((index, draft, note));
            }
        }
    }

    if config.old_outputs {
        let mut newer_tool_tokens: u64 = 0;
        let mut candidates = Vec::new();
        let mut held = 0;
        for (index, item) in scan.items.iter().enumerate().rev() {
            if item.tool.is_none() {
                continue;
            }
            // Protected while the output newer than it is still within the
            // budget: a result straddling the boundary is kept whole.
            let protected = newer_tool_tokens < config.protect_tokens;
            newer_tool_tokens += item.tokens;
            if protected
                || taken.contains(&index)
                || superseding.contains(&index)
                || !eligible(item)
            {
                continue;
            }
            if !context.allows(item.tokens_after, config.cache_tail_tokens) {
                held += 1;
                continue;
            }
            let text = placeholder::pruned(item.seq, item.tokens);
            let message = with_content(item, vec![Block::text(text)]);
            if let Some((draft, note)) = rewrite(item, message, Rule::Pruned, counter) {
                candidates.push((index, draft, note));
            }
        }
        let saving: u64 = candidates.iter().map(|(_, _, note)| note.saved()).sum();
        if saving >= config.min_saving_tokens {
            report.held_for_cache += held;
            chosen.extend(candidates);
        } else {
            report.below_minimum_saving = saving;
        }
    }

    chosen.sort_by_key(|(index, _, _)| *index);
    let mut rewrites = Vec::with_capacity(chosen.len());
    for (_, rewrite, note) in chosen {
        rewrites.push(rewrite);
        report.rewrites.push(note);
    }
    tracing::debug!(
        rewrites = report.rewrites.len(),
        saved = report.saved(),
        "prune pass computed"
    );
    Reclaim { rewrites, report }
}

/// A read result made stale by a later one.
struct Stale {
    /// The stale result's index in the scan.
    index: usize,
    /// The file's path.
    path: String,
    /// The index of the later read that covers it: itself never stale.
    by: usize,
}

/// Read results made stale by a later successful read of the same file
/// whose output is still in context, oldest first.
fn superseded(scan: &Scan, tools: &[ReadTool]) -> Vec<Stale> {
    let mut later: HashMap<String, Vec<(Selector, usize)>> = HashMap::new();
    let mut stale = Vec::new();
    for (index, item) in scan.items.iter().enumerate().rev() {
        let Some(tool) = &item.tool else { continue };
        // A failed read showed nothing; an elided one (a placeholder from
        // an earlier pass) no longer shows it.
        if tool.is_error || tool.elided {
            continue;
        }
        let Some(read) = tool
            .arguments
            .as_ref()
            .and_then(|args| classify(tools, &tool.name, args))
        else {
            continue;
        };
        let seen = later.entry(read.path.clone()).or_default();
        if let Some(&(_, by)) = seen.iter().find(|(s, _)| s.covers(&read.selector)) {
            stale.push(Stale {
                index,
                path: read.path,
                by,
            });
        } else {
            seen.push((read.selector, index));
        }
    }
    stale.reverse();
    stale
}
