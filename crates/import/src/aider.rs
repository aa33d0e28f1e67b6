//! aider chat history: the Markdown file (`.aider.chat.history.md`) aider
//! appends to while it runs.
//!
//! aider writes a `# aider chat started at <time>` line when it starts,
//! then each request the user types with every line prefixed `#### `, the
//! model's reply as plain Markdown (its file edits are SEARCH/REPLACE
//! blocks inside the reply), and its own output as `> ` quote lines (a
//! multi-line output quotes only its first line; the rest follow without a
//! blank line). Lines it writes end in two spaces, a Markdown line break.
//!
//! | history part | abridge event |
//! |---|---|
//! | `# aider chat started at` | a new session (`--session N`; default the last with a message); its time stamps every event |
//! | `#### ` lines | one user message |
//! | reply text, with its SEARCH/REPLACE blocks and code fences | one assistant message, as the model wrote it; `Origin::Model` when the banner names the model |
//! | `> ` output after the first request | user message, `Origin::Injected` (`aider-output`): aider does not record which output reached the model |
//! | `> ` output before the first request (the banner) | counted; its `Model:` line names the model, and a later change adds a `model_change` log event |

use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Origin;
use abridge_llm::Role;
use serde_json::json;

use crate::Format;
use crate::ImportError;
use crate::ImportWarning;
use crate::Imported;
use crate::TYPE_MODEL_CHANGE;
use crate::builder::Builder;
use crate::format::AIDER_CHAT_START as CHAT_START;

/// The `Origin::Injected` source of aider's own output.
const OUTPUT: &str = "aider-output";

/// Banner lines that name the model, as aider has worded them.
const MODEL_LINES: [&str; 3] = ["Main model: ", "Models: ", "Model: "];

/// One chat: the lines after its start line.
#[derive(Debug)]
struct Chat<'t> {
    /// The time on its start line, as written.
    started: Option<&'t str>,
    /// Its lines, with their 1-based line numbers in the file.
    lines: Vec<(u64, &'t str)>,
}

/// What a run of lines is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Request,
    Output,
    Reply,
}

/// A run of lines of one kind.
#[derive(Debug)]
struct Part {
    kind: Kind,
    line: u64,
    text: Vec<String>,
}

pub(crate) fn import(
    file: &str,
    bytes: &[u8],
    session: Option<usize>,
) -> Result<Imported, ImportError> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let before = &bytes[..e.valid_up_to()];
        ImportError::Utf8 {
            file: file.to_string(),
            line: before.iter().filter(|b| **b == b'\n').count() as u64 + 1,
            column: before.iter().rev().take_while(|b| **b != b'\n').count() as u64 + 1,
        }
    })?;
    let chats = chats(text);
    let parsed: Vec<(Vec<Part>, Vec<ImportWarning>)> = chats.iter().map(parts).collect();
    let index = crate::pick(file, chats.len(), session, |i| {
        parsed[i].0.iter().any(|p| p.kind != Kind::Output)
    })?;
    let (Some(chat), Some((parts, warnings))) = (chats.get(index), parsed.into_iter().nth(index))
    else {
        return Err(ImportError::Empty {
            file: file.to_string(),
        });
    };
    let mut b = Builder::new(file, Format::Aider);
    b.report.sessions = chats.len();
    b.report.session = index + 1;
    b.report.records = chat
        .lines
        .iter()
        .filter(|(_, l)| !l.trim().is_empty())
        .count() as u64;
    for warning in warnings {
        b.report.warn(warning);
    }
    let time = chat.started.map(|t| t.trim().replacen(' ', "T", 1));
    let mut model: Option<String> = None;
    let mut asked = false;
    for part in parts {
        let text = part.text.join("\n").trim_matches('\n').to_string();
        let line = Some(part.line);
        match part.kind {
            Kind::Output => {
                if let Some(named) = part.text.iter().find_map(|l| model_named(l))
                    && model.as_deref() != Some(named)
                {
                    if model.is_some() {
                        let last = b.last();
                        b.log(
                            TYPE_MODEL_CHANGE,
                            json!({"model": named}),
                            last,
                            time.clone(),
                            line,
                        );
                    }
                    model = Some(named.to_string());
                }
                if !asked {
                    b.report.skip("startup output");
                    continue;
                }
                let message = Message::user(text).with_meta(Meta {
                    origin: Some(Origin::Injected {
                        source: OUTPUT.to_string(),
                    }),
                    ..Meta::default()
                });
                let last = b.last();
                b.message(message, last, time.clone(), line);
            }
            Kind::Request => {
                asked = true;
                let message = Message::user(text).with_meta(Meta {
                    origin: Some(Origin::User),
                    ..Meta::default()
                });
                let last = b.last();
                b.message(message, last, time.clone(), line);
            }
            Kind::Reply if text.trim().is_empty() => {}
            Kind::Reply => {
                let message = Message::text(Role::Assistant, text).with_meta(Meta {
                    origin: model.as_deref().map(crate::model_origin),
                    ..Meta::default()
                });
                let last = b.last();
                b.message(message, last, time.clone(), line);
            }
        }
    }
    let id = crate::id_from_file(file);
    let header = crate::header(
        format!("{}-{}", id.trim_start_matches('.'), index + 1),
        time,
        None,
    );
    let (drafts, report) = b.finish(None)?;
    Ok(Imported {
        header,
        drafts,
        report,
    })
}

/// The file cut into chats at each start line. Lines before the first one
/// form a chat of their own when they hold anything (a history whose
/// start was cut off).
fn chats(text: &str) -> Vec<Chat<'_>> {
    let mut chats: Vec<Chat<'_>> = Vec::new();
    let mut current = Chat {
        started: None,
        lines: Vec::new(),
    };
    for (i, line) in text.lines().enumerate() {
        let number = i as u64 + 1;
        if let Some(time) = line.strip_prefix(CHAT_START) {
            if current.started.is_some() || current.lines.iter().any(|(_, l)| !l.trim().is_empty())
            {
                chats.push(current);
            }
            current = Chat {
                started: Some(time),
                lines: Vec::new(),
            };
        } else {
            current.lines.push((number, line));
        }
    }
    if current.started.is_some() || current.lines.iter().any(|(_, l)| !l.trim().is_empty()) {
        chats.push(current);
    }
    chats
}

/// A chat cut into requests, output and replies, with warnings about
/// blocks left open.
///
/// Inside a reply's code fence or SEARCH/REPLACE block every line is the
/// reply's, whatever it starts with (`>>>>>>> REPLACE` starts with `>`).
/// Outside them a `####` line is a request, a `>` line output (and the
/// lines right after it, without a blank line, its continuation), anything
/// else reply. A request line that aider wrote (after a blank line, ending
/// in two spaces) ends a fence or block the reply left open.
fn parts(chat: &Chat<'_>) -> (Vec<Part>, Vec<ImportWarning>) {
    let mut parts: Vec<Part> = Vec::new();
    let mut warnings = Vec::new();
    let mut fence: Option<(u64, String)> = None;
    let mut edit: Option<u64> = None;
    let mut previous_blank = true;
    for (number, raw) in &chat.lines {
        let line = raw.trim_end();
        let blank = line.trim().is_empty();
        let written_request = raw.starts_with("####") && raw.ends_with("  ") && previous_blank;
        if (fence.is_some() || edit.is_some()) && written_request {
            let opened = edit
                .or(fence.as_ref().map(|(at, _)| *at))
                .unwrap_or(*number);
            warnings.push(ImportWarning::Note {
                line: Some(opened),
                what: "a code fence or edit block of the reply is not closed before the next request; it ends there".to_string(),
            });
            fence = None;
            edit = None;
        }
        let inside = fence.is_some() || edit.is_some();
        let current = parts.last().map(|p| p.kind);
        let marked = [("####", Kind::Request), (">", Kind::Output)]
            .into_iter()
            .find_map(|(marker, kind)| line.strip_prefix(marker).map(|rest| (kind, rest)));
        let kind = if inside {
            Kind::Reply
        } else if let Some((kind, rest)) = marked {
            push(
                &mut parts,
                kind,
                *number,
                rest.strip_prefix(' ').unwrap_or(rest),
            );
            previous_blank = false;
            continue;
        } else if blank {
            // A blank line belongs to a reply; it only separates requests
            // and output blocks.
            if current == Some(Kind::Reply) {
                push(&mut parts, Kind::Reply, *number, "");
            }
            previous_blank = true;
            continue;
        } else if current == Some(Kind::Output) && !previous_blank {
            Kind::Output
        } else {
            Kind::Reply
        };
        push(&mut parts, kind, *number, line);
        if kind == Kind::Reply {
            let trimmed = line.trim_start();
            if trimmed.starts_with("<<<<<<< SEARCH") {
                edit = Some(*number);
            } else if trimmed.starts_with(">>>>>>> REPLACE") {
                edit = None;
            } else if edit.is_none() {
                let ticks: String = trimmed.chars().take_while(|c| *c == '`').collect();
                if ticks.len() >= 3 {
                    match &fence {
                        Some((_, open)) if ticks.len() >= open.len() && trimmed == ticks => {
                            fence = None;
                        }
                        Some(_) => {}
                        None => fence = Some((*number, ticks)),
                    }
                }
            }
        }
        previous_blank = blank;
    }
    if let Some(opened) = edit.or(fence.map(|(at, _)| at)) {
        warnings.push(ImportWarning::Note {
            line: Some(opened),
            what: "a code fence or edit block of the last reply is never closed; the reply runs to the end of the chat".to_string(),
        });
    }
    (parts, warnings)
}

/// Adds `text` to the last part when it is of `kind`, else starts one.
fn push(parts: &mut Vec<Part>, kind: Kind, line: u64, text: &str) {
    match parts.last_mut() {
        Some(part) if part.kind == kind => part.text.push(text.to_string()),
        _ => parts.push(Part {
            kind,
            line,
            text: vec![text.to_string()],
        }),
    }
}

/// The model a banner line names (`Model: gpt-4o with diff edit format`).
fn model_named(line: &str) -> Option<&str> {
    let rest = MODEL_LINES
        .iter()
        .find_map(|p| line.trim().strip_prefix(p))?;
    let end = [" with ", ","]
        .iter()
        .filter_map(|stop| rest.find(stop))
        .min()
        .unwrap_or(rest.len());
    let name = rest[..end].trim();
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(Kind, String)> {
        let chats = chats(text);
        parts(&chats[0])
            .0
            .into_iter()
            .map(|p| (p.kind, p.text.join("|")))
            .collect()
    }

    #[test]
    fn replace_markers_and_fenced_quotes_stay_in_the_reply() {
        let text = "# aider chat started at 2025-01-01 10:00:00\n\n#### fix it  \n\nf.md\n```\n<<<<<<< SEARCH\n> old quote\n=======\n> new quote\n>>>>>>> REPLACE\n```\n\n> Applied edit to f.md  \n";
        let got = kinds(text);
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(got[0], (Kind::Request, "fix it".to_string()));
        assert_eq!(got[1].0, Kind::Reply);
        assert!(got[1].1.contains(">>>>>>> REPLACE"), "{got:?}");
        assert_eq!(got[2], (Kind::Output, "Applied edit to f.md".to_string()));
    }

    #[test]
    fn output_continues_on_the_lines_after_its_quote() {
        let text = "#### run  \n\n> first line\nsecond line  \n\nThe reply.\n";
        assert_eq!(
            kinds(text),
            [
                (Kind::Request, "run".to_string()),
                (Kind::Output, "first line|second line".to_string()),
                (Kind::Reply, "The reply.".to_string()),
            ]
        );
    }

    #[test]
    fn banner_lines_name_the_model() {
        assert_eq!(
            model_named("Model: claude-3-5-sonnet-20240620 with diff edit format"),
            Some("claude-3-5-sonnet-20240620")
        );
        assert_eq!(
            model_named(
                "Main model: anthropic/claude-sonnet-4 with diff edit format, infinite output"
            ),
            Some("anthropic/claude-sonnet-4")
        );
        assert_eq!(
            model_named("Models: gpt-4o, weak model gpt-4o-mini"),
            Some("gpt-4o")
        );
        assert_eq!(model_named("Git repo: .git with 3 files"), None);
    }
}
