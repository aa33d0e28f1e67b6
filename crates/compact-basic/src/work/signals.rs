//! What marks a sentence as a rule, a command as a build or test, a call
//! as a plan, and a word as a name being defined: the word lists
//! [`WorkLog`](super::WorkLog) reads the history with. The rule, sentence,
//! command and plan readers are public because `cargo xtask eval fidelity`
//! derives its answer key with the same ones (docs/fidelity.md says what
//! that means for its figures).

use serde_json::Value;

/// Words that open a standing rule rather than a one-off request.
const RULE_OPENERS: &[&str] = &[
    "never",
    "always",
    "don't",
    "dont",
    "avoid",
    "only",
    "ensure",
    "prefer",
    "stop",
    "do not",
    "make sure",
    "please don't",
    "please never",
    "please always",
    "no ",
];
/// Words that make any sentence a rule.
const RULE_WORDS: &[&str] = &[
    " must ",
    " never ",
    " always ",
    " don't ",
    " do not ",
    " should not ",
    " shouldn't ",
    " without ",
];

/// A sentence that states a rule ("never push to main", "tests must
/// pass"), as opposed to a one-off request.
pub fn is_rule(sentence: &str) -> bool {
    let lower = format!(" {} ", sentence.to_lowercase());
    let trimmed = lower.trim_start();
    sentence.chars().count() >= 12
        && (RULE_OPENERS.iter().any(|w| trimmed.starts_with(w))
            || RULE_WORDS.iter().any(|w| lower.contains(w)))
}

/// The sentences of `text`: cut after `.`, `!`, `?` before a space, and
/// at line breaks.
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut start = 0;
        let bytes = line.as_bytes();
        for (i, c) in line.char_indices() {
            if matches!(c, '.' | '!' | '?') && bytes.get(i + 1).is_none_or(|b| *b == b' ') {
                out.push(line[start..=i].trim().to_string());
                start = i + 1;
            }
        }
        out.push(line[start..].trim().to_string());
    }
    out.retain(|s| !s.is_empty());
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
];

/// Names `text` defines: the word after a definer keyword.
pub(crate) fn definitions(text: &str) -> Vec<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    words
        .windows(2)
        .filter(|pair| DEFINERS.contains(&pair[0]))
        .filter_map(|pair| {
            let name: String = pair[1]
                .chars()
                .take_while(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '?' | '!'))
                .collect();
            let name = name.trim_end_matches(['.', '?', '!']).to_string();
            (name.chars().count() >= 3 && name.chars().next().is_some_and(char::is_alphabetic))
                .then_some(name)
        })
        .collect()
}

/// Command words that build or test a project.
const BUILD_OR_TEST: &[&str] = &[
    "cargo build",
    "cargo test",
    "cargo check",
    "cargo clippy",
    "cargo nextest",
    "mix test",
    "mix compile",
    "npm test",
    "npm run build",
    "npm run test",
    "pnpm test",
    "pnpm build",
    "yarn test",
    "yarn build",
    "pytest",
    "go test",
    "go build",
    "make",
    "tox",
    "jest",
    "vitest",
    "tsc",
    "gradle",
    "mvn",
    "bun test",
    "dotnet test",
    "dotnet build",
];

/// A command line that builds or tests.
pub fn is_build_or_test(line: &str) -> bool {
    let lower = format!(" {}", line.to_ascii_lowercase());
    BUILD_OR_TEST.iter().any(|w| {
        lower
            .match_indices(w)
            .any(|(at, _)| lower[..at].ends_with([' ', '&', ';', '|', '(', '/']))
    })
}

/// Plan items not done, when the call writes a plan (Claude Code's
/// `TodoWrite` todos, Codex's `update_plan` steps).
pub fn plan_items(name: &str, arguments: &Value) -> Option<Vec<String>> {
    let (list, text_key) = match name {
        "TodoWrite" => (arguments.get("todos")?, "content"),
        "update_plan" => (arguments.get("plan")?, "step"),
        _ => return None,
    };
    Some(
        list.as_array()?
            .iter()
            .filter(|item| item.get("status").and_then(Value::as_str) != Some("completed"))
            .filter_map(|item| item.get(text_key).and_then(Value::as_str))
            .map(str::to_string)
            .collect(),
    )
}
