//! The work a digest keeps beyond requests and progress: the user's
//! standing rules, what each changed file gained and its last change, the
//! version of each file read, the commands that build and test, and the
//! plan items still open. Everything is read from tool calls and results;
//! every list is bounded, so the digest stays small however long the
//! history (issue 32).

use std::collections::BTreeMap;

use abridge_compact::FileAccess;
use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_llm::SharedMessage;
use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

use crate::files::classify;
use crate::files::clean_path;
use crate::files::command_text;
use crate::files::common_dir;
use crate::files::output_failed;
use crate::files::patch_files;
use crate::files::patch_text;
use crate::files::path_argument;
use crate::transcript::clip;
use crate::transcript::user_request_text;

pub(crate) mod signals;

pub(crate) use signals::definitions;
pub use signals::is_build_or_test;
pub use signals::is_rule;
pub use signals::plan_items;
pub use signals::sentences;

/// Rules kept (the newest).
pub(crate) const CONSTRAINTS_KEPT: usize = 16;
/// Characters kept of one rule.
pub(crate) const CONSTRAINT_CHARS: usize = 200;
/// Rule lines taken from one instruction file.
pub(crate) const INSTRUCTION_LINES: usize = 6;
/// Changed files listed (the most recently changed).
pub(crate) const CHANGED_KEPT: usize = 20;
/// Symbols listed per changed file (the newest).
pub(crate) const SYMBOLS_PER_FILE: usize = 8;
/// Files read listed (the most recently read).
pub(crate) const READ_KEPT: usize = 20;
/// Build and test commands listed (the newest distinct).
pub(crate) const CHECKS_KEPT: usize = 8;
/// Plan items listed.
pub(crate) const PLAN_KEPT: usize = 10;

/// What the digest keeps of the work itself.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct WorkLog {
    /// The user's rules and instruction-file lines, oldest first.
    #[serde(default)]
    pub(crate) constraints: Vec<String>,
    /// Changed files, least recently changed first.
    #[serde(default)]
    pub(crate) changed: Vec<FileChange>,
    /// Files read, least recently read first.
    #[serde(default)]
    pub(crate) read: Vec<FileSeen>,
    /// Build and test commands, oldest first.
    #[serde(default)]
    pub(crate) checks: Vec<Check>,
    /// Items of the newest plan not marked done.
    #[serde(default)]
    pub(crate) plan: Vec<String>,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileChange {
    pub(crate) path: String,
    /// Names defined in what was written to it, newest last.
    pub(crate) symbols: Vec<String>,
    /// Its last change, in one line.
    pub(crate) last: String,
}

/// One file read, as it was seen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FileSeen {
    pub(crate) path: String,
    /// Characters of the read's result.
    pub(crate) chars: usize,
    /// FNV-1a of the result, 8 hex digits: a re-read with the same hash
    /// saw the same text.
    pub(crate) hash: String,
    /// The lines asked for, when the read named a range.
    pub(crate) lines: Option<String>,
}

/// One build or test command and how its last run went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Check {
    pub(crate) command: String,
    pub(crate) failed: bool,
}

/// A call waiting for its result.
enum Pending {
    Read { path: String, lines: Option<String> },
    Check(String),
}

impl WorkLog {
    /// Adds what `messages` (oldest first) show. A plan never separates
    /// a call from its result, so both are in the same span.
    pub(crate) fn absorb(&mut self, messages: &[SharedMessage]) {
        let mut pending = BTreeMap::new();
        // The file an editor without a path argument acts on (SWE-agent's
        // `edit` acts on the file last opened).
        let mut current = None;
        for message in messages {
            self.absorb_one(message, &mut pending, &mut current);
        }
        self.trim();
    }

    fn absorb_one(
        &mut self,
        message: &SharedMessage,
        pending: &mut BTreeMap<String, Pending>,
        current: &mut Option<String>,
    ) {
        match message.role {
            Role::User | Role::Developer | Role::System => self.rules_from(message),
            Role::Assistant => {
                for (id, name, arguments) in message.tool_calls() {
                    self.call(id, name, arguments, pending, current);
                }
            }
            Role::Tool => {
                let Some((id, content, is_error)) = message.tool_result_block() else {
                    return;
                };
                let output: String = content
                    .iter()
                    .filter_map(Block::as_text)
                    .collect::<Vec<_>>()
                    .join("\n");
                match pending.remove(id) {
                    Some(Pending::Read { path, lines }) if !is_error => {
                        self.read.retain(|f| f.path != path);
                        self.read.push(FileSeen {
                            path,
                            chars: output.chars().count(),
                            hash: fnv(&output),
                            lines,
                        });
                    }
                    Some(Pending::Check(command)) => {
                        let failed = output_failed(is_error, &output);
                        self.checks.retain(|c| c.command != command);
                        self.checks.push(Check { command, failed });
                    }
                    _ => {}
                }
            }
        }
    }

    /// Rules from a user message the user typed, or from an instruction
    /// file a harness injected.
    fn rules_from(&mut self, message: &SharedMessage) {
        if abridge_compact::host::is_checkpoint(message) {
            return;
        }
        let text = message.plain_text();
        let injected = matches!(message.meta.origin, Some(Origin::Injected { .. }));
        if message.role != Role::User || injected {
            if is_instructions(message, &text) {
                let rules: Vec<String> = text
                    .lines()
                    .map(str::trim)
                    .filter_map(|line| {
                        line.strip_prefix("- ")
                            .or_else(|| line.strip_prefix("* "))
                            .or_else(|| is_rule(line).then_some(line))
                    })
                    .filter(|line| line.chars().count() >= 12)
                    .take(INSTRUCTION_LINES)
                    .map(str::to_string)
                    .collect();
                rules.iter().for_each(|r| self.add_rule(r));
            }
            return;
        }
        if let Some(words) = user_request_text(message) {
            for sentence in sentences(&words) {
                if is_rule(&sentence) {
                    self.add_rule(&sentence);
                }
            }
        }
    }

    fn add_rule(&mut self, rule: &str) {
        let rule = clip(rule, CONSTRAINT_CHARS);
        if !self.constraints.contains(&rule) {
            self.constraints.push(rule);
        }
    }

    fn call(
        &mut self,
        id: &str,
        name: &str,
        arguments: &Value,
        pending: &mut BTreeMap<String, Pending>,
        current: &mut Option<String>,
    ) {
        if let Some(plan) = plan_items(name, arguments) {
            self.plan = plan;
        }
        if let Some(patch) = patch_text(name, arguments) {
            let added = patch.lines().filter(|l| l.starts_with('+')).count();
            let removed = patch.lines().filter(|l| l.starts_with('-')).count();
            let new: Vec<&str> = patch.lines().filter_map(|l| l.strip_prefix('+')).collect();
            for path in patch_files(&patch) {
                let last = format!("patch +{added} -{removed} lines");
                self.changed_file(path, &new.join("\n"), last);
            }
            return;
        }
        if let Some(command) = command_text(name, arguments) {
            let line = clip(command.lines().next().unwrap_or(""), 160);
            if is_build_or_test(&line) {
                pending.insert(id.to_string(), Pending::Check(line));
            }
            return;
        }
        let editor_view = name.eq_ignore_ascii_case("str_replace_editor")
            && arguments.get("command").and_then(Value::as_str) == Some("view");
        let access = if name.eq_ignore_ascii_case("str_replace_editor") {
            Some(if editor_view {
                FileAccess::Read
            } else {
                FileAccess::Write
            })
        } else {
            classify(name)
        };
        let path = path_argument(arguments).and_then(clean_path);
        if matches!(name, "open" | "create")
            && let Some(path) = &path
        {
            *current = Some(path.clone());
        }
        match access {
            Some(FileAccess::Read) => {
                if let Some(path) = path {
                    let lines = line_range(arguments);
                    pending.insert(id.to_string(), Pending::Read { path, lines });
                }
            }
            Some(_) => {
                let Some(path) = path.or_else(|| current.clone()) else {
                    return;
                };
                let (new, last) = change_of(arguments);
                self.changed_file(path, &new, last);
            }
            None => {}
        }
    }

    fn changed_file(&mut self, path: String, new: &str, last: String) {
        let mut symbols = match self.changed.iter().position(|f| f.path == path) {
            Some(at) => self.changed.remove(at).symbols,
            None => Vec::new(),
        };
        for symbol in definitions(new) {
            symbols.retain(|s| *s != symbol);
            symbols.push(symbol);
        }
        let drop = symbols.len().saturating_sub(SYMBOLS_PER_FILE);
        symbols.drain(..drop);
        self.changed.push(FileChange {
            path,
            symbols,
            last,
        });
    }

    fn trim(&mut self) {
        fn keep_newest<T>(items: &mut Vec<T>, keep: usize) {
            let drop = items.len().saturating_sub(keep);
            items.drain(..drop);
        }
        keep_newest(&mut self.constraints, CONSTRAINTS_KEPT);
        keep_newest(&mut self.changed, CHANGED_KEPT);
        keep_newest(&mut self.read, READ_KEPT);
        keep_newest(&mut self.checks, CHECKS_KEPT);
        self.plan.truncate(PLAN_KEPT);
    }

    /// The sections, as Markdown; empty sections are left out.
    pub(crate) fn render_constraints(&self, out: &mut String) {
        section(
            out,
            "## Constraints (the user's rules, verbatim)",
            &self.constraints_body(),
        );
    }

    /// Files changed and read, build and test commands, open plan items.
    pub(crate) fn render_work(&self, out: &mut String) {
        let root = common_dir(
            self.changed
                .iter()
                .map(|f| f.path.as_str())
                .chain(self.read.iter().map(|f| f.path.as_str())),
        );
        // A shared directory exists only when some file is listed.
        if !root.is_empty() {
            out.push_str(&format!("(file paths below are relative to {root})\n\n"));
        }
        section(
            out,
            "## Files changed (last change last)",
            &self.changed_body(root),
        );
        section(
            out,
            "## Files read (version seen; unchanged since unless listed above)",
            &self.read_body(root),
        );
        section(out, "## Build and test commands", &self.checks_body());
        section(out, "## Plan items not done", &self.plan_body());
    }

    /// The rules, one line each.
    pub(crate) fn constraints_body(&self) -> String {
        self.constraints
            .iter()
            .map(|rule| format!("- {rule}\n"))
            .collect()
    }

    /// One line per changed file, its path without the prefix `root`.
    pub(crate) fn changed_body(&self, root: &str) -> String {
        let mut out = String::new();
        for file in &self.changed {
            let symbols = if file.symbols.is_empty() {
                String::new()
            } else {
                format!(" [{}]", file.symbols.join(", "))
            };
            out.push_str(&format!(
                "- {}{symbols}: {}\n",
                file.path.strip_prefix(root).unwrap_or(&file.path),
                file.last
            ));
        }
        out
    }

    /// One line per file read and not changed since, its path without
    /// the prefix `root`.
    pub(crate) fn read_body(&self, root: &str) -> String {
        let mut out = String::new();
        for file in &self.read {
            if self.changed.iter().any(|c| c.path == file.path) {
                continue;
            }
            let lines = file
                .lines
                .as_ref()
                .map_or_else(String::new, |l| format!(", lines {l}"));
            out.push_str(&format!(
                "- {}: {} chars, fnv {}{lines}\n",
                file.path.strip_prefix(root).unwrap_or(&file.path),
                file.chars,
                file.hash
            ));
        }
        out
    }

    /// One line per build or test command, marked when its last run
    /// failed.
    pub(crate) fn checks_body(&self) -> String {
        let mut out = String::new();
        for check in &self.checks {
            let mark = if check.failed {
                " (last run failed)"
            } else {
                ""
            };
            out.push_str(&format!("- `{}`{mark}\n", check.command));
        }
        out
    }

    /// One line per plan item not done.
    pub(crate) fn plan_body(&self) -> String {
        self.plan
            .iter()
            .map(|item| format!("- {}\n", clip(item, 200)))
            .collect()
    }
}

/// `heading` and `body` as a section, left out when `body` is empty.
fn section(out: &mut String, heading: &str, body: &str) {
    if body.is_empty() {
        return;
    }
    out.push_str(heading);
    out.push('\n');
    out.push_str(body);
    out.push('\n');
}

/// A message that carries an instruction file (Codex's AGENTS.md and
/// `user_instructions`, Claude Code's CLAUDE.md).
fn is_instructions(message: &Message, text: &str) -> bool {
    matches!(
        &message.meta.origin,
        Some(Origin::Injected { source }) if source == "agents-md" || source == "user_instructions"
    ) || text.contains("AGENTS.md")
        || text.contains("CLAUDE.md")
}

/// The new text an edit writes and its change in one line.
fn change_of(arguments: &Value) -> (String, String) {
    let get = |key: &str| arguments.get(key).and_then(Value::as_str);
    let first = |text: &str| {
        clip(
            text.lines()
                .map(str::trim)
                .find(|l| !l.is_empty())
                .unwrap_or(""),
            50,
        )
    };
    if let (Some(old), Some(new)) = (
        get("old_string")
            .or(get("old_str"))
            .or(get("oldText"))
            .or(get("search")),
        get("new_string")
            .or(get("new_str"))
            .or(get("newText"))
            .or(get("replace")),
    ) {
        let last = format!("replaced `{}` with `{}`", first(old), first(new));
        return (new.to_string(), last);
    }
    if let Some(edits) = arguments.get("edits").and_then(Value::as_array) {
        let new: Vec<&str> = edits
            .iter()
            .filter_map(|e| e.get("new_string").and_then(Value::as_str))
            .collect();
        return (new.join("\n"), format!("{} edits", edits.len()));
    }
    for key in ["content", "file_text", "text", "new_str"] {
        if let Some(text) = get(key) {
            return (
                text.to_string(),
                format!("wrote {} lines", text.lines().count()),
            );
        }
    }
    (String::new(), "changed".to_string())
}

/// The line range a read asked for: `offset`/`limit`, or a view range.
fn line_range(arguments: &Value) -> Option<String> {
    if let Some(range) = arguments.get("view_range").and_then(Value::as_array) {
        let ends: Vec<String> = range.iter().map(|v| v.to_string()).collect();
        return Some(ends.join("-"));
    }
    if let Some(line) = arguments.get("line_number").and_then(Value::as_u64) {
        return Some(format!("around {line}"));
    }
    let offset = arguments.get("offset").and_then(Value::as_u64)?;
    Some(match arguments.get("limit").and_then(Value::as_u64) {
        Some(limit) => format!("{offset}-{}", offset + limit.saturating_sub(1)),
        None => format!("{offset}-"),
    })
}

/// FNV-1a, 32 bits, as 8 hex digits.
fn fnv(text: &str) -> String {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in text.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    format!("{hash:08x}")
}

#[cfg(test)]
mod tests;
