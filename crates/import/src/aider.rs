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
use crate::Wanted;
use crate::builder::Builder;
use crate::builder::Output;
use crate::format::AIDER_CHAT_START as CHAT_START;
use crate::input::Input;

/// The `Origin::Injected` source of aider's own output.
const OUTPUT: &str = "aider-output";

/// Banner lines that name the model, as aider has worded them.
const MODEL_LINES: [&str; 3] = ["Main model: ", "Models: ", "Model: "];

/// What a first pass over the file learns of one chat: enough to choose
/// it and to read it again, none of its text.
#[derive(Debug)]
struct Chat {
    /// Which run of lines it is: 0 for the lines before the first start
    /// line, `n` for those after the `n`th.
    segment: usize,
    /// The time on its start line, as written.
    started: Option<String>,
    /// Its lines that are not blank.
    records: u64,
    /// Lines that are not blank before the file's first start line, left
    /// out (an editor's mode line, notes): counted on the first chat.
    preamble: u64,
    /// True when it holds a request or a reply, not only output.
    has_message: bool,
    /// Its fences and edit blocks left open.
    warnings: Vec<ImportWarning>,
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
    /// Its lines, each after a `\n` (so the text starts with one).
    text: String,
}

/// The chats `wanted` names, each converted and handed to `visit` as
/// soon as its last line is read. The file is read twice, one line at a
/// time, whatever the number of chats: first to find its chats, then to
/// convert, so only one chat's messages are held at a time, each once.
/// Returns how many chats the file holds.
pub(crate) fn sessions(
    file: &str,
    input: &Input<'_>,
    wanted: Wanted,
    visit: &mut dyn FnMut(Imported) -> Result<(), ImportError>,
) -> Result<usize, ImportError> {
    let chats = chats(file, input)?;
    let mut outputs = wanted.outputs(file, chats.len(), |i| chats[i].has_message)?;
    convert(
        file,
        input,
        &chats,
        &mut |i| outputs.get_mut(i).and_then(Option::take),
        visit,
    )?;
    Ok(chats.len())
}

/// One pass over the file converting the chats for which `output` gives
/// where their drafts go (by index into `chats`), each handed to `visit`
/// when it ends.
fn convert(
    file: &str,
    input: &Input<'_>,
    chats: &[Chat],
    output: &mut dyn FnMut(usize) -> Option<Output>,
    visit: &mut dyn FnMut(Imported) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    let mut current: Option<(Convert, Parts)> = None;
    let mut segment = 0;
    let mut start = |segment: usize| -> Option<(Convert, Parts)> {
        let index = chats.iter().position(|c| c.segment == segment)?;
        let output = output(index)?;
        Some((Convert::new(file, chats, index, output), Parts::new(true)))
    };
    current = current.or_else(|| start(segment));
    input.each_line(file, |number, line| {
        if line.starts_with(CHAT_START) {
            if let Some(done) = current.take() {
                visit(done.0.finish(file, done.1)?)?;
            }
            segment += 1;
            current = start(segment);
        } else if let Some((convert, parts)) = &mut current
            && let Some(part) = parts.line(number, line)
        {
            convert.part(part);
        }
        Ok(())
    })?;
    if let Some(done) = current.take() {
        visit(done.0.finish(file, done.1)?)?;
    }
    Ok(())
}

/// Parts of one chat turned into events, in file order.
struct Convert {
    b: Builder,
    /// Which chat, from 0.
    index: usize,
    /// The chat's start time, which stamps every event.
    time: Option<String>,
    /// The model the banner named last.
    model: Option<String>,
    /// True once the user asked something: output before it is the banner.
    asked: bool,
}

impl Convert {
    /// Starts converting `chats[index]`.
    fn new(file: &str, chats: &[Chat], index: usize, output: Output) -> Self {
        let chat = &chats[index];
        let mut b = Builder::new(file, Format::Aider, output);
        b.report.sessions = chats.len();
        b.report.session = index + 1;
        b.report.records = chat.records;
        if chat.preamble > 0 {
            *b.report
                .skipped
                .entry("text before the first chat".to_string())
                .or_default() += chat.preamble;
        }
        for warning in &chat.warnings {
            b.report.warn(warning.clone());
        }
        Convert {
            b,
            index,
            time: chat
                .started
                .as_deref()
                .map(|t| t.trim().replacen(' ', "T", 1)),
            model: None,
            asked: false,
        }
    }

    /// Ends the chat: its last part, then the session.
    fn finish(mut self, file: &str, parts: Parts) -> Result<Imported, ImportError> {
        if let Some(part) = parts.finish().0 {
            self.part(part);
        }
        let id = crate::id_from_file(file);
        let header = crate::header(
            format!("{}-{}", id.trim_start_matches('.'), self.index + 1),
            self.time,
            None,
        );
        let (drafts, report) = self.b.finish(None)?;
        Ok(Imported {
            header,
            drafts,
            report,
        })
    }

    fn part(&mut self, part: Part) {
        let line = Some(part.line);
        let time = self.time.clone();
        if part.kind == Kind::Output
            && let Some(named) = part.text.split('\n').find_map(model_named)
            && self.model.as_deref() != Some(named)
        {
            if self.model.is_some() {
                let last = self.b.last();
                self.b.log(
                    TYPE_MODEL_CHANGE,
                    json!({"model": named}),
                    last,
                    time.clone(),
                    line,
                );
            }
            self.model = Some(named.to_string());
        }
        let text = trim_newlines(part.text);
        let message = match part.kind {
            Kind::Output if !self.asked => {
                self.b.report.skip("startup output");
                return;
            }
            Kind::Output => Message::user(text).with_meta(Meta {
                origin: Some(Origin::Injected {
                    source: OUTPUT.to_string(),
                }),
                ..Meta::default()
            }),
            Kind::Request => {
                self.asked = true;
                Message::user(text).with_meta(Meta {
                    origin: Some(Origin::User),
                    ..Meta::default()
                })
            }
            Kind::Reply if text.trim().is_empty() => return,
            Kind::Reply => Message::text(Role::Assistant, text).with_meta(Meta {
                origin: self.model.as_deref().map(crate::model_origin),
                ..Meta::default()
            }),
        };
        let last = self.b.last();
        self.b.message(message, last, time, line);
    }
}

/// `text` without the newlines at either end, cut in place and its spare
/// room given back (a long reply grew by doubling).
fn trim_newlines(mut text: String) -> String {
    let end = text.trim_end_matches('\n').len();
    text.truncate(end);
    let start = text.len() - text.trim_start_matches('\n').len();
    text.drain(..start);
    text.shrink_to_fit();
    text
}

/// The file's chats, from a pass that keeps no text. Lines before the
/// first start line are not a chat when a start line follows (a real
/// history may open with an editor's mode line); they are counted on the
/// first chat instead. In a file with no start line they are the one chat
/// (a history whose start was cut off).
fn chats(file: &str, input: &Input<'_>) -> Result<Vec<Chat>, ImportError> {
    let mut chats: Vec<Chat> = Vec::new();
    let mut current = (
        Chat {
            segment: 0,
            started: None,
            records: 0,
            preamble: 0,
            has_message: false,
            warnings: Vec::new(),
        },
        Parts::new(false),
    );
    input.each_line(file, |number, line| {
        if let Some(time) = line.strip_prefix(CHAT_START) {
            let segment = current.0.segment + 1;
            let next = Chat {
                segment,
                started: Some(time.to_string()),
                records: 0,
                preamble: 0,
                has_message: false,
                warnings: Vec::new(),
            };
            close(
                &mut chats,
                std::mem::replace(&mut current, (next, Parts::new(false))),
            );
        } else {
            if !line.trim().is_empty() {
                current.0.records += 1;
            }
            current.1.line(number, line);
        }
        Ok(())
    })?;
    close(&mut chats, current);
    if chats.len() > 1 && chats[0].started.is_none() {
        let preamble = chats.remove(0);
        chats[0].preamble = preamble.records;
    }
    Ok(chats)
}

/// Keeps a chat that has a start line or any line that is not blank.
fn close(chats: &mut Vec<Chat>, (mut chat, parts): (Chat, Parts)) {
    chat.has_message = parts.any_message;
    chat.warnings = parts.finish().1;
    if chat.started.is_some() || chat.records > 0 {
        chats.push(chat);
    }
}

/// A chat cut into requests, output and replies as its lines arrive, with
/// warnings about blocks left open.
///
/// Inside a reply's code fence or SEARCH/REPLACE block every line is the
/// reply's, whatever it starts with (`>>>>>>> REPLACE` starts with `>`).
/// Outside them a `####` line is a request, a `>` line output (and the
/// lines right after it, without a blank line, its continuation), anything
/// else reply. A request line that aider wrote (after a blank line, ending
/// in two spaces) ends a fence or block the reply left open.
#[derive(Debug)]
struct Parts {
    /// False for a pass that only classifies: parts keep no text.
    keep_text: bool,
    /// The part the lines are being added to.
    current: Option<Part>,
    warnings: Vec<ImportWarning>,
    /// The open code fence: its line and its backticks.
    fence: Option<(u64, String)>,
    /// The line of the open SEARCH/REPLACE block.
    edit: Option<u64>,
    previous_blank: bool,
    /// True once a request or reply line was seen.
    any_message: bool,
}

impl Parts {
    fn new(keep_text: bool) -> Self {
        Parts {
            keep_text,
            current: None,
            warnings: Vec::new(),
            fence: None,
            edit: None,
            previous_blank: true,
            any_message: false,
        }
    }

    /// Reads line `number`; returns the part it ended, if it started a new
    /// one.
    fn line(&mut self, number: u64, raw: &str) -> Option<Part> {
        let line = raw.trim_end();
        let blank = line.trim().is_empty();
        let written_request = raw.starts_with("####") && raw.ends_with("  ") && self.previous_blank;
        if (self.fence.is_some() || self.edit.is_some()) && written_request {
            let opened = self
                .edit
                .or(self.fence.as_ref().map(|(at, _)| *at))
                .unwrap_or(number);
            self.warnings.push(ImportWarning::Note {
                line: Some(opened),
                what: "a code fence or edit block of the reply is not closed before the next request; it ends there".to_string(),
            });
            self.fence = None;
            self.edit = None;
        }
        let inside = self.fence.is_some() || self.edit.is_some();
        let current = self.current.as_ref().map(|p| p.kind);
        let marked = [("####", Kind::Request), (">", Kind::Output)]
            .into_iter()
            .find_map(|(marker, kind)| line.strip_prefix(marker).map(|rest| (kind, rest)));
        let kind = if inside {
            Kind::Reply
        } else if let Some((kind, rest)) = marked {
            self.previous_blank = false;
            return self.push(kind, number, rest.strip_prefix(' ').unwrap_or(rest));
        } else if blank {
            // A blank line belongs to a reply; it only separates requests
            // and output blocks.
            self.previous_blank = true;
            return match current {
                Some(Kind::Reply) => self.push(Kind::Reply, number, ""),
                _ => None,
            };
        } else if current == Some(Kind::Output) && !self.previous_blank {
            Kind::Output
        } else {
            Kind::Reply
        };
        let ended = self.push(kind, number, line);
        if kind == Kind::Reply {
            self.track_blocks(number, line.trim_start());
        }
        self.previous_blank = blank;
        ended
    }

    /// Follows the fences and SEARCH/REPLACE blocks a reply line opens or
    /// closes.
    fn track_blocks(&mut self, number: u64, trimmed: &str) {
        if trimmed.starts_with("<<<<<<< SEARCH") {
            self.edit = Some(number);
        } else if trimmed.starts_with(">>>>>>> REPLACE") {
            self.edit = None;
        } else if self.edit.is_none() {
            let ticks: String = trimmed.chars().take_while(|c| *c == '`').collect();
            if ticks.len() >= 3 {
                match &self.fence {
                    Some((_, open)) if ticks.len() >= open.len() && trimmed == ticks => {
                        self.fence = None;
                    }
                    Some(_) => {}
                    None => self.fence = Some((number, ticks)),
                }
            }
        }
    }

    /// Adds `text` to the current part when it is of `kind`, else starts
    /// one and returns the part it ends.
    fn push(&mut self, kind: Kind, line: u64, text: &str) -> Option<Part> {
        self.any_message |= kind != Kind::Output;
        let ended = match &self.current {
            Some(part) if part.kind == kind => None,
            _ => self.current.replace(Part {
                kind,
                line,
                text: String::new(),
            }),
        };
        if self.keep_text
            && let Some(part) = &mut self.current
        {
            part.text.push('\n');
            part.text.push_str(text);
        }
        ended
    }

    /// Ends the chat: its last part, and the warnings about blocks it left
    /// open.
    fn finish(mut self) -> (Option<Part>, Vec<ImportWarning>) {
        if let Some(opened) = self.edit.or(self.fence.map(|(at, _)| at)) {
            self.warnings.push(ImportWarning::Note {
                line: Some(opened),
                what: "a code fence or edit block of the last reply is never closed; the reply runs to the end of the chat".to_string(),
            });
        }
        (self.current, self.warnings)
    }
}

/// The model a banner line names (`Model: gpt-4o with diff edit format`).
/// Only a name spelled as model ids are (letters, digits and `-_./:@+`)
/// counts: other console output that starts the same way (`Models:
/// ['gpt-4o', ...]`, a listing) names no model the chat ran on.
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
    let id_like = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./:@+".contains(c));
    (!name.is_empty() && id_like).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<(Kind, String)> {
        let mut parts = Parts::new(true);
        let mut found: Vec<Part> = text
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.starts_with(CHAT_START))
            .filter_map(|(i, line)| parts.line(i as u64 + 1, line))
            .collect();
        found.extend(parts.finish().0);
        found
            .into_iter()
            .map(|p| (p.kind, p.text[1..].replace('\n', "|")))
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
        // Issue 27, point 8: console output, not a banner.
        assert_eq!(model_named("Models: ['gpt-4o', 'gpt-4o-mini']"), None);
        assert_eq!(model_named("Model: [unknown] please pick one"), None);
    }
}
