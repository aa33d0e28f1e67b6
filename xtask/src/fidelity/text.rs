//! Reading tool calls and messages: paths, commands, failures, the
//! user's own words.

use serde_json::Value;

/// Argument names tools put a file's path under.
const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filePath",
    "filename",
    "notebook_path",
    "file",
];

/// The path a file tool's arguments name, without a line suffix.
pub(crate) fn path_of(arguments: &Value) -> Option<String> {
    let raw = PATH_KEYS
        .iter()
        .find_map(|key| arguments.get(*key).and_then(Value::as_str))?
        .trim();
    let path = raw.split("#L").next().unwrap_or(raw);
    (!path.is_empty() && !path.contains("://")).then(|| path.to_string())
}

/// The command line of a shell tool call.
pub(crate) fn command_of(name: &str, arguments: &Value) -> Option<String> {
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
        .unwrap_or(arguments);
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let parts: Vec<&str> = parts.iter().filter_map(Value::as_str).collect();
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

/// The line of a failed output that says why: the first naming an error,
/// a failure or a panic, else the last.
pub(crate) fn failure_line(output: &str) -> String {
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines
        .iter()
        .find(|l| {
            let lower = l.to_ascii_lowercase();
            lower.contains("error") || lower.contains("failed") || lower.contains("panicked")
        })
        .or(lines.last())
        .map_or_else(String::new, |l| l.to_string())
}

/// Markup a harness wraps its own text in, inside a user message.
const HARNESS_TAGS: &[&str] = &[
    "system-reminder",
    "local-command-stdout",
    "local-command-stderr",
    "command-message",
    "command-name",
    "command-args",
];

/// The words the user typed in a message: harness blocks cut out,
/// whitespace collapsed. `None` when nothing is left, or for a bare slash
/// command or a harness caveat.
pub(crate) fn user_words(text: &str) -> Option<String> {
    let mut text = text.to_string();
    for tag in HARNESS_TAGS {
        let open = format!("<{tag}>");
        let close = format!("</{tag}>");
        while let Some(start) = text.find(&open) {
            let end = text[start..]
                .find(&close)
                .map_or(text.len(), |e| start + e + close.len());
            text.replace_range(start..end, "");
        }
    }
    let text = text.trim();
    if text.is_empty()
        || text.starts_with('<')
        || text.starts_with("Caveat:")
        || abridge_llm::continuation(text).is_some()
        || (text.starts_with('/') && !text.contains(char::is_whitespace))
    {
        return None;
    }
    Some(text.split_whitespace().collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn harness_blocks_are_cut_from_the_users_words() {
        assert_eq!(
            user_words("Fix it <system-reminder>x</system-reminder> now").as_deref(),
            Some("Fix it now")
        );
        assert_eq!(user_words("/clear"), None);
        assert_eq!(user_words("<command-name>/x</command-name>"), None);
    }

    #[test]
    fn a_failures_line_names_the_error_or_is_the_last() {
        assert_eq!(failure_line("a\nerror: boom\nb"), "error: boom");
        assert_eq!(failure_line("a\nb"), "b");
    }
}
