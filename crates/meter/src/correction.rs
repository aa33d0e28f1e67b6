//! How many tokens a provider's own tokenizer makes of text that o200k
//! counts as one: a measured factor per tokenizer family, for the families
//! whose vocabulary is not shipped and so are counted with o200k.
//!
//! The factor only sizes text (and the reasoning behind opaque blobs,
//! sized in text tokens); images are already billed in the provider's own
//! units and the fixed per-message overheads are ours. It matters until a
//! usage report anchors the meter: after that the report carries the
//! provider's count of everything before it, and the factor only scales
//! what was added since.

use abridge_llm::ModelEntry;
use abridge_llm::TokenizerFamily;

/// Claude tokens per o200k token, for the Claude lines before Opus 4.7.
///
/// Measured, not guessed, by `abridge_meter::calibrate` on the two bundled
/// sessions with Claude usage reports: the Claude Code sample
/// (`claude-code__spotter__...`, Claude Opus 4.6, 136 deltas) and the pi
/// sample (`pi-mono__large-session`, Claude Sonnet 4.5, 435 deltas). At each
/// report the prompt the provider counted (uncached input + cache read +
/// cache write) is set beside our o200k estimate of the history before it;
/// the difference of two consecutive reports in one stretch of history
/// (no compaction, no model switch, no shrinking report) is the provider's
/// count of what was added, with the system prompt and tool definitions
/// the log never holds cancelled out. Over all 571 deltas the provider
/// counted 385,851 tokens where o200k counted 318,865: 1.21. Alone, the
/// Claude Code sample gives 1.254 and the pi sample 1.162; the bench
/// (`cargo xtask bench meter`, "Claude counts" in BENCHMARKS.md) reports
/// the error left on each. Re-measure with that bench when a sample is
/// added.
pub const CLAUDE_O200K_CORRECTION: f64 = 1.21;

/// How much more Claude Opus 4.7's tokenizer makes of the same text than
/// the lines before it: Anthropic's migration notes give "roughly 1.0x to
/// 1.35x"; the top of that range is taken, since undercounting overflows a
/// window and overcounting only compacts early. No bundled sample comes
/// from 4.7, so this part is the provider's figure, not ours.
pub const CLAUDE_4_7_TOKENIZER_GROWTH: f64 = 1.35;

/// The correction for a catalog entry: how many of its tokens one o200k
/// token of text stands for.
///
/// `1.0` for every family counted exactly (o200k, cl100k) and for every
/// family nobody has measured yet; [`CLAUDE_O200K_CORRECTION`] for Claude,
/// times [`CLAUDE_4_7_TOKENIZER_GROWTH`] from Claude Opus 4.7 on (and any
/// Claude 5 line).
pub fn o200k_correction(entry: &ModelEntry) -> f64 {
    if entry.tokenizer != TokenizerFamily::Claude {
        return 1.0;
    }
    let newer_tokenizer = claude_version(&entry.id, "claude-opus-").is_some_and(|v| v >= (4, 7))
        || ["claude-opus-", "claude-sonnet-", "claude-haiku-"]
            .iter()
            .any(|line| claude_version(&entry.id, line).is_some_and(|v| v.0 >= 5));
    if newer_tokenizer {
        CLAUDE_O200K_CORRECTION * CLAUDE_4_7_TOKENIZER_GROWTH
    } else {
        CLAUDE_O200K_CORRECTION
    }
}

/// The `(major, minor)` version of a Claude id on `line` (a prefix such as
/// `claude-opus-`): `claude-opus-4-5` is `(4, 5)`, `claude-opus-4` and
/// `claude-sonnet-4-20250514` are `(4, 0)` (a date is not a minor version).
pub(crate) fn claude_version(id: &str, line: &str) -> Option<(u32, u32)> {
    let rest = id.strip_prefix(line)?;
    let mut parts = rest.split('-');
    let major = parts.next()?.parse().ok()?;
    let minor = parts
        .next()
        .and_then(|p| p.parse::<u32>().ok())
        .filter(|m| *m < 100)
        .unwrap_or(0);
    Some((major, minor))
}

#[cfg(test)]
mod tests {
    use abridge_llm::Catalog;

    use super::*;

    #[test]
    fn only_claude_is_corrected() {
        let catalog = Catalog::builtin();
        let factor = |id: &str| o200k_correction(&catalog.lookup(id).entry);
        assert!((factor("gpt-5") - 1.0).abs() < f64::EPSILON);
        assert!((factor("gpt-4") - 1.0).abs() < f64::EPSILON);
        assert!((factor("claude-sonnet-4-5") - CLAUDE_O200K_CORRECTION).abs() < f64::EPSILON);
        assert!((factor("claude-opus-4-6") - CLAUDE_O200K_CORRECTION).abs() < f64::EPSILON);
        let newer = CLAUDE_O200K_CORRECTION * CLAUDE_4_7_TOKENIZER_GROWTH;
        assert!((factor("claude-opus-4-7") - newer).abs() < f64::EPSILON);
    }
}
