//! The answer key: the facts of a hidden span, found without a model.
//!
//! Deliberately written apart from `digest`: a key built by the code it
//! grades would grade itself. It reads tool calls by their arguments
//! (paths, commands, written text), the user's own messages (never what a
//! harness injected, except instruction files, which are the user's
//! standing rules), and the tool results of commands.

use std::collections::BTreeMap;

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Origin;
use abridge_llm::Role;
use serde_json::Value;

use super::probe::Category;
use super::probe::Probe;
use super::text::command_of;
use super::text::failure_line;
use super::text::path_of;
use super::text::user_words;
use abridge_compact_basic::is_build_or_test;
use abridge_compact_basic::is_rule;
use abridge_compact_basic::output_failed;
use abridge_compact_basic::plan_items;
use abridge_compact_basic::sentences;

/// Identifiers kept in a key: the newest written. A long session defines
/// hundreds; a checkpoint is asked for the ones the work is about now.
pub(crate) const IDENTIFIERS_KEPT: usize = 30;
/// Build and test commands kept: the newest distinct ones.
pub(crate) const COMMANDS_KEPT: usize = 8;
/// Lines taken from one instruction file.
pub(crate) const INSTRUCTION_LINES: usize = 6;

/// Every probe of one hidden span, in category order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Key {
    pub(crate) probes: Vec<Probe>,
}

impl Key {
    /// The probes of one category.
    pub(crate) fn of(&self, category: Category) -> impl Iterator<Item = &Probe> {
        self.probes.iter().filter(move |p| p.category == category)
    }
}

/// How a tool call touches a file, by the tool's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

fn access(name: &str) -> Option<Access> {
    let name = name.to_ascii_lowercase();
    let name = name.rsplit("__").next().unwrap_or(&name);
    match name {
        "read" | "read_file" | "view" | "open" | "notebookread" | "view_file" => Some(Access::Read),
        "write" | "write_file" | "create" | "create_file" | "edit" | "edit_file" | "multiedit"
        | "notebookedit" | "str_replace" | "str_replace_editor" | "insert" | "patch"
        | "apply_patch" => Some(Access::Write),
        _ => None,
    }
}

/// What the walk over the span collects, before it becomes probes.
#[derive(Default)]
struct Walk {
    requests: Vec<String>,
    constraints: Vec<String>,
    changed: Vec<String>,
    read: Vec<String>,
    /// The last failing command (or tool) and its error line.
    last_failure: Option<(String, String)>,
    commands: Vec<String>,
    identifiers: Vec<String>,
    /// Plan items not done, from the newest plan the agent wrote.
    open_plan: Vec<String>,
    /// The latest request's turn ended: an assistant message without tool
    /// calls came after it.
    answered: bool,
    pending: BTreeMap<String, String>,
}

/// The key of `messages` (the hidden span, oldest first).
pub(crate) fn derive(messages: &[Message]) -> Key {
    let mut walk = Walk::default();
    for message in messages {
        walk.absorb(message);
    }
    walk.into_key()
}

impl Walk {
    fn absorb(&mut self, message: &Message) {
        if abridge_compact::host::is_checkpoint(message) {
            return;
        }
        match message.role {
            Role::User => self.user(message),
            Role::Assistant => self.assistant(message),
            Role::Tool => self.tool(message),
            Role::System | Role::Developer => self.instructions(message),
        }
    }

    fn user(&mut self, message: &Message) {
        match &message.meta.origin {
            Some(Origin::Injected { source }) => {
                if is_instruction_source(source, &message.plain_text()) {
                    self.instructions(message);
                }
            }
            Some(Origin::Plugin { .. } | Origin::BranchSummary) => {}
            _ => {
                let Some(words) = user_words(&message.plain_text()) else {
                    return;
                };
                for sentence in sentences(&words) {
                    if is_rule(&sentence) {
                        self.constraints.push(sentence);
                    }
                }
                self.requests.push(words);
                self.answered = false;
            }
        }
    }

    /// An instruction file: its rule lines (bullets and imperative lines),
    /// the first few, as constraints.
    fn instructions(&mut self, message: &Message) {
        let text = message.plain_text();
        if !text.contains("AGENTS.md") && !text.contains("CLAUDE.md") {
            return;
        }
        let rules = text
            .lines()
            .map(str::trim)
            .filter_map(|line| {
                line.strip_prefix("- ")
                    .or_else(|| line.strip_prefix("* "))
                    .or_else(|| is_rule(line).then_some(line))
            })
            .filter(|line| line.chars().count() >= 12)
            .take(INSTRUCTION_LINES)
            .map(str::to_string);
        self.constraints.extend(rules);
    }

    fn assistant(&mut self, message: &Message) {
        let mut calls = 0;
        for (id, name, arguments) in message.tool_calls() {
            calls += 1;
            match access(name) {
                Some(Access::Read) => self.read.extend(path_of(arguments)),
                Some(Access::Write) => {
                    self.changed.extend(written_paths(arguments));
                    for text in written_text(arguments) {
                        self.identifiers.extend(definitions(&text));
                    }
                }
                None => {}
            }
            if let Some(command) = command_of(name, arguments) {
                let line = command.lines().next().unwrap_or("").trim().to_string();
                if is_build_or_test(&line) {
                    self.commands.push(line.clone());
                }
                self.pending.insert(id.to_string(), line);
            } else {
                self.pending.insert(id.to_string(), name.to_string());
            }
            if let Some(plan) = plan_items(name, arguments) {
                self.open_plan = plan;
            }
        }
        if calls == 0 && !message.plain_text().trim().is_empty() {
            self.answered = true;
        }
    }

    fn tool(&mut self, message: &Message) {
        let Some((id, content, is_error)) = message.tool_result_block() else {
            return;
        };
        let output: String = content
            .iter()
            .filter_map(Block::as_text)
            .collect::<Vec<_>>()
            .join("\n");
        let Some(what) = self.pending.remove(id) else {
            return;
        };
        if output_failed(is_error, &output) {
            self.last_failure = Some((what, failure_line(&output)));
        }
    }

    fn into_key(self) -> Key {
        let mut probes = Vec::new();
        let mut push = |category: Category, texts: &mut dyn Iterator<Item = &String>| {
            for text in texts {
                let probe = match category {
                    Category::FilesChanged | Category::FilesRead => Probe::path(category, text),
                    _ => Probe::new(category, text),
                };
                if let Some(probe) = probe
                    && !probes
                        .iter()
                        .any(|p: &Probe| p.category == category && p.needle == probe.needle)
                {
                    probes.push(probe);
                }
            }
        };
        let task: Vec<&String> = self
            .requests
            .first()
            .into_iter()
            .chain(self.requests.last())
            .collect();
        push(Category::Task, &mut task.into_iter());
        push(Category::Constraints, &mut self.constraints.iter());
        push(Category::FilesChanged, &mut self.changed.iter());
        push(
            Category::FilesRead,
            &mut self.read.iter().filter(|p| !self.changed.contains(p)),
        );
        let failure: Vec<&String> = self
            .last_failure
            .iter()
            .flat_map(|(what, line)| [what, line])
            .collect();
        push(Category::LastError, &mut failure.into_iter());
        let commands = newest_distinct(&self.commands, COMMANDS_KEPT);
        push(Category::Commands, &mut commands.iter());
        let identifiers = newest_distinct(&self.identifiers, IDENTIFIERS_KEPT);
        push(Category::Identifiers, &mut identifiers.iter());
        let mut open: Vec<&String> = Vec::new();
        if !self.answered {
            open.extend(self.requests.last());
        }
        open.extend(self.open_plan.iter());
        push(Category::OpenItems, &mut open.into_iter());
        Key { probes }
    }
}

/// The newest `keep` distinct items, oldest first.
fn newest_distinct(items: &[String], keep: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items.iter().rev() {
        if !out.contains(item) {
            out.push(item.clone());
        }
        if out.len() == keep {
            break;
        }
    }
    out.reverse();
    out
}

/// A message a harness injected that carries an instruction file.
fn is_instruction_source(source: &str, text: &str) -> bool {
    matches!(source, "agents-md" | "user_instructions")
        || text.contains("CLAUDE.md")
        || text.contains("AGENTS.md")
}

/// Paths a write names: its path argument, or the files a patch touches.
fn written_paths(arguments: &Value) -> Vec<String> {
    if let Some(path) = path_of(arguments) {
        return vec![path];
    }
    let patch = arguments
        .as_str()
        .or_else(|| arguments.get("input").and_then(Value::as_str))
        .or_else(|| arguments.get("patch").and_then(Value::as_str))
        .unwrap_or("");
    patch
        .lines()
        .filter_map(|line| {
            ["*** Add File:", "*** Update File:", "*** Delete File:"]
                .iter()
                .find_map(|h| line.trim_start().strip_prefix(h))
        })
        .map(|p| p.trim().to_string())
        .collect()
}

/// The new text a write puts in: a file's content, an edit's replacement,
/// a patch's added lines.
fn written_text(arguments: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["content", "new_string", "new_str", "file_text", "text"] {
        if let Some(text) = arguments.get(key).and_then(Value::as_str) {
            out.push(text.to_string());
        }
    }
    if let Some(edits) = arguments.get("edits").and_then(Value::as_array) {
        for edit in edits {
            out.extend(
                edit.get("new_string")
                    .and_then(Value::as_str)
                    .map(str::to_string),
            );
        }
    }
    let patch = arguments
        .as_str()
        .or_else(|| arguments.get("input").and_then(Value::as_str))
        .unwrap_or("");
    let added: Vec<&str> = patch.lines().filter_map(|l| l.strip_prefix('+')).collect();
    if !added.is_empty() {
        out.push(added.join("\n"));
    }
    out
}

/// Keywords after which a language names what it defines.
const DEFINERS: &[&str] = &[
    "fn",
    "struct",
    "enum",
    "trait",
    "type",
    "class",
    "def",
    "defp",
    "defmodule",
    "function",
    "interface",
    "const",
    "static",
    "mod",
    "macro_rules!",
];

/// Names defined in `text`: the word after a definer keyword.
pub(crate) fn definitions(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let words: Vec<&str> = text.split_whitespace().collect();
    for pair in words.windows(2) {
        if !DEFINERS.contains(&pair[0]) {
            continue;
        }
        let name: String = pair[1]
            .chars()
            .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '?' | '!'))
            .collect();
        let name = name.trim_end_matches(['.', '?', '!']).to_string();
        if name.chars().count() >= 5 && name.chars().next().is_some_and(char::is_alphabetic) {
            out.push(name);
        }
    }
    out
}
