//! Whether a provider family should see earlier reasoning printed on
//! frames.
//!
//! Frames are read as ordinary content, so no API rejects thinking printed
//! on them. The question is whether the model line expects earlier
//! reasoning in its context at all: most reasoning families are trained on
//! histories with it removed, and some APIs refuse it outright when it is
//! sent back as reasoning. Printing it there spends cells on text the model
//! would not otherwise see.

use abridge_llm::ModelEntry;

/// Provider families whose models read earlier reasoning, and why each
/// entry is there. Families not listed drop thinking.
///
/// | family | thinking | why |
/// |---|---|---|
/// | `anthropic` | kept | The Messages API takes earlier thinking blocks back in the history (with their signatures) and Claude reads them as context. |
/// | `openai` | dropped | OpenAI's reasoning guide: reasoning tokens are discarded from the context after each turn; the API only returns summaries or encrypted items, never raw reasoning to replay. |
/// | `google` | dropped | Gemini returns thought summaries only and carries earlier reasoning as opaque thought signatures, not as text. |
/// | `deepseek` | dropped | DeepSeek's reasoner guide (as of 2025) keeps earlier rounds' reasoning out of the context; newer thinking modes ask for reasoning to be passed back only within a live tool-call turn, which frames of finished history never are. |
/// | `qwen` | dropped | The Qwen3 model cards: history should hold only the final output of earlier turns; the chat template strips `<think>` content. |
/// | anything else | dropped | Conservative: dropping thinking loses no fact the conversation settled (answers, calls and results stay), while an unknown family may be trained without it. |
pub(crate) const THINKING_FAMILIES: &[(&str, bool)] = &[
    ("anthropic", true),
    ("openai", false),
    ("google", false),
    ("deepseek", false),
    ("qwen", false),
];

/// True when frames for `provider` (a [`ModelEntry::provider`] family
/// name, compared case-insensitively) may carry `[thinking]` scopes; see
/// [`THINKING_FAMILIES`]. Unknown families get `false`.
pub(crate) fn thinking_allowed_for(provider: &str) -> bool {
    THINKING_FAMILIES
        .iter()
        .find(|(family, _)| family.eq_ignore_ascii_case(provider))
        .is_some_and(|(_, allowed)| *allowed)
}

/// `thinking_allowed_for` the entry's provider family.
pub fn thinking_allowed(entry: &ModelEntry) -> bool {
    thinking_allowed_for(&entry.provider)
}

#[cfg(test)]
mod tests {
    use abridge_llm::Catalog;

    use super::*;

    #[test]
    fn only_anthropic_keeps_thinking() {
        let table: Vec<(&str, bool)> = [
            "anthropic",
            "Anthropic",
            "openai",
            "google",
            "deepseek",
            "qwen",
            "local",
            "unknown",
            "",
        ]
        .iter()
        .map(|f| (*f, thinking_allowed_for(f)))
        .collect();
        assert_eq!(
            table,
            [
                ("anthropic", true),
                ("Anthropic", true),
                ("openai", false),
                ("google", false),
                ("deepseek", false),
                ("qwen", false),
                ("local", false),
                ("unknown", false),
                ("", false),
            ]
        );
    }

    #[test]
    fn catalog_entries_follow_their_family() {
        let catalog = Catalog::builtin();
        assert!(thinking_allowed(&catalog.lookup("claude-sonnet-4-5").entry));
        assert!(!thinking_allowed(&catalog.lookup("gpt-5").entry));
        assert!(!thinking_allowed(&catalog.lookup("gemini-2-5-pro").entry));
        assert!(!thinking_allowed(&catalog.lookup("some-new-model").entry));
        assert!(!thinking_allowed(&ModelEntry::conservative_default()));
    }
}
