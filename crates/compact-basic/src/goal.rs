//! The goal an earlier summary states, for a digest that continues it.
//!
//! A digest takes the first thing the user asked as the session's goal.
//! After a checkpoint another method or another agent wrote, that first
//! request is hidden inside the checkpoint; the first request after it is
//! usually a follow-up ("can leave it"), not the goal. Summaries name the
//! goal under a heading of their own: `## Goal` (abridge's `soft`, pi),
//! `Primary Request and Intent` (Claude Code), so the section under such
//! a heading is the goal. A summary that names none opens with what it is
//! about (Codex's imported checkpoint is the user's first request itself),
//! so its opening paragraph is the goal then.

use crate::transcript::clip;

/// Headings a summary puts its goal under, compared without case,
/// numbering, Markdown marks or a closing colon.
const GOAL_HEADINGS: [&str; 8] = [
    "goal",
    "main goal",
    "final goal",
    "overall goal",
    "primary request and intent",
    "primary request",
    "user's goal",
    "objective",
];

/// The goal `summary` states under a goal heading (see [`GOAL_HEADINGS`]):
/// the section's first paragraph, white space folded and clipped to
/// `max_chars`. `None` when it has no
/// such section, or the section is empty or a placeholder in brackets.
pub(crate) fn stated_goal(summary: &str, max_chars: usize) -> Option<String> {
    let mut lines = abridge_llm::continued_summary(summary).lines();
    let mut body: Vec<&str> = Vec::new();
    for line in lines.by_ref() {
        if let Some((title, inline)) = heading(line)
            && GOAL_HEADINGS.contains(&title.as_str())
        {
            body.extend(inline);
            break;
        }
    }
    if body.is_empty() {
        // The section's first paragraph.
        let paragraph = lines
            .skip_while(|line| line.trim().is_empty())
            .take_while(|line| !line.trim().is_empty() && heading(line).is_none());
        body.extend(paragraph);
    }
    let text = body
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let placeholder = text.starts_with('(') || text.starts_with('[');
    (!text.is_empty() && !placeholder && !text.eq_ignore_ascii_case("none"))
        .then(|| clip(&text, max_chars))
}

/// The goal of an earlier summary: the one it states under a goal heading
/// ([`stated_goal`]), else its opening paragraph (without the lines that
/// are only headings), white space folded and clipped to `max_chars`.
/// `None` when it has neither.
pub(crate) fn summary_goal(summary: &str, max_chars: usize) -> Option<String> {
    stated_goal(summary, max_chars).or_else(|| {
        let opening: Vec<&str> = abridge_llm::continued_summary(summary)
            .lines()
            .skip_while(|line| line.trim().is_empty() || heading(line).is_some())
            .take_while(|line| !line.trim().is_empty() && heading(line).is_none())
            .collect();
        let text = opening
            .join(" ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        (!text.is_empty()).then(|| clip(&text, max_chars))
    })
}

/// A line that opens a section: its title in lower case, and the text
/// after the title on the same line (`Goal: ship it`). A Markdown heading
/// (`## Goal`), a numbered or bold title ending in a colon
/// (`1. Primary Request and Intent:`, `**Goal:**`), or a short line that
/// is only a title and a colon (`Summary:`).
fn heading(line: &str) -> Option<(String, Option<&str>)> {
    let trimmed = line.trim();
    if let Some(title) = trimmed.strip_prefix('#') {
        let title = title.trim_start_matches('#').trim();
        return Some((normalize(title), None));
    }
    let unnumbered = trimmed
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .strip_prefix(['.', ')'])
        .map_or(trimmed, str::trim_start);
    let numbered = unnumbered.len() != trimmed.len();
    let (title, rest) = unnumbered.split_once(':')?;
    let title = normalize(title);
    let rest = rest.trim().trim_start_matches("**").trim();
    let bold = unnumbered.starts_with("**");
    let bare = !line.starts_with([' ', '\t']) && rest.is_empty() && title.len() <= 40;
    if GOAL_HEADINGS.contains(&title.as_str()) {
        return Some((title, (!rest.is_empty()).then_some(rest)));
    }
    (rest.is_empty() && (numbered || bold || bare)).then_some((title, None))
}

/// A title without Markdown emphasis or a closing colon, in lower case.
fn normalize(title: &str) -> String {
    title
        .trim()
        .trim_matches('*')
        .trim_end_matches(':')
        .trim_matches('*')
        .trim()
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_markdown_goal_section_is_the_goal() {
        let summary = "## Goal\nPort the CLI to clap,\nkeeping the flags.\n\n## Constraints\nnone";
        assert_eq!(
            stated_goal(summary, 400).as_deref(),
            Some("Port the CLI to clap, keeping the flags.")
        );
    }

    #[test]
    fn claude_codes_primary_request_is_the_goal() {
        let summary = "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\nAnalysis:\nLet me look.\n\nSummary:\n1. Primary Request and Intent:\n   The user asked to work on bead `spotter-dov`.\n   Three subtasks.\n\n2. Key Technical Concepts:\n   - AshComputer";
        assert_eq!(
            stated_goal(summary, 400).as_deref(),
            Some("The user asked to work on bead `spotter-dov`. Three subtasks.")
        );
    }

    #[test]
    fn a_goal_on_its_heading_line_and_in_pis_wrapper_is_read() {
        let pi = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n**Goal:** Ship the release.\n**Status:** done\n</summary>";
        assert_eq!(stated_goal(pi, 400).as_deref(), Some("Ship the release."));
    }

    #[test]
    fn without_a_goal_section_the_opening_paragraph_is_the_goal() {
        assert_eq!(
            summary_goal(
                "Port the loader to async.\nKeep the API.\n\nDone: most.",
                400
            )
            .as_deref(),
            Some("Port the loader to async. Keep the API.")
        );
        assert_eq!(
            summary_goal("Summary:\nFixed the parser.\n\n## Next\nship", 400).as_deref(),
            Some("Fixed the parser.")
        );
        assert_eq!(
            summary_goal("## Goal\nShip it.\n\nFixed the parser.", 400).as_deref(),
            Some("Ship it.")
        );
        assert_eq!(summary_goal("## Next\n", 400), None);
    }

    #[test]
    fn no_goal_section_or_a_placeholder_gives_none() {
        assert_eq!(stated_goal("Fixed the parser. Tests pass.", 400), None);
        assert_eq!(
            stated_goal("## Goal\n(stated in the earlier summary below)\n", 400),
            None
        );
        assert_eq!(stated_goal("## Goal\nnone\n## Progress\nx", 400), None);
        assert_eq!(
            stated_goal("The goal: to be clear, this is prose", 400).as_deref(),
            None
        );
    }
}
