//! `digest`: a checkpoint built from the history itself, with no model.
//!
//! It records the user's requests in order, the files read and changed,
//! the commands run and which failed (with the line that says why), the
//! assistant's last statement of progress and the questions left open.
//! Its state is kept as JSON in the checkpoint's details, so the next
//! digest continues it instead of nesting text inside text.

use std::collections::BTreeMap;

use abridge_compact::Capabilities;
use abridge_compact::Checkpoint;
use abridge_compact::CompactionMethod;
use abridge_compact::DetailSection;
use abridge_compact::Details;
use abridge_compact::FileAccess;
use abridge_compact::MethodError;
use abridge_compact::MethodOutput;
use abridge_compact::Plan;
use abridge_compact::PreviousCheckpoint;
use abridge_compact::host::is_checkpoint;
use abridge_llm::Block;
use abridge_llm::Role;
use abridge_llm::SharedMessage;
use async_trait::async_trait;
use serde::Deserialize;
use serde::Serialize;

use crate::files::collect_file_ops;
use crate::files::command_text;
use crate::files::output_failed;
use crate::files::render_files;
use crate::goal::summary_goal;
use crate::transcript::clip;
use crate::transcript::tool_names;
use crate::transcript::user_request_text;
use crate::transcript::visible_text;
use crate::work::WorkLog;

/// Requests listed in full at the start and end of a long session; the
/// ones between are counted.
pub(crate) const REQUESTS_HEAD: usize = 3;
/// See [`REQUESTS_HEAD`].
pub(crate) const REQUESTS_TAIL: usize = 12;
/// Characters kept of each request (the first, the goal, gets twice that).
pub(crate) const REQUEST_CHARS: usize = 400;
/// Commands listed (the newest).
pub(crate) const COMMANDS_LISTED: usize = 12;
/// Failures listed (the newest).
pub(crate) const FAILURES_LISTED: usize = 8;
/// Characters kept of the assistant's last progress statement.
pub(crate) const PROGRESS_CHARS: usize = 900;
/// Shortest assistant text counted as a statement of progress rather than
/// a passing remark ("Now let me read the tests.").
pub(crate) const SUBSTANTIAL_CHARS: usize = 160;

impl DetailSection for DigestState {
    const KEY: &'static str = "digest";
    const VERSION: u32 = 1;
}

/// The digest of everything compacted so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct DigestState {
    /// The first request, kept as the goal.
    pub(crate) goal: Option<String>,
    /// Requests after the first, oldest first (head and tail kept).
    pub(crate) requests: Vec<String>,
    /// Requests dropped from the middle of `requests`.
    pub(crate) requests_omitted: usize,
    /// Newest commands, oldest first.
    pub(crate) commands: Vec<CommandRecord>,
    /// Commands run in total.
    pub(crate) commands_total: usize,
    /// Commands that failed, in total.
    #[serde(default)]
    pub(crate) commands_failed: usize,
    /// Newest failures (commands and tools), oldest first.
    pub(crate) failures: Vec<String>,
    /// Failures in total.
    pub(crate) failures_total: usize,
    /// Calls per tool name.
    pub(crate) tool_counts: BTreeMap<String, usize>,
    /// The assistant's last substantial statement (at least
    /// [`SUBSTANTIAL_CHARS`] characters): usually a report of progress.
    pub(crate) last_progress: Option<String>,
    /// The assistant's very last words, when shorter than that (the step it
    /// was taking).
    #[serde(default)]
    pub(crate) last_step: Option<String>,
    /// Questions the assistant asked last and the user has not answered.
    pub(crate) open_questions: Vec<String>,
    /// The summary of an earlier checkpoint not written by digest.
    pub(crate) earlier: Option<String>,
    /// The user's rules, the files changed and read, the build and test
    /// commands and the open plan (absent in states written before it).
    #[serde(default)]
    pub(crate) work: WorkLog,
}

/// One shell command and how it went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CommandRecord {
    /// The command line (clipped).
    pub(crate) command: String,
    /// It failed (error result or a non-zero exit code in its output).
    pub(crate) failed: bool,
}

/// A user message that carries an earlier conversation's summary behind
/// an agent's continuation line (see [`abridge_llm::continuation`]).
fn is_continuation(message: &SharedMessage) -> bool {
    !is_checkpoint(message)
        && message
            .content
            .iter()
            .find_map(Block::as_text)
            .is_some_and(|text| abridge_llm::continuation(text).is_some())
}

/// The line of an output that best says why it failed.
fn failure_line(output: &str) -> String {
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let pick = lines
        .iter()
        .find(|l| {
            let lower = l.to_ascii_lowercase();
            lower.contains("error") || lower.contains("failed") || lower.contains("panicked")
        })
        .or(lines.last());
    clip(pick.copied().unwrap_or("(no output)"), 200)
}

fn questions(text: &str) -> Vec<String> {
    // Sentences end at `.`, `!`, `?` or a line break; the question mark
    // stays on its sentence, so two questions in a row are two questions.
    text.split_inclusive(['\n', '.', '!', '?'])
        .map(str::trim)
        .filter(|s| s.ends_with('?') && s.len() > 8)
        .map(|s| clip(s, 200))
        .collect()
}

impl DigestState {
    /// Adds `messages` (oldest first) to the digest.
    pub(crate) fn absorb(&mut self, messages: &[SharedMessage]) {
        self.work.absorb(messages);
        let names = tool_names(messages);
        let mut pending: BTreeMap<String, String> = BTreeMap::new();
        for message in messages {
            match message.role {
                Role::User if is_continuation(message) => {
                    self.continue_from(&visible_text(message));
                }
                Role::User => {
                    if let Some(text) = user_request_text(message) {
                        self.open_questions.clear();
                        // After an earlier summary the goal is the one it
                        // states, never the first request after it.
                        if self.goal.is_none() && self.earlier.is_none() {
                            self.goal = Some(clip(&text, REQUEST_CHARS * 2));
                        } else {
                            self.requests.push(clip(&text, REQUEST_CHARS));
                        }
                    }
                }
                Role::Assistant => {
                    for (id, name, arguments) in message.tool_calls() {
                        *self.tool_counts.entry(name.to_string()).or_default() += 1;
                        if let Some(command) = command_text(name, arguments) {
                            let command = clip(command.lines().next().unwrap_or(""), 160);
                            pending.insert(id.to_string(), command);
                        }
                    }
                    let text = visible_text(message);
                    let text = text.trim();
                    if !text.is_empty() {
                        if text.chars().count() >= SUBSTANTIAL_CHARS {
                            self.last_progress = Some(clip(text, PROGRESS_CHARS));
                            self.last_step = None;
                        } else {
                            self.last_step = Some(clip(text, 300));
                        }
                        self.open_questions = questions(text);
                    }
                }
                Role::Tool => {
                    let Some((id, content, is_error)) = message.tool_result_block() else {
                        continue;
                    };
                    let output: String = content
                        .iter()
                        .filter_map(Block::as_text)
                        .collect::<Vec<_>>()
                        .join("\n");
                    let failed = output_failed(is_error, &output);
                    if let Some(command) = pending.remove(id) {
                        self.commands_total += 1;
                        if failed {
                            self.commands_failed += 1;
                            self.push_failure(format!("`{command}`: {}", failure_line(&output)));
                        }
                        self.commands.push(CommandRecord { command, failed });
                    } else if is_error {
                        let name = names.get(id).map_or("tool", String::as_str);
                        self.push_failure(format!("{name}: {}", failure_line(&output)));
                    }
                }
                Role::System | Role::Developer => {}
            }
        }
        self.trim();
    }

    /// Starts from an earlier summary this digest did not write (another
    /// method's checkpoint, another agent's continuation message): quoted
    /// as the earlier summary, without the agent's continuation line, and
    /// its goal taken as the goal (see [`summary_goal`]). An earlier
    /// summary already held is kept.
    pub(crate) fn continue_from(&mut self, summary: &str) {
        if self.earlier.is_some() {
            return;
        }
        if self.goal.is_none() {
            self.goal = summary_goal(summary, REQUEST_CHARS * 2);
        }
        self.earlier = Some(clip(abridge_llm::continued_summary(summary), 4_000));
    }

    fn push_failure(&mut self, line: String) {
        self.failures_total += 1;
        self.failures.push(line);
    }

    fn trim(&mut self) {
        let keep = REQUESTS_HEAD + REQUESTS_TAIL;
        if self.requests.len() > keep {
            let drop = self.requests.len() - keep;
            self.requests.drain(REQUESTS_HEAD..REQUESTS_HEAD + drop);
            self.requests_omitted += drop;
        }
        if self.commands.len() > COMMANDS_LISTED {
            let drop = self.commands.len() - COMMANDS_LISTED;
            self.commands.drain(..drop);
        }
        if self.failures.len() > FAILURES_LISTED {
            let drop = self.failures.len() - FAILURES_LISTED;
            self.failures.drain(..drop);
        }
        self.open_questions.truncate(3);
    }

    /// The digest as Markdown, with the `<files>` tree of `files` last.
    pub(crate) fn render(&self, files: &abridge_compact::FileOps) -> String {
        let mut out = String::new();
        out.push_str("## Goal\n");
        out.push_str(match (&self.goal, &self.earlier) {
            (Some(goal), _) => goal,
            (None, Some(_)) => "(stated in the earlier summary below)",
            (None, None) => "(no user request in the compacted part)",
        });
        out.push_str("\n\n");
        self.work.render_constraints(&mut out);
        if let Some(earlier) = &self.earlier {
            out.push_str("## Earlier summary\n");
            out.push_str(earlier.trim());
            out.push_str("\n\n");
        }
        if !self.requests.is_empty() {
            out.push_str("## Later requests, in order\n");
            for (i, request) in self.requests.iter().enumerate() {
                if i == REQUESTS_HEAD && self.requests_omitted > 0 {
                    out.push_str(&format!("- ({} requests omitted)\n", self.requests_omitted));
                }
                out.push_str(&format!("- {request}\n"));
            }
            out.push('\n');
        }
        out.push_str("## Progress\n");
        let changed = files
            .paths
            .values()
            .filter(|a| **a != FileAccess::Read)
            .count();
        let tools: Vec<String> = {
            let mut counts: Vec<(&String, &usize)> = self.tool_counts.iter().collect();
            counts.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            counts
                .iter()
                .take(8)
                .map(|(n, c)| format!("{n} x{c}"))
                .collect()
        };
        out.push_str(&format!(
            "{} tool calls ({}); {} files changed; {} commands run, {} failed.\n",
            self.tool_counts.values().sum::<usize>(),
            if tools.is_empty() {
                "none".to_string()
            } else {
                tools.join(", ")
            },
            changed,
            self.commands_total,
            self.commands_failed,
        ));
        if let Some(progress) = &self.last_progress {
            out.push_str("Last progress reported by the assistant:\n");
            quote(progress, &mut out);
        }
        if let Some(step) = &self.last_step {
            out.push_str("Its last words before the checkpoint:\n");
            quote(step, &mut out);
        }
        out.push('\n');
        self.work.render_work(&mut out);
        if !self.commands.is_empty() {
            out.push_str("## Recent commands\n");
            for command in &self.commands {
                let mark = if command.failed { " (failed)" } else { "" };
                out.push_str(&format!("- `{}`{mark}\n", command.command));
            }
            out.push('\n');
        }
        if !self.failures.is_empty() {
            out.push_str("## Failures\n");
            // Older failures fall off the list; their number still tells
            // the model how rough the compacted stretch was.
            let earlier = self.failures_total.saturating_sub(self.failures.len());
            if earlier > 0 {
                out.push_str(&format!("- ({earlier} earlier failures omitted)\n"));
            }
            for failure in &self.failures {
                out.push_str(&format!("- {failure}\n"));
            }
            out.push('\n');
        }
        if !self.open_questions.is_empty() {
            out.push_str("## Open questions\n");
            for question in &self.open_questions {
                out.push_str(&format!("- {question}\n"));
            }
            out.push('\n');
        }
        out.push_str(&render_files(files));
        out.trim_end().to_string()
    }

    /// Two or three sentences for a status line.
    pub(crate) fn short(&self, files: &abridge_compact::FileOps) -> String {
        let goal = match (&self.goal, &self.earlier) {
            (Some(goal), _) => clip(first_sentence(goal), 160),
            (None, Some(earlier)) => clip(first_sentence(earlier), 160),
            (None, None) => "an unknown task.".to_string(),
        };
        let changed = files
            .paths
            .values()
            .filter(|a| **a != FileAccess::Read)
            .count();
        let mut out = format!(
            "Working on: {goal} So far: {} requests, {changed} files changed, {} commands run.",
            usize::from(self.goal.is_some()) + self.requests.len() + self.requests_omitted,
            self.commands_total
        );
        if let Some(progress) = self.last_progress.as_ref().or(self.last_step.as_ref()) {
            out.push_str(&format!(" Latest: {}", clip(first_sentence(progress), 160)));
        }
        out
    }
}

fn quote(text: &str, out: &mut String) {
    for line in text.lines() {
        out.push_str("> ");
        out.push_str(line);
        out.push('\n');
    }
}

fn first_sentence(text: &str) -> &str {
    let text = text.trim();
    let end = text
        .char_indices()
        .find(|(i, c)| {
            matches!(c, '.' | '!' | '?' | '\n') && text[i + c.len_utf8()..].starts_with([' ', '\n'])
        })
        .map_or(text.len(), |(i, c)| i + c.len_utf8());
    text[..end].trim()
}

/// The model-free compaction method.
#[derive(Debug, Clone, Copy, Default)]
pub struct DigestMethod;

/// The name `digest` registers under.
pub const DIGEST: &str = "digest";

impl DigestMethod {
    /// The digest checkpoint of `plan`, without running async machinery.
    pub(crate) fn checkpoint(plan: &Plan) -> Checkpoint {
        let mut state = DigestState::default();
        let mut files = abridge_compact::FileOps::default();
        if let Some(previous) = plan.previous() {
            files.merge(&previous.files);
            state = continued(previous);
        }
        let from = usize::from(plan.previous().is_some());
        let messages = &plan.messages()[from..];
        state.absorb(messages);
        files.merge(&collect_file_ops(messages));
        let text = state.render(&files);
        let short = state.short(&files);
        let checkpoint = Checkpoint::new(text)
            .with_short_summary(short)
            .with_files(files);
        let mut details = Details::new();
        // The state is plain strings and numbers; should it ever fail to
        // serialize, the digest is still right, only not continuable.
        if let Err(error) = details.insert(&state) {
            tracing::warn!(%error, "digest state not recorded");
        }
        checkpoint.with_details(details)
    }
}

/// The digest a new checkpoint continues from `previous`: its own state
/// when a digest wrote it; the digest of the messages it hid when its text
/// is only a transcript of them (snapcompact's text fallback: quoting it
/// would make the first messages the "goal" and the "earlier summary");
/// else its text, as the earlier summary.
fn continued(previous: &PreviousCheckpoint) -> DigestState {
    if let Some(state) = digest_state(previous) {
        return state;
    }
    if let Some(source) = &previous.source {
        let mut state = source.earlier.as_ref().map(continued).unwrap_or_default();
        state.absorb(&source.messages);
        return state;
    }
    let mut state = DigestState::default();
    state.continue_from(&previous.summary);
    state
}

/// A previous digest's state. A checkpoint written by another method has
/// none; one whose state does not read back (a newer format) is read from
/// its text instead, with a warning.
fn digest_state(previous: &PreviousCheckpoint) -> Option<DigestState> {
    match previous.details.get::<DigestState>() {
        Ok(state) => state,
        Err(error) => {
            tracing::warn!(%error, "previous digest state unreadable; starting from its text");
            None
        }
    }
}

#[async_trait]
impl CompactionMethod for DigestMethod {
    fn name(&self) -> &str {
        DIGEST
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities::MODEL_FREE
    }

    async fn run(&self, plan: &Plan) -> Result<MethodOutput, MethodError> {
        Ok(MethodOutput::Checkpoint(Self::checkpoint(plan)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_read_from_output() {
        assert!(output_failed(false, "Process exited with code 1\nerror: x"));
        assert!(output_failed(false, "Exit code: 2"));
        assert!(!output_failed(false, "Exit code: 0\nall good"));
        assert!(!output_failed(false, "ok"));
        assert!(output_failed(true, ""));
        assert_eq!(
            failure_line("running\nerror[E0308]: mismatched types\nmore"),
            "error[E0308]: mismatched types"
        );
    }

    #[test]
    fn first_sentence_stops_at_the_first_full_stop() {
        assert_eq!(
            first_sentence("Fix the build. Then test."),
            "Fix the build."
        );
        assert_eq!(first_sentence("v1.2 is out"), "v1.2 is out");
    }

    /// Issue 16, point 4: context a harness or an extension put in as user
    /// messages is never the goal nor a later request.
    #[test]
    fn the_goal_is_the_first_message_the_user_wrote() {
        use abridge_llm::Message;
        use abridge_llm::Meta;
        use abridge_llm::Origin;
        let from = |text: &str, origin: Origin| -> SharedMessage {
            std::sync::Arc::new(Message::user(text).with_meta(Meta {
                origin: Some(origin),
                ..Meta::default()
            }))
        };
        let injected = |source: &str| Origin::Injected {
            source: source.into(),
        };
        let messages = [
            from("# AGENTS.md instructions for /w", injected("agents-md")),
            from(
                "<environment_context>/w</environment_context>",
                injected("environment_context"),
            ),
            from("Fix the flaky test.", Origin::User),
            from("$ cargo test\nok", injected("bash")),
            from(
                "lint reminder",
                Origin::Plugin {
                    name: "lint".into(),
                },
            ),
            from("Then update the docs.", Origin::User),
        ];
        let mut state = DigestState::default();
        state.absorb(&messages);
        assert_eq!(state.goal.as_deref(), Some("Fix the flaky test."));
        assert_eq!(state.requests, ["Then update the docs."]);
    }

    /// Issue 27, point 7: an agent's continuation message (here pi's, as
    /// a host that records pi's requests would store it) is neither the
    /// goal nor a request; the goal it states is the goal, and the first
    /// request after it ("can leave it") is a later request.
    #[test]
    fn a_continuation_message_gives_its_stated_goal_not_a_request() {
        let mut state = DigestState::default();
        state.absorb(&[
            user(
                "The conversation history before this point was compacted into the following summary:\n\n<summary>\n## Goal\nMove the importer to streaming reads.\n\n## Progress\nhalf done\n</summary>",
            ),
            user("can leave it"),
        ]);
        assert_eq!(
            state.goal.as_deref(),
            Some("Move the importer to streaming reads.")
        );
        assert_eq!(state.requests, ["can leave it"]);
        let earlier = state.earlier.as_deref().unwrap();
        assert!(earlier.starts_with("## Goal\n"), "{earlier}");
        let short = state.short(&abridge_compact::FileOps::default());
        assert!(
            short.starts_with("Working on: Move the importer to streaming reads."),
            "{short}"
        );
    }

    /// An earlier summary that states no goal section gives its opening
    /// as the goal (Codex's imported checkpoint is the user's first
    /// request); the first request after it stays a later request.
    #[test]
    fn after_a_summary_without_a_goal_section_the_next_request_is_not_the_goal() {
        let mut state = DigestState::default();
        state.continue_from("Another language model started to solve this problem and produced a summary of its thinking process.\nMake the loader stream its input.");
        state.absorb(&[user("can leave it")]);
        assert_eq!(
            state.goal.as_deref(),
            Some("Make the loader stream its input.")
        );
        assert_eq!(state.requests, ["can leave it"]);
        assert_eq!(
            state.earlier.as_deref(),
            Some("Make the loader stream its input.")
        );
    }

    fn user(text: &str) -> SharedMessage {
        std::sync::Arc::new(abridge_llm::Message::user(text))
    }

    #[test]
    fn a_reminder_inside_a_request_is_cut_out_and_the_words_around_it_kept() {
        let mut state = DigestState::default();
        state.absorb(&[
            user("Fix the parser <system-reminder>3 todos open</system-reminder>in src/parse.rs"),
            user("<command-message>init</command-message>Then run the tests."),
        ]);
        assert_eq!(
            state.goal.as_deref(),
            Some("Fix the parser in src/parse.rs")
        );
        assert_eq!(state.requests, ["Then run the tests."]);
    }

    #[test]
    fn open_questions_are_the_assistants_last_real_questions() {
        let mut state = DigestState::default();
        state.absorb(&[
            user("Speed up the loader."),
            std::sync::Arc::new(abridge_llm::Message::assistant(
                "I cached the index. Should the cache be cleared on every run? Why? Next I profile.",
            )),
        ]);
        // "Why?" is too short to carry a question worth keeping.
        assert_eq!(
            state.open_questions,
            ["Should the cache be cleared on every run?"]
        );
        let text = state.render(&abridge_compact::FileOps::default());
        assert!(
            text.ends_with("## Open questions\n- Should the cache be cleared on every run?"),
            "{text}"
        );
    }

    #[test]
    fn requests_past_the_head_and_tail_are_counted_as_omitted() {
        let mut state = DigestState::default();
        let mut messages = vec![user("Port the CLI to clap.")];
        messages.extend((0..20).map(|i| user(&format!("request number {i}"))));
        state.absorb(&messages);
        let keep = REQUESTS_HEAD + REQUESTS_TAIL;
        assert_eq!(state.requests.len(), keep);
        assert_eq!(state.requests_omitted, 20 - keep);
        assert_eq!(state.requests[REQUESTS_HEAD - 1], "request number 2");
        assert_eq!(
            state.requests[REQUESTS_HEAD],
            format!("request number {}", REQUESTS_HEAD + 20 - keep)
        );
        let text = state.render(&abridge_compact::FileOps::default());
        assert!(
            text.contains("- request number 2\n- (5 requests omitted)\n- request number 8\n"),
            "{text}"
        );
        assert!(
            state
                .short(&abridge_compact::FileOps::default())
                .contains("So far: 21 requests")
        );
    }

    /// Issue 32: the user's rules and the work itself are in the digest's
    /// text, not only in its state.
    #[test]
    fn the_digest_names_the_rules_the_changed_files_and_the_checks() {
        let mut state = DigestState::default();
        state.absorb(&[
            user("Speed up the loader. Never push to main."),
            std::sync::Arc::new(abridge_llm::Message::tool_call(
                "1",
                "write",
                serde_json::json!({"path": "src/load.rs", "content": "fn stream_loader() {}"}),
            )),
            std::sync::Arc::new(abridge_llm::Message::tool_result("1", "ok", false)),
            std::sync::Arc::new(abridge_llm::Message::tool_call(
                "2",
                "bash",
                serde_json::json!({"command": "cargo test -p loader"}),
            )),
            std::sync::Arc::new(abridge_llm::Message::tool_result(
                "2",
                "Exit code: 0",
                false,
            )),
        ]);
        let text = state.render(&abridge_compact::FileOps::default());
        assert!(
            text.contains("## Constraints (the user's rules, verbatim)\n- Never push to main.\n"),
            "{text}"
        );
        assert!(
            text.contains("- src/load.rs [stream_loader]: wrote 1 lines\n"),
            "{text}"
        );
        assert!(
            text.contains("## Build and test commands\n- `cargo test -p loader`\n"),
            "{text}"
        );
    }

    #[test]
    fn failures_past_the_list_are_counted_not_forgotten() {
        let mut state = DigestState::default();
        let mut messages = vec![user("Make the build green.")];
        for i in 0..11 {
            let id = format!("c{i}");
            messages.push(std::sync::Arc::new(abridge_llm::Message::tool_call(
                &id,
                "read",
                serde_json::json!({"path": format!("f{i}.rs")}),
            )));
            messages.push(std::sync::Arc::new(abridge_llm::Message::tool_result(
                &id,
                format!("error: f{i}.rs not found"),
                true,
            )));
        }
        state.absorb(&messages);
        assert_eq!(state.failures_total, 11);
        assert_eq!(state.failures.len(), FAILURES_LISTED);
        let text = state.render(&abridge_compact::FileOps::default());
        assert!(
            text.contains(
                "## Failures\n- (3 earlier failures omitted)\n- read: error: f3.rs not found\n"
            ),
            "{text}"
        );
    }
}
