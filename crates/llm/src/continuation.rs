//! The line an agent puts before an earlier conversation's summary when it
//! continues that conversation after compacting it.
//!
//! Claude Code, Codex and pi each send the summary of a compacted
//! conversation as a user message that opens with a fixed sentence of
//! their own ("This session is being continued from a previous
//! conversation ..."). The user never typed it, so it is never the goal of
//! a session nor one of its requests, and a summary read for its goal is
//! read without it. The importers and the digest both ask here, so the
//! list has one owner.

/// One agent's continuation opening: the start of the first line of the
/// message that carries an earlier conversation's summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Continuation {
    /// The agent that writes it.
    pub agent: &'static str,
    /// How its first line starts.
    pub opening: &'static str,
}

/// Every continuation opening known, as each agent words it.
pub const CONTINUATIONS: [Continuation; 4] = [
    Continuation {
        agent: "claude-code",
        opening: "This session is being continued from a previous conversation",
    },
    Continuation {
        agent: "codex",
        opening: "Another language model started to solve this problem and produced a summary",
    },
    Continuation {
        agent: "pi",
        opening: "The conversation history before this point was compacted into the following summary",
    },
    Continuation {
        agent: "pi",
        opening: "The following is a summary of a branch that this conversation came back from",
    },
];

/// The continuation `text` opens with, if any (leading white space and a
/// byte order mark ignored).
pub fn continuation(text: &str) -> Option<&'static Continuation> {
    let text = text.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
    CONTINUATIONS.iter().find(|c| text.starts_with(c.opening))
}

/// The summary a continuation message carries: `text` without its
/// opening line and without the `<summary>` element pi wraps it in.
/// Text that opens with no known continuation comes back trimmed and
/// otherwise whole.
pub fn continued_summary(text: &str) -> &str {
    let mut rest = text.trim();
    if continuation(rest).is_some() {
        rest = rest.split_once('\n').map_or("", |(_, after)| after).trim();
    }
    if let Some(inner) = rest.strip_prefix("<summary>") {
        rest = inner.trim();
        if let Some(end) = rest.rfind("</summary>") {
            rest = rest[..end].trim();
        }
    }
    rest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_agents_opening_is_recognised_and_nothing_else() {
        let claude = "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\nAnalysis: x";
        assert_eq!(continuation(claude).map(|c| c.agent), Some("claude-code"));
        let codex = "Another language model started to solve this problem and produced a summary of its thinking process. Here is the summary:\nFixed the parser.";
        assert_eq!(continuation(codex).map(|c| c.agent), Some("codex"));
        let pi = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n## Goal\nShip it.\n</summary>";
        assert_eq!(continuation(pi).map(|c| c.agent), Some("pi"));
        assert_eq!(continuation("Continue the migration."), None);
        assert_eq!(
            continuation(
                "Please say: This session is being continued from a previous conversation"
            ),
            None
        );
    }

    #[test]
    fn the_summary_is_read_without_the_opening_and_the_wrapper() {
        let pi = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n## Goal\nShip it.\n</summary>";
        assert_eq!(continued_summary(pi), "## Goal\nShip it.");
        let claude = "This session is being continued from a previous conversation that ran out of context.\n\nSummary:\n1. Primary Request";
        assert_eq!(continued_summary(claude), "Summary:\n1. Primary Request");
        assert_eq!(continued_summary("  ## Goal\nx  "), "## Goal\nx");
    }
}
