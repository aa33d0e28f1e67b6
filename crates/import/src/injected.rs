//! Telling what a harness wrote from what the user typed.
//!
//! Agents put context into the conversation as user messages: Codex its
//! environment and instruction files, Claude Code reminders, notifications
//! and the echo of local commands. Imported as the user's words, they
//! become the "goal" of a digest and the "request" of a summary. Each
//! importer names the markers of its harness in a [`Markers`] and marks a
//! message [`Origin::Injected`](abridge_llm::Origin::Injected) when all its
//! text is such context; a request with a reminder attached stays the
//! user's.

/// The `Origin::Injected` source of a message that carries an earlier
/// conversation's summary behind an agent's continuation line.
pub(crate) const CONTINUATION: &str = "continuation";

/// The markers one harness puts on the text it injects.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Markers {
    /// Text that starts with the first of a pair is injected; the second
    /// names it. For blocks the harness follows with its own sentence.
    pub(crate) prefixes: &'static [(&'static str, &'static str)],
    /// XML-like tags whose `<tag>...</tag>` blocks the harness writes. Text
    /// made only of such blocks is injected, named after its first tag.
    pub(crate) tags: &'static [&'static str],
}

impl Markers {
    /// What injected `text`, when it is all harness context. Any agent's
    /// continuation line ([`abridge_llm::continuation`]: the summary of a
    /// compacted conversation) is context whichever harness's markers
    /// these are, since sessions move between agents.
    pub(crate) fn source(&self, text: &str) -> Option<&'static str> {
        let text = text.trim();
        if abridge_llm::continuation(text).is_some() {
            return Some(CONTINUATION);
        }
        if let Some((_, name)) = self.prefixes.iter().find(|(p, _)| text.starts_with(p)) {
            return Some(name);
        }
        let mut rest = text.to_string();
        let mut first: Option<(usize, &'static str)> = None;
        for tag in self.tags {
            let open = format!("<{tag}>");
            let close = format!("</{tag}>");
            while let Some(start) = rest.find(&open) {
                let Some(end) = rest[start..].find(&close).map(|e| start + e + close.len()) else {
                    break;
                };
                if first.is_none_or(|(at, _)| start < at) {
                    first = Some((start, tag));
                }
                rest.replace_range(start..end, "");
            }
        }
        match first {
            Some((_, tag)) if rest.trim().is_empty() => Some(tag),
            _ => None,
        }
    }

    /// What injected a message of these text blocks, when every one of
    /// them is harness context. `None` for a message with no text.
    pub(crate) fn source_of<'t>(
        &self,
        texts: impl IntoIterator<Item = &'t str>,
    ) -> Option<&'static str> {
        let mut found = None;
        for text in texts {
            let source = self.source(text)?;
            found.get_or_insert(source);
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARKERS: Markers = Markers {
        prefixes: &[("Caveat: ", "caveat")],
        tags: &["system-reminder", "command-name", "command-args"],
    };

    #[test]
    fn text_made_of_tagged_blocks_is_injected_under_its_first_tag() {
        assert_eq!(
            MARKERS.source(
                "<command-args>x</command-args>\n<command-name>/go</command-name>\n<command-args></command-args>"
            ),
            Some("command-args")
        );
        assert_eq!(
            MARKERS.source(" <system-reminder>be brief</system-reminder> "),
            Some("system-reminder")
        );
        assert_eq!(MARKERS.source("Caveat: generated locally"), Some("caveat"));
    }

    #[test]
    fn words_of_the_user_around_a_block_keep_it_a_request() {
        assert_eq!(
            MARKERS.source("fix it\n<system-reminder>be brief</system-reminder>"),
            None
        );
        assert_eq!(MARKERS.source("<system-reminder>unclosed"), None);
        assert_eq!(MARKERS.source("plain request"), None);
        assert_eq!(MARKERS.source(""), None);
    }

    /// Issue 27, point 7: the summary message an agent continues a
    /// compacted conversation with is never the user's request, whichever
    /// agent's file it turns up in.
    #[test]
    fn any_agents_continuation_line_is_injected() {
        for continuation in abridge_llm::CONTINUATIONS {
            let text = format!(
                "{}:\n\nThe user wanted a faster build.",
                continuation.opening
            );
            assert_eq!(MARKERS.source(&text), Some(CONTINUATION), "{text}");
        }
    }

    #[test]
    fn a_message_is_injected_only_when_every_block_is() {
        let reminder = "<system-reminder>r</system-reminder>";
        assert_eq!(
            MARKERS.source_of([reminder, "Caveat: x"]),
            Some("system-reminder")
        );
        assert_eq!(MARKERS.source_of([reminder, "fix the build"]), None);
        assert_eq!(MARKERS.source_of([]), None);
    }
}
