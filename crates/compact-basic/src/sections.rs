//! The sections soft's prompt asks for, checked in what the model wrote.
//!
//! A model may skip a section, rename it beyond recognition, or answer
//! with no sections at all (a small model often does). The facts those
//! sections hold (the goal, the user's rules, the files, the commands,
//! the plan) are the ones a next context needs most (issue 32), and digest
//! finds them without a model. So a summary that lacks some is not
//! refused: the missing ones are filled from digest's model-free reading
//! of the same messages, and the checkpoint records which were filled.

use abridge_llm::SharedMessage;

use crate::digest::DigestState;

/// The sections a soft summary must hold, by the heading its prompt
/// gives them (`prompts/summarize_initial.md`); each can be filled
/// without a model.
pub(crate) const REQUIRED: [&str; 6] = [
    "Goal",
    "Constraints",
    "Files changed",
    "Files read",
    "Build and test",
    "Next steps",
];

/// Longest heading line still read as a section's heading: past it, the
/// line is prose that happens to open with the section's name.
const HEADING_CHARS: usize = 60;

/// True when `line` is a heading (Markdown `#`, or a bold line, as small
/// models write them) that opens with `name`, ignoring case.
fn is_heading_of(line: &str, name: &str) -> bool {
    let line = line.trim();
    if !(line.starts_with('#') || line.starts_with("**")) || line.chars().count() > HEADING_CHARS {
        return false;
    }
    let title = line.trim_start_matches(['#', '*', ' ']);
    title
        .get(..name.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(name))
}

/// The required sections `summary` lacks, in the prompt's order.
pub(crate) fn missing(summary: &str) -> Vec<&'static str> {
    REQUIRED
        .into_iter()
        .filter(|name| !summary.lines().any(|line| is_heading_of(line, name)))
        .collect()
}

/// `summary` with every required section it lacks appended, each filled
/// from digest's reading of `messages` (the span the summary covers,
/// oldest first; `previous` is the checkpoint before it, for the goal),
/// and the names of the sections filled. A summary that lacks none is
/// returned unchanged.
pub(crate) fn fill_missing(
    summary: &str,
    previous: Option<&str>,
    messages: &[SharedMessage],
) -> (String, Vec<String>) {
    let absent = missing(summary);
    if absent.is_empty() {
        return (summary.to_string(), Vec::new());
    }
    let mut state = DigestState::default();
    if let Some(previous) = previous {
        state.continue_from(previous);
    }
    state.absorb(messages);
    let mut out = summary.trim_end().to_string();
    out.push_str(
        "\n\n(The sections below were missing from the summary and were filled from the history without a model.)\n",
    );
    for name in &absent {
        let body = match *name {
            "Goal" => state
                .goal
                .clone()
                .map(|goal| format!("{goal}\n"))
                .unwrap_or_default(),
            "Constraints" => state.work.constraints_body(),
            "Files changed" => state.work.changed_body(""),
            "Files read" => state.work.read_body(""),
            "Build and test" => state.work.checks_body(),
            _ => state.work.plan_body(),
        };
        let body = if body.trim().is_empty() {
            "none\n".to_string()
        } else {
            body
        };
        out.push_str(&format!("\n## {name}\n{body}"));
    }
    (out, absent.into_iter().map(str::to_string).collect())
}

#[cfg(test)]
#[path = "sections_tests.rs"]
mod tests;
