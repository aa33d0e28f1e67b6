//! File operations: which files a stretch of history read and changed,
//! found from tool calls of pi, Claude Code, Codex, SWE-agent and
//! similar agents, and rendered as a `<files>` tree.

use std::collections::BTreeMap;
use std::collections::HashMap;

use abridge_compact::FileAccess;
use abridge_compact::FileOps;
use abridge_llm::SharedMessage;
use serde_json::Value;

/// Most files listed in a `<files>` tree; the rest are counted on an
/// elision line.
pub(crate) const MAX_FILES_LISTED: usize = 20;

/// How a tool touches files, by tool name (case-insensitive).
pub(crate) fn classify(name: &str) -> Option<FileAccess> {
    let name = name.to_ascii_lowercase();
    let name = name.rsplit("__").next().unwrap_or(&name).to_string();
    match name.as_str() {
        // pi, Claude Code, SWE-agent, OpenCode-style names
        "read" | "read_file" | "view" | "open" | "cat" | "notebookread" | "view_file" => {
            Some(FileAccess::Read)
        }
        "write" | "write_file" | "create" | "create_file" | "edit" | "edit_file" | "multiedit"
        | "notebookedit" | "str_replace" | "insert" | "patch" => Some(FileAccess::Write),
        _ => None,
    }
}

const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filePath",
    "filename",
    "notebook_path",
    "file",
];

pub(crate) fn path_argument(arguments: &Value) -> Option<&str> {
    PATH_KEYS
        .iter()
        .find_map(|key| arguments.get(*key).and_then(Value::as_str))
}

/// Cleans a path as a tool wrote it: strips line selectors (`a.rs:10`,
/// `a.rs:10-20`, `a.rs#L5`), skips URLs (anything with a scheme).
pub(crate) fn clean_path(raw: &str) -> Option<String> {
    let raw = raw.trim().trim_matches('"').trim_matches('\'');
    if raw.is_empty() || raw.contains("://") || raw.starts_with("data:") {
        return None;
    }
    let mut path = raw;
    if let Some(hash) = path.find("#L") {
        path = &path[..hash];
    }
    // Strip trailing `:N`, `:N-M`, `:N:M` selectors.
    while let Some(colon) = path.rfind(':') {
        let tail = &path[colon + 1..];
        if !tail.is_empty()
            && tail
                .chars()
                .all(|c| c.is_ascii_digit() || c == '-' || c == ',')
        {
            path = &path[..colon];
        } else {
            break;
        }
    }
    (!path.is_empty()).then(|| path.to_string())
}

/// The files an `apply_patch` body names: `*** Add File:`, `*** Update
/// File:`, `*** Delete File:` and `*** Move to:` headers.
pub(crate) fn patch_files(patch: &str) -> Vec<String> {
    const HEADERS: &[&str] = &[
        "*** Add File:",
        "*** Update File:",
        "*** Delete File:",
        "*** Move to:",
    ];
    patch
        .lines()
        .filter_map(|line| {
            let line = line.trim_start();
            HEADERS
                .iter()
                .find_map(|h| line.strip_prefix(h))
                .and_then(clean_path)
        })
        .collect()
}

/// The text of an `apply_patch` call, in the shapes agents use: a bare
/// string, `{"input": ...}`, `{"patch": ...}`, or a shell command that
/// pipes a heredoc into `apply_patch`.
pub(crate) fn patch_text(name: &str, arguments: &Value) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    if lower == "apply_patch" {
        return match arguments {
            Value::String(s) => Some(s.clone()),
            other => other
                .get("input")
                .or_else(|| other.get("patch"))
                .and_then(Value::as_str)
                .map(str::to_string),
        };
    }
    let command = command_text(name, arguments)?;
    command.contains("*** Begin Patch").then_some(command)
}

/// The command line of a shell tool call (pi `bash`, Claude Code `Bash`,
/// Codex `shell`/`exec_command`, SWE-agent `bash`), if `name` is one.
pub(crate) fn command_text(name: &str, arguments: &Value) -> Option<String> {
    let lower = name.to_ascii_lowercase();
    if !matches!(
        lower.as_str(),
        "bash"
            | "shell"
            | "exec_command"
            | "local_shell"
            | "run_command"
            | "execute_command"
            | "terminal"
    ) {
        return None;
    }
    let value = ["command", "cmd", "commandLine"]
        .iter()
        .find_map(|key| arguments.get(*key))
        .or(match arguments {
            Value::String(_) => Some(arguments),
            _ => None,
        })?;
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let parts: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
            // ["bash", "-lc", "cargo test"] -> "cargo test"
            match parts.as_slice() {
                [shell, flag, script] if shell.ends_with("sh") && flag.starts_with('-') => {
                    Some((*script).to_string())
                }
                _ => Some(parts.join(" ")),
            }
        }
        _ => None,
    }
}

/// Collects file operations from `messages`: every file tool call whose
/// result is not an error (a call with no result counts).
pub(crate) fn collect_file_ops(messages: &[SharedMessage]) -> FileOps {
    let failed: HashMap<&str, bool> = messages
        .iter()
        .filter_map(|m| {
            m.tool_result_block()
                .map(|(id, _, is_error)| (id, is_error))
        })
        .collect();
    let mut ops = FileOps::default();
    // SWE-agent's `edit` and `insert` act on the file last opened.
    let mut current: Option<String> = None;
    for message in messages {
        for (id, name, arguments) in message.tool_calls() {
            if failed.get(id).copied().unwrap_or(false) {
                continue;
            }
            if let Some(patch) = patch_text(name, arguments) {
                for path in patch_files(&patch) {
                    ops.record(path, FileAccess::Write);
                }
                continue;
            }
            let Some(access) = classify(name) else {
                continue;
            };
            match path_argument(arguments).and_then(clean_path) {
                Some(path) => {
                    if matches!(name, "open" | "create") {
                        current = Some(path.clone());
                    }
                    ops.record(path, access);
                }
                None if access == FileAccess::Write => {
                    if let Some(path) = &current {
                        ops.record(path.clone(), FileAccess::Write);
                    }
                }
                None => {}
            }
        }
        // str_replace_editor is not in `classify`'s table because its
        // access depends on its command.
        for (id, name, arguments) in message.tool_calls() {
            if !name.eq_ignore_ascii_case("str_replace_editor")
                || failed.get(id).copied().unwrap_or(false)
            {
                continue;
            }
            let access = match arguments.get("command").and_then(Value::as_str) {
                Some("view") => FileAccess::Read,
                _ => FileAccess::Write,
            };
            if let Some(path) = path_argument(arguments).and_then(clean_path) {
                ops.record(path, access);
            }
        }
    }
    ops
}

/// The path a tool call reads, when it is a file read (`read`, `view`,
/// `open`, `str_replace_editor` viewing, ...): the one classification the
/// digest's file list uses, for readers such as `recall` that look a
/// file's last read up by its path.
pub fn read_path(name: &str, arguments: &Value) -> Option<String> {
    let reads = if name.eq_ignore_ascii_case("str_replace_editor") {
        arguments.get("command").and_then(Value::as_str) == Some("view")
    } else {
        classify(name) == Some(FileAccess::Read)
    };
    if reads {
        path_argument(arguments).and_then(clean_path)
    } else {
        None
    }
}

/// The paths a tool call writes: a file tool's path argument, or every
/// file a patch adds, updates or deletes.
pub fn written_paths(name: &str, arguments: &Value) -> Vec<String> {
    if let Some(patch) = patch_text(name, arguments) {
        return patch_files(&patch);
    }
    let writes = if name.eq_ignore_ascii_case("str_replace_editor") {
        arguments.get("command").and_then(Value::as_str) != Some("view")
    } else {
        classify(name) == Some(FileAccess::Write)
    };
    match path_argument(arguments).and_then(clean_path) {
        Some(path) if writes => vec![path],
        _ => Vec::new(),
    }
}

/// Renders `ops` as a `<files>` tree: files grouped under their directory,
/// each with its mark (read, write, read-write). Written files come first
/// when the list is cut at [`MAX_FILES_LISTED`]; an elision line counts
/// the rest. Empty string when there are no files.
pub(crate) fn render_files(ops: &FileOps) -> String {
    if ops.is_empty() {
        return String::new();
    }
    let mut chosen: Vec<(&String, &FileAccess)> = ops.paths.iter().collect();
    // Writes before reads, then by path, so the cut drops reads first.
    chosen.sort_by_key(|(path, access)| (**access == FileAccess::Read, (*path).clone()));
    let elided = chosen.len().saturating_sub(MAX_FILES_LISTED);
    chosen.truncate(MAX_FILES_LISTED);
    // Paths sharing a long directory prefix (absolute paths under the
    // project root) are listed relative to it, once.
    let root = common_dir(chosen.iter().map(|(p, _)| p.as_str()));
    let mut by_dir: BTreeMap<&str, Vec<(&str, FileAccess)>> = BTreeMap::new();
    for (path, access) in chosen {
        let path = &path[root.len()..];
        let (dir, file) = match path.rfind('/') {
            Some(i) if i > 0 => (&path[..=i], &path[i + 1..]),
            _ => ("", path),
        };
        by_dir.entry(dir).or_default().push((file, *access));
    }
    let mut out = String::from("<files>\n");
    if !root.is_empty() {
        out.push_str(&format!("(paths relative to {root})\n"));
    }
    for (dir, files) in by_dir {
        let indent = if dir.is_empty() {
            ""
        } else {
            out.push_str(dir);
            out.push('\n');
            "  "
        };
        for (file, access) in files {
            out.push_str(&format!("{indent}{file} ({})\n", access.mark()));
        }
    }
    if elided > 0 {
        out.push_str(&format!("(+{elided} more files not listed)\n"));
    }
    out.push_str("</files>");
    out
}

/// The longest directory prefix (ending in `/`) shared by every path,
/// when it has at least two components; else empty.
pub(crate) fn common_dir<'a>(mut paths: impl Iterator<Item = &'a str>) -> &'a str {
    let Some(first) = paths.next() else {
        return "";
    };
    let mut prefix = match first.rfind('/') {
        Some(i) => &first[..=i],
        None => return "",
    };
    for path in paths {
        while !path.starts_with(prefix) {
            match prefix[..prefix.len() - 1].rfind('/') {
                Some(i) => prefix = &prefix[..=i],
                None => return "",
            }
        }
    }
    if prefix.trim_matches('/').matches('/').count() >= 1 {
        prefix
    } else {
        ""
    }
}

/// The files a checkpoint lists: those of the previous checkpoint (which
/// the plan folds in) merged with those the planned span touched, so the
/// list stays cumulative across compactions.
pub(crate) fn cumulative_file_ops(plan: &abridge_compact::Plan) -> FileOps {
    let mut files = plan.previous().map(|p| p.files.clone()).unwrap_or_default();
    files.merge(&collect_file_ops(plan.messages()));
    files
}

/// `body` with the `<files>` tree of `files` under it; `body` alone when
/// no file was touched.
pub(crate) fn with_files_tree(body: &str, files: &FileOps) -> String {
    let tree = render_files(files);
    if tree.is_empty() {
        body.to_string()
    } else {
        format!("{body}\n\n{tree}")
    }
}

/// True when a command's output says it failed: an error result, or a
/// non-zero exit code in its text. Public for `cargo xtask eval
/// fidelity`, whose answer key reads failures the same way.
pub fn output_failed(is_error: bool, output: &str) -> bool {
    if is_error {
        return true;
    }
    let lower = output.to_ascii_lowercase();
    for marker in ["exit code", "exited with code", "exit status"] {
        let mut from = 0;
        while let Some(found) = lower[from..].find(marker) {
            let rest = &lower[from + found + marker.len()..];
            let digits: String = rest
                .trim_start_matches([':', ' ', '='])
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            if digits.parse::<u64>().is_ok_and(|code| code != 0) {
                return true;
            }
            from += found + marker.len();
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use abridge_llm::Message;

    use super::*;

    fn call(id: &str, name: &str, arguments: Value) -> SharedMessage {
        Arc::new(Message::tool_call(id, name, arguments))
    }

    #[test]
    fn selectors_are_stripped_and_urls_skipped() {
        assert_eq!(clean_path("src/a.rs:10-20").as_deref(), Some("src/a.rs"));
        assert_eq!(clean_path("src/a.rs#L5").as_deref(), Some("src/a.rs"));
        assert_eq!(clean_path("C:/x/a.rs:3").as_deref(), Some("C:/x/a.rs"));
        assert_eq!(clean_path("https://example.com/a.rs"), None);
    }

    #[test]
    fn tools_of_each_agent_map_to_accesses() {
        let patch = "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-a\n+b\n*** Add File: src/new.rs\n+x\n*** End Patch";
        let messages = vec![
            call("1", "read", serde_json::json!({"path": "src/lib.rs"})),
            call(
                "2",
                "Edit",
                serde_json::json!({"file_path": "/p/src/main.rs", "old_string": "a"}),
            ),
            call("3", "apply_patch", serde_json::json!({"input": patch})),
            call(
                "4",
                "shell",
                serde_json::json!({"command": ["bash", "-lc", format!("apply_patch <<'EOF'\n{}\nEOF", patch.replace("src/new.rs", "src/other.rs"))]}),
            ),
            call(
                "5",
                "str_replace_editor",
                serde_json::json!({"command": "view", "path": "/repo/m.py"}),
            ),
            call("6", "Read", serde_json::json!({"file_path": "failed.rs"})),
            Arc::new(Message::tool_result("6", "no such file", true)),
        ];
        let ops = collect_file_ops(&messages);
        let listed: Vec<(&str, &str)> = ops
            .paths
            .iter()
            .map(|(p, a)| (p.as_str(), a.mark()))
            .collect();
        assert_eq!(
            listed,
            vec![
                ("/p/src/main.rs", "write"),
                ("/repo/m.py", "read"),
                ("src/lib.rs", "read-write"),
                ("src/new.rs", "write"),
                ("src/other.rs", "write"),
            ]
        );
    }

    #[test]
    fn tree_is_capped_with_an_elision_line() {
        let mut ops = FileOps::default();
        for i in 0..25 {
            ops.record(
                format!("src/f{i:02}.rs"),
                if i < 3 {
                    FileAccess::Write
                } else {
                    FileAccess::Read
                },
            );
        }
        ops.record("README.md", FileAccess::ReadWrite);
        let text = render_files(&ops);
        assert!(text.starts_with("<files>\nREADME.md (read-write)\nsrc/\n  f00.rs (write)\n"));
        assert!(text.ends_with("(+6 more files not listed)\n</files>"));
        assert_eq!(
            text.lines()
                .filter(|l| l.contains(".rs") || l.contains(".md"))
                .count(),
            20
        );
    }

    #[test]
    fn a_shell_argv_is_read_as_the_script_it_runs() {
        let argv = |parts: &[&str]| serde_json::json!({ "command": parts });
        assert_eq!(
            command_text("shell", &argv(&["bash", "-lc", "cargo test -p x"])).as_deref(),
            Some("cargo test -p x")
        );
        assert_eq!(
            command_text("exec_command", &argv(&["/bin/zsh", "-c", "ls src"])).as_deref(),
            Some("ls src")
        );
        // Three words that are not a shell and its flag are the command.
        assert_eq!(
            command_text("shell", &argv(&["git", "status", "-s"])).as_deref(),
            Some("git status -s")
        );
        assert_eq!(
            command_text("shell", &argv(&["bash", "script.sh", "x"])).as_deref(),
            Some("bash script.sh x")
        );
        assert_eq!(command_text("read", &argv(&["bash", "-lc", "ls"])), None);
    }

    #[test]
    fn a_file_at_the_filesystem_root_is_listed_by_its_full_path() {
        let mut ops = FileOps::default();
        ops.record("/setup.py", FileAccess::Write);
        ops.record("src/lib.rs", FileAccess::Read);
        let text = render_files(&ops);
        assert_eq!(
            text,
            format!(
                "<files>\n/setup.py ({})\nsrc/\n  lib.rs ({})\n</files>",
                FileAccess::Write.mark(),
                FileAccess::Read.mark()
            )
        );
    }
}
