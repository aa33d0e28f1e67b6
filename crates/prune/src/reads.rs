//! Which tool calls read a file, which file, and which part of it.
//!
//! A read is keyed by its path without any line selector; its [`Selector`]
//! says whether it showed the whole file or a part. A later read
//! supersedes an earlier one when it shows at least as much of the same
//! file (see [`Selector::covers`]).

use serde::Deserialize;
use serde::Serialize;
use serde_json::Value;

/// A tool whose results are file reads, and how to find the file in its
/// arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReadTool {
    /// The tool name, compared exactly.
    pub name: String,
    /// Where the path and the selector are.
    pub syntax: ReadSyntax,
}

/// How a read tool's arguments name what it read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReadSyntax {
    /// A JSON object with a path argument.
    Args {
        /// Keys that may hold the path; the first present wins. A path may
        /// end in a line selector (`a.rs:10-20`), which is stripped.
        path_keys: Vec<String>,
        /// Keys that, when present and not null, make the read partial
        /// (`offset`, `limit`, `view_range`, `line_number`).
        range_keys: Vec<String>,
        /// Only calls whose argument `key` equals `value` are reads (for
        /// multi-command tools such as SWE-agent's `str_replace_editor`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        when: Option<ArgEquals>,
        /// The tool shows a window of the file even without range
        /// arguments, so it never counts as a full read.
        #[serde(default)]
        windowed: bool,
    },
    /// A shell command in a string or argv argument. Simple commands only:
    /// `cat FILE` and `nl FILE` are full reads; `sed -n 'A,Bp' FILE`,
    /// `head` and `tail` are partial. Pipes, lists and redirections are not
    /// reads.
    Shell {
        /// Keys that may hold the command; the first present wins.
        command_keys: Vec<String>,
    },
}

/// A condition on one string argument.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ArgEquals {
    /// The argument's key.
    pub key: String,
    /// The value it must have.
    pub value: String,
}

/// Which part of a file a read showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// The whole file.
    Full,
    /// Lines `start..=end` (1-based; `end` `None`: to the end of the file).
    Lines {
        /// First line shown.
        start: u64,
        /// Last line shown, if bounded.
        end: Option<u64>,
    },
    /// A part we cannot measure (a `tail`, a window around a line); only an
    /// identical selector or a full read covers it.
    Other(String),
}

impl Selector {
    /// True when a read with `self`, made later, makes an earlier read with
    /// `earlier` stale: a full read covers everything; a line range covers
    /// a range inside it; nothing partial covers a full read.
    pub fn covers(&self, earlier: &Selector) -> bool {
        match (self, earlier) {
            (Selector::Full, _) => true,
            (_, Selector::Full) => false,
            (
                Selector::Lines { start, end },
                Selector::Lines {
                    start: earlier_start,
                    end: earlier_end,
                },
            ) => {
                start <= earlier_start
                    && match (end, earlier_end) {
                        (None, _) => true,
                        (Some(_), None) => false,
                        (Some(end), Some(earlier_end)) => end >= earlier_end,
                    }
            }
            (Selector::Other(a), Selector::Other(b)) => a == b,
            _ => false,
        }
    }
}

/// One file read: the file and the part shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRead {
    /// The path, without line selector, `./` removed.
    pub path: String,
    /// What part of it was shown.
    pub selector: Selector,
}

/// The read tools of the agents abridge imports: pi (`read`, `bash`),
/// Claude Code (`Read`, `Bash`), Codex CLI (`read_file`, `shell`,
/// `exec_command`), SWE-agent (`str_replace_editor view`, `open`, `bash`).
pub fn default_read_tools() -> Vec<ReadTool> {
    fn args(name: &str, path: &[&str], range: &[&str]) -> ReadTool {
        ReadTool {
            name: name.to_string(),
            syntax: ReadSyntax::Args {
                path_keys: strings(path),
                range_keys: strings(range),
                when: None,
                windowed: false,
            },
        }
    }
    fn shell(name: &str, keys: &[&str]) -> ReadTool {
        ReadTool {
            name: name.to_string(),
            syntax: ReadSyntax::Shell {
                command_keys: strings(keys),
            },
        }
    }
    vec![
        args("read", &["path", "file_path"], &["offset", "limit"]),
        args(
            "Read",
            &["file_path", "path"],
            &["offset", "limit", "pages"],
        ),
        args("read_file", &["file_path", "path"], &["offset", "limit"]),
        ReadTool {
            name: "str_replace_editor".to_string(),
            syntax: ReadSyntax::Args {
                path_keys: strings(&["path"]),
                range_keys: strings(&["view_range"]),
                when: Some(ArgEquals {
                    key: "command".to_string(),
                    value: "view".to_string(),
                }),
                windowed: false,
            },
        },
        ReadTool {
            name: "open".to_string(),
            syntax: ReadSyntax::Args {
                path_keys: strings(&["path"]),
                range_keys: strings(&["line_number"]),
                when: None,
                windowed: true,
            },
        },
        shell("bash", &["command", "cmd"]),
        shell("Bash", &["command"]),
        shell("shell", &["command", "cmd"]),
        shell("exec_command", &["cmd", "command"]),
    ]
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_string()).collect()
}

/// What file, if any, a call of `name` with `arguments` read.
pub(crate) fn classify(tools: &[ReadTool], name: &str, arguments: &Value) -> Option<FileRead> {
    let tool = tools.iter().find(|t| t.name == name)?;
    match &tool.syntax {
        ReadSyntax::Args {
            path_keys,
            range_keys,
            when,
            windowed,
        } => {
            if let Some(cond) = when
                && arguments.get(&cond.key).and_then(Value::as_str) != Some(cond.value.as_str())
            {
                return None;
            }
            let raw = path_keys
                .iter()
                .find_map(|k| arguments.get(k).and_then(Value::as_str))?;
            let (path, from_path) = split_selector(raw);
            if path.is_empty() {
                return None;
            }
            let selector = match from_path {
                Some(s) => s,
                None => selector_from_args(arguments, range_keys, *windowed),
            };
            Some(FileRead {
                path: normalize(path),
                selector,
            })
        }
        ReadSyntax::Shell { command_keys } => {
            let command = command_keys.iter().find_map(|k| arguments.get(k))?;
            let script = match command {
                Value::String(s) => s.clone(),
                Value::Array(items) => argv_script(items)?,
                _ => return None,
            };
            classify_shell(&script)
        }
    }
}

/// The script an argv runs: the `-c` argument of a shell, or the argv
/// itself joined.
fn argv_script(items: &[Value]) -> Option<String> {
    let words: Vec<&str> = items.iter().map(Value::as_str).collect::<Option<_>>()?;
    let is_shell = |w: &str| {
        let base = w.rsplit('/').next().unwrap_or(w);
        matches!(base, "bash" | "sh" | "zsh" | "dash")
    };
    match words.as_slice() {
        [shell, flag, script] if is_shell(shell) && flag.starts_with('-') && flag.contains('c') => {
            Some((*script).to_string())
        }
        _ => Some(
            words
                .iter()
                .map(|w| quote_word(w))
                .collect::<Vec<_>>()
                .join(" "),
        ),
    }
}

fn quote_word(word: &str) -> String {
    if word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./,:=+".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

fn selector_from_args(arguments: &Value, range_keys: &[String], windowed: bool) -> Selector {
    let present: Vec<(&str, &Value)> = range_keys
        .iter()
        .filter_map(|k| {
            arguments
                .get(k)
                .filter(|v| !v.is_null())
                .map(|v| (k.as_str(), v))
        })
        .collect();
    if present.is_empty() {
        return if windowed {
            Selector::Other("window".to_string())
        } else {
            Selector::Full
        };
    }
    let number = |key: &str| {
        present
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| v.as_u64().or_else(|| v.as_str()?.parse().ok()))
    };
    let only_known = present
        .iter()
        .all(|(k, _)| matches!(*k, "offset" | "limit" | "view_range"));
    if only_known && !windowed {
        if let Some(range) = present.iter().find(|(k, _)| *k == "view_range") {
            if let Some([a, b]) = range.1.as_array().map(Vec::as_slice)
                && let Some(start) = a.as_u64()
            {
                let end = b.as_i64().and_then(|e| u64::try_from(e).ok());
                return Selector::Lines { start, end };
            }
        } else {
            let start = number("offset").unwrap_or(1).max(1);
            let end = number("limit").map(|limit| start + limit.saturating_sub(1));
            return Selector::Lines { start, end };
        }
    }
    let key: Vec<String> = present.iter().map(|(k, v)| format!("{k}={v}")).collect();
    Selector::Other(key.join(","))
}

/// Splits `a.rs:10-20` or `a.rs:10` into the path and its line selector.
fn split_selector(raw: &str) -> (&str, Option<Selector>) {
    let Some((path, tail)) = raw.rsplit_once(':') else {
        return (raw, None);
    };
    let (start, end) = match tail.split_once('-') {
        Some((a, b)) => (a, Some(b)),
        None => (tail, None),
    };
    let Ok(start) = start.parse::<u64>() else {
        return (raw, None);
    };
    let end = match end {
        None => Some(start),
        Some("") => None,
        Some(b) => match b.parse::<u64>() {
            Ok(b) => Some(b),
            Err(_) => return (raw, None),
        },
    };
    (path, Some(Selector::Lines { start, end }))
}

fn normalize(path: &str) -> String {
    let mut path = path.trim();
    while let Some(rest) = path.strip_prefix("./") {
        path = rest;
    }
    path.to_string()
}

/// Reads expressed as one simple shell command.
fn classify_shell(script: &str) -> Option<FileRead> {
    let words = split_words(script.trim())?;
    let (program, args) = words.split_first()?;
    let program = program.rsplit('/').next().unwrap_or(program);
    // `-` names standard input: what it showed is no file's content.
    if args.iter().any(|a| a == "-") {
        return None;
    }
    let (flags, operands): (Vec<&String>, Vec<&String>) =
        args.iter().partition(|a| a.starts_with('-') && a.len() > 1);
    match program {
        "cat" | "nl" => {
            let [path] = operands.as_slice() else {
                return None;
            };
            Some(FileRead {
                path: normalize(path),
                selector: Selector::Full,
            })
        }
        "sed" => {
            if flags.iter().map(|f| f.as_str()).ne(["-n"]) {
                return None;
            }
            let [script, path] = operands.as_slice() else {
                return None;
            };
            let range = script.strip_suffix('p')?;
            let (start, end) = match range.split_once(',') {
                Some((a, b)) => (a.parse().ok()?, Some(b.parse().ok()?)),
                None => {
                    let line = range.parse().ok()?;
                    (line, Some(line))
                }
            };
            Some(FileRead {
                path: normalize(path),
                selector: Selector::Lines { start, end },
            })
        }
        "head" => {
            let (count, path) = count_and_path(args)?;
            Some(FileRead {
                path: normalize(&path),
                selector: Selector::Lines {
                    start: 1,
                    end: Some(count.unwrap_or(10)),
                },
            })
        }
        "tail" => {
            let (count, path) = count_and_path(args)?;
            Some(FileRead {
                path: normalize(&path),
                selector: Selector::Other(format!("tail {}", count.unwrap_or(10))),
            })
        }
        _ => None,
    }
}

/// `-n N FILE`, `-nN FILE`, `-N FILE` or `FILE`.
fn count_and_path(args: &[String]) -> Option<(Option<u64>, String)> {
    match args {
        [path] if !path.starts_with('-') => Some((None, path.clone())),
        [flag, count, path] if flag == "-n" => Some((Some(count.parse().ok()?), path.clone())),
        [flag, path] if flag.starts_with('-') => {
            let digits = flag.trim_start_matches("-n").trim_start_matches('-');
            Some((Some(digits.parse().ok()?), path.clone()))
        }
        _ => None,
    }
}

/// Shell words with quotes removed, or `None` when the command uses
/// anything beyond words (pipes, lists, redirections, substitutions).
fn split_words(script: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut chars = script.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => current.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => current.push(chars.next()?),
                        '$' | '`' => return None,
                        c => current.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                current.push(chars.next()?);
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            '|' | '&' | ';' | '<' | '>' | '$' | '`' | '(' | ')' | '*' | '?' | '{' | '}' => {
                return None;
            }
            c => {
                in_word = true;
                current.push(c);
            }
        }
    }
    if in_word {
        words.push(current);
    }
    Some(words)
}

#[cfg(test)]
mod tests;
