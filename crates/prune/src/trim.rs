//! Trim: a tool result too large for any window keeps its head and tail.

use abridge_compact::TokenCounter;
use abridge_llm::Block;
use serde::Deserialize;
use serde::Serialize;

use crate::PruneError;
use crate::context::PassContext;
use crate::placeholder;
use crate::report::Reclaim;
use crate::report::Report;
use crate::report::Rule;
use crate::rewrite::rewrite;
use crate::rewrite::with_content;
use crate::scan::Scan;
use crate::scan::Snapshot;

/// Settings of a trim pass, in characters (Unicode scalar values).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrimConfig {
    /// A text block of a tool result longer than this is trimmed (default
    /// 8192).
    pub max_chars: usize,
    /// Characters kept from the start (default 4096).
    pub head_chars: usize,
    /// Characters kept from the end (default 1024): errors and summaries
    /// usually come last.
    pub tail_chars: usize,
    /// Per-turn passes rewrite a result only when at most this many
    /// tokens follow it, unless the cache has expired (default 8000).
    pub cache_tail_tokens: u64,
}

impl Default for TrimConfig {
    fn default() -> Self {
        TrimConfig {
            max_chars: 8192,
            head_chars: 4096,
            tail_chars: 1024,
            cache_tail_tokens: 8_000,
        }
    }
}

impl TrimConfig {
    /// Checks that head and tail fit inside the limit.
    ///
    /// # Errors
    /// [`PruneError::Config`] when `head_chars + tail_chars` is not below
    /// `max_chars`, so trimming would not shorten anything.
    pub fn validate(&self) -> Result<(), PruneError> {
        if self.head_chars.saturating_add(self.tail_chars) >= self.max_chars {
            return Err(PruneError::Config {
                field: "trim.head_chars",
                reason: format!(
                    "head_chars {} + tail_chars {} must be below max_chars {}",
                    self.head_chars, self.tail_chars, self.max_chars
                ),
            });
        }
        Ok(())
    }
}

/// `text` cut to its first `head` and last `tail` characters with the
/// [`crate::TRIM_MARKER`] between, when it has more than `max` characters;
/// otherwise `None`. Cuts fall on character boundaries.
pub(crate) fn trim_text(text: &str, max: usize, head: usize, tail: usize) -> Option<String> {
    let chars = text.chars().count();
    if chars <= max || head + tail >= chars {
        return None;
    }
    let head_end = text.char_indices().nth(head).map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(chars - tail)
        .map_or(text.len(), |(i, _)| i);
    let removed = chars - head - tail;
    let mut out = String::with_capacity(head_end + (text.len() - tail_start) + 80);
    out.push_str(&text[..head_end]);
    out.push_str(&placeholder::trim_marker(removed));
    out.push_str(&text[tail_start..]);
    Some(out)
}

/// Computes a trim pass: every visible tool result with a text block over
/// `max_chars` keeps that block's head and tail. Images and short blocks
/// are kept as they are. Protected tool names do not apply: trim is the
/// safety valve for a single result too large for any window.
///
/// Current costs are the snapshot's; `counter` prices the rewrites, so
/// pass the counter the snapshot was counted with.
///
/// # Errors
/// [`PruneError::Config`] from [`TrimConfig::validate`].
pub fn trim(
    snapshot: &Snapshot,
    config: &TrimConfig,
    context: &PassContext,
    counter: &dyn TokenCounter,
) -> Result<Reclaim, PruneError> {
    config.validate()?;
    let scan = Scan::new(snapshot);
    let mut report = Report {
        surface_tokens: scan.total(),
        ..Report::default()
    };
    let mut rewrites = Vec::new();
    for item in &scan.items {
        let Some(tool) = &item.tool else { continue };
        if tool.elided {
            continue;
        }
        let Some((_, content, _)) = item.message.tool_result_block() else {
            continue;
        };
        let mut changed = false;
        let content: Vec<Block> = content
            .iter()
            .map(|block| match block {
                Block::Text { text } => {
                    match trim_text(text, config.max_chars, config.head_chars, config.tail_chars) {
                        Some(trimmed) => {
                            changed = true;
                            Block::text(trimmed)
                        }
                        None => block.clone(),
                    }
                }
                other => other.clone(),
            })
            .collect();
        if !changed {
            continue;
        }
        if !context.allows(item.tokens_after, config.cache_tail_tokens) {
            report.held_for_cache += 1;
            continue;
        }
        if let Some((rewritten, note)) =
            rewrite(item, with_content(item, content), Rule::Trimmed, counter)
        {
            rewrites.push(rewritten);
            report.rewrites.push(note);
        }
    }
    tracing::debug!(
        rewrites = rewrites.len(),
        saved = report.saved(),
        "trim pass computed"
    );
    Ok(Reclaim { rewrites, report })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_at_below_and_above_the_limit() {
        let at = "a".repeat(8192);
        assert_eq!(trim_text(&at, 8192, 4096, 1024), None);
        assert_eq!(trim_text(&at[..8191], 8192, 4096, 1024), None);
        let above = format!(
            "{}{}{}",
            "h".repeat(4096),
            "m".repeat(3073),
            "t".repeat(1024)
        );
        let trimmed = trim_text(&above, 8192, 4096, 1024).unwrap();
        assert_eq!(
            trimmed,
            format!(
                "{}{}{}",
                "h".repeat(4096),
                placeholder::trim_marker(3073),
                "t".repeat(1024)
            )
        );
    }

    #[test]
    fn trim_cuts_on_char_boundaries() {
        let text: String = "é😀a".repeat(100);
        let trimmed = trim_text(&text, 20, 7, 5).unwrap();
        assert!(trimmed.starts_with("é😀aé😀aé"));
        assert!(trimmed.ends_with("😀aé😀a"));
        assert!(trimmed.contains("[abridge: 288 characters trimmed"));
    }

    #[test]
    fn head_and_tail_must_fit() {
        let config = TrimConfig {
            max_chars: 100,
            head_chars: 60,
            tail_chars: 40,
            ..TrimConfig::default()
        };
        assert_eq!(
            config.validate().unwrap_err().to_string(),
            "invalid trim.head_chars: head_chars 60 + tail_chars 40 must be below max_chars 100"
        );
        assert!(TrimConfig::default().validate().is_ok());
    }
}
