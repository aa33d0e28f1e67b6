//! History to dense, printable text.
//!
//! Each message becomes one scope that starts with a short label on a new
//! line: `[user]`, `[assistant]`, `[thinking]`, `[system]`. A tool call
//! prints as `[call] name(key="value", n=3)` and its result follows it at
//! once, in dim ink, as `[result] ...` (or `[error] ...`), wherever the result
//! sits in the history; so a reader never has to match ids. Long results and
//! arguments keep their head and tail with a marker saying how much was cut.
//! Results a tool flagged useless are dropped with their call. Inline data
//! URLs and images become a short note, never base64.

use std::borrow::Borrow;
use std::collections::HashMap;
use std::collections::HashSet;

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Role;

use crate::normalize::NEWLINE;
use crate::normalize::normalize;
use crate::render::Ink;
use crate::render::Run;

/// How history is turned into text. Every default is what issue 7 asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct SerializeConfig {
    /// Print thinking blocks. Default `true`; set `false` to save cells.
    /// The `snapcompact` method also drops them for provider families that
    /// do not read earlier reasoning ([`thinking_allowed`](crate::thinking_allowed)).
    pub include_thinking: bool,
    /// Longest tool result kept, in printed characters. Default 2000.
    pub result_cap: usize,
    /// Share of a capped result kept from its head, in percent; the rest
    /// comes from its tail. Default 60.
    pub head_percent: u8,
    /// Longest single argument value, in characters. Default 500.
    pub argument_cap: usize,
    /// Longest whole call `name(args)`, in characters. Default 2000.
    pub call_cap: usize,
    /// Drop tool results flagged useless (and their calls). Default `true`.
    pub drop_useless: bool,
}

impl Default for SerializeConfig {
    fn default() -> Self {
        SerializeConfig {
            include_thinking: true,
            result_cap: 2000,
            head_percent: 60,
            argument_cap: 500,
            call_cap: 2000,
            drop_useless: true,
        }
    }
}

/// What a tool message answered, looked up by call id.
struct Answer<'a> {
    content: &'a [Block],
    is_error: bool,
    useless: bool,
}

/// Serializes `messages` into ink runs of normalized text.
///
/// Accepts `&[Message]` and `&[Arc<Message>]` alike.
pub fn serialize<M: Borrow<Message>>(messages: &[M], config: &SerializeConfig) -> Vec<Run> {
    serialize_with(messages, config, false)
}

/// Serializes `messages` as plain text without normalization: the same
/// scopes, caps and notes, but whitespace and characters as written. For
/// the text edges of an archive, which the model reads as text.
pub(crate) fn serialize_verbatim<M: Borrow<Message>>(
    messages: &[M],
    config: &SerializeConfig,
) -> String {
    plain_text(&serialize_with(messages, config, true))
}

fn serialize_with<M: Borrow<Message>>(
    messages: &[M],
    config: &SerializeConfig,
    verbatim: bool,
) -> Vec<Run> {
    let prep = |text: &str| -> String {
        let text = replace_data_urls(text);
        if verbatim {
            text.trim().to_string()
        } else {
            normalize(&text)
        }
    };
    let mut answers: HashMap<&str, Answer<'_>> = HashMap::new();
    let mut called: HashSet<&str> = HashSet::new();
    for message in messages {
        let message = message.borrow();
        for (id, _, _) in message.tool_calls() {
            called.insert(id);
        }
        if let Some((id, content, is_error)) = message.tool_result_block() {
            answers.insert(
                id,
                Answer {
                    content,
                    is_error,
                    useless: message.meta.useless && !is_error,
                },
            );
        }
    }
    let mut out = Writer {
        runs: Vec::new(),
        prep: &prep,
    };
    for message in messages {
        let message = message.borrow();
        match message.role {
            Role::Tool => {
                // Printed beside its call; only orphans print here.
                if let Some((id, content, is_error)) = message.tool_result_block() {
                    if called.contains(id)
                        || (config.drop_useless && message.meta.useless && !is_error)
                    {
                        continue;
                    }
                    out.result(content, is_error, config);
                }
            }
            role => {
                let label = match role {
                    Role::System => "[system] ",
                    Role::Developer => "[developer] ",
                    Role::User => "[user] ",
                    _ => "[assistant] ",
                };
                let mut open = false;
                for block in &message.content {
                    match block {
                        Block::Text { text } => {
                            let text = prep(text);
                            if text.is_empty() {
                                continue;
                            }
                            if !open {
                                out.line(Ink::Normal, label);
                                open = true;
                            } else {
                                out.push(Ink::Normal, &NEWLINE.to_string());
                            }
                            out.push(Ink::Normal, &text);
                        }
                        Block::Thinking { thinking, .. } if config.include_thinking => {
                            let text = prep(thinking);
                            if !text.is_empty() {
                                out.line(Ink::Normal, "[thinking] ");
                                out.push(Ink::Normal, &text);
                                open = false;
                            }
                        }
                        Block::Image { width, height, .. } => {
                            if !open {
                                out.line(Ink::Normal, label);
                                open = true;
                            } else {
                                out.push(Ink::Normal, " ");
                            }
                            out.push(Ink::Normal, &image_note(*width, *height));
                        }
                        Block::ToolCall {
                            id,
                            name,
                            arguments,
                        } => {
                            let answer = answers.get(id.as_str());
                            if config.drop_useless && answer.is_some_and(|a| a.useless) {
                                continue;
                            }
                            out.line(Ink::Normal, "[call] ");
                            out.push(Ink::Normal, &call_text(name, arguments, config, &prep));
                            if let Some(answer) = answer {
                                out.result(answer.content, answer.is_error, config);
                            }
                            open = false;
                        }
                        Block::ToolResult {
                            content, is_error, ..
                        } => out.result(content, *is_error, config),
                        Block::Thinking { .. }
                        | Block::RedactedThinking { .. }
                        | Block::Native { .. } => {}
                    }
                }
            }
        }
    }
    out.runs
}

/// Serialized text without inks, for counting and text fallbacks.
pub fn plain_text(runs: &[Run]) -> String {
    runs.iter().map(|run| run.text.as_str()).collect()
}

struct Writer<'p> {
    runs: Vec<Run>,
    prep: &'p dyn Fn(&str) -> String,
}

impl Writer<'_> {
    fn push(&mut self, ink: Ink, text: &str) {
        if text.is_empty() {
            return;
        }
        match self.runs.last_mut() {
            Some(run) if run.ink == ink => run.text.push_str(text),
            _ => self.runs.push(Run::new(ink, text)),
        }
    }

    /// Starts a new scope on a new line.
    fn line(&mut self, ink: Ink, label: &str) {
        if !self.runs.is_empty() {
            self.push(ink, &NEWLINE.to_string());
        }
        self.push(ink, label);
    }

    fn result(&mut self, content: &[Block], is_error: bool, config: &SerializeConfig) {
        let mut text = String::new();
        for block in content {
            let piece = match block {
                Block::Text { text } => (self.prep)(text),
                Block::Image { width, height, .. } => image_note(*width, *height),
                other => (self.prep)(
                    &Message {
                        role: Role::Tool,
                        content: vec![other.clone()],
                        meta: Default::default(),
                    }
                    .plain_text(),
                ),
            };
            if piece.is_empty() {
                continue;
            }
            if !text.is_empty() {
                text.push(NEWLINE);
            }
            text.push_str(&piece);
        }
        let text = cap_middle(&text, config.result_cap, config.head_percent);
        self.line(Ink::Dim, if is_error { "[error] " } else { "[result] " });
        self.push(Ink::Dim, &text);
    }
}

fn image_note(width: Option<u32>, height: Option<u32>) -> String {
    match (width, height) {
        (Some(w), Some(h)) => format!("[image {w}x{h}]"),
        _ => "[image]".to_string(),
    }
}

/// `name(key="value", n=3)` with each value and the whole call capped.
fn call_text(
    name: &str,
    arguments: &serde_json::Value,
    config: &SerializeConfig,
    prep: &dyn Fn(&str) -> String,
) -> String {
    let value_text = |value: &serde_json::Value| -> String {
        let raw = match value {
            serde_json::Value::String(s) => format!("\"{}\"", prep(s)),
            other => prep(&other.to_string()),
        };
        cap_middle(&raw, config.argument_cap, config.head_percent)
    };
    let inner = match arguments {
        serde_json::Value::Object(map) => map
            .iter()
            .map(|(key, value)| format!("{key}={}", value_text(value)))
            .collect::<Vec<_>>()
            .join(", "),
        serde_json::Value::Null => String::new(),
        other => value_text(other),
    };
    cap_middle(
        &format!("{}({inner})", prep(name)),
        config.call_cap,
        config.head_percent,
    )
}

/// The marker put where the middle of a long text was cut.
pub(crate) fn cut_marker(cut: usize) -> String {
    format!(" [...{cut} chars cut...] ")
}

/// Keeps `cap` characters of `text`: `head_percent` of them from the head,
/// the rest from the tail, with a marker between saying how many were cut.
/// Text within the cap comes back unchanged.
pub(crate) fn cap_middle(text: &str, cap: usize, head_percent: u8) -> String {
    let total = text.chars().count();
    if total <= cap {
        return text.to_string();
    }
    let head = cap * usize::from(head_percent.min(100)) / 100;
    let tail = cap - head;
    let cut = total - head - tail;
    let mut out: String = text.chars().take(head).collect();
    out.push_str(&cut_marker(cut));
    out.extend(text.chars().skip(head + cut));
    out
}

/// Replaces every `data:<type>;base64,<payload>` in `text` with a short
/// note naming the type and the payload's decoded size.
pub(crate) fn replace_data_urls(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("data:") {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("data:") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 5..];
        let Some(marker) = after.find(";base64,") else {
            out.push_str("data:");
            rest = after;
            continue;
        };
        let media = &after[..marker];
        let valid_media = !media.is_empty()
            && media.len() <= 100
            && media.chars().all(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '+' | '-' | '=' | ';')
            });
        if !valid_media {
            out.push_str("data:");
            rest = after;
            continue;
        }
        let payload_start = marker + ";base64,".len();
        let payload_len = after[payload_start..]
            .find(|c: char| {
                !(c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '=' | '-' | '_'))
            })
            .unwrap_or(after.len() - payload_start);
        let bytes = payload_len / 4 * 3;
        out.push_str(&format!("[data:{media}, {} omitted]", human_bytes(bytes)));
        rest = &after[payload_start + payload_len..];
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
}

fn human_bytes(bytes: usize) -> String {
    if bytes >= 1024 * 1024 {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    } else if bytes >= 1024 {
        format!("{} KB", bytes / 1024)
    } else {
        format!("{bytes} B")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use abridge_llm::ImageSource;
    use abridge_llm::Meta;
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;
    use serde_json::json;
    use std::sync::Arc;

    fn show(runs: &[Run]) -> String {
        runs.iter()
            .map(|run| {
                let text = run.text.replace(NEWLINE, "\n");
                match run.ink {
                    Ink::Normal => text,
                    Ink::Dim => format!("<dim>{text}</dim>"),
                }
            })
            .collect()
    }

    #[test]
    fn a_small_history_reads_as_scopes_with_results_nested() {
        let history = vec![
            Message::user("fix the \u{201c}failing\u{201d} test"),
            Message {
                role: Role::Assistant,
                content: vec![
                    Block::Thinking {
                        thinking: "Look at the test first.".into(),
                        signature: Some("sig".into()),
                    },
                    Block::text("Reading it."),
                    Block::ToolCall {
                        id: "c1".into(),
                        name: "read".into(),
                        arguments: json!({"path": "src/lib.rs", "limit": 20}),
                    },
                    Block::ToolCall {
                        id: "c2".into(),
                        name: "bash".into(),
                        arguments: json!({"command": "cargo test"}),
                    },
                ],
                meta: Meta::default(),
            },
            Message::tool_result("c1", "fn add(a: i32) -> i32 {\n    a + 1\n}", false),
            Message::tool_result("c2", "\u{1b}[31merror\u{1b}[0m: 1 failed", true),
            Message::assistant("Fixed: `add` now adds 0 to O1l."),
        ];
        insta::assert_snapshot!(show(&serialize(&history, &SerializeConfig::default())));
    }

    #[test]
    fn thinking_is_dropped_when_the_provider_refuses_it() {
        let history = vec![Message {
            role: Role::Assistant,
            content: vec![
                Block::Thinking {
                    thinking: "secret plan".into(),
                    signature: None,
                },
                Block::text("done"),
            ],
            meta: Meta::default(),
        }];
        let config = SerializeConfig {
            include_thinking: false,
            ..SerializeConfig::default()
        };
        assert_eq!(show(&serialize(&history, &config)), "[assistant] done");
    }

    #[test]
    fn useless_results_are_dropped_with_their_calls_but_errors_stay() {
        let useless = Meta {
            useless: true,
            ..Meta::default()
        };
        let history = vec![
            Message::tool_call("c1", "grep", json!({"pattern": "nothing"})),
            Message::tool_result("c1", "no matches", false).with_meta(useless.clone()),
            Message::tool_call("c2", "grep", json!({"pattern": "boom"})),
            Message::tool_result("c2", "grep: bad regex", true).with_meta(useless),
        ];
        assert_eq!(
            show(&serialize(&history, &SerializeConfig::default())),
            "[call] grep(pattern=\"boom\")<dim>\n[error] grep: bad regex</dim>"
        );
    }

    #[test]
    fn long_results_keep_sixty_percent_head_and_the_tail() {
        let long: String = (0..5000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let history = vec![
            Message::tool_call("c1", "cat", json!({"path": "big"})),
            Message::tool_result("c1", long.clone(), false),
        ];
        let text = plain_text(&serialize(&history, &SerializeConfig::default()));
        let result = text.split("[result] ").nth(1).unwrap();
        let head: String = long.chars().take(1200).collect();
        let tail: String = long.chars().skip(5000 - 800).collect();
        assert_eq!(result, format!("{head}{}{tail}", cut_marker(3000)));
    }

    #[test]
    fn argument_values_and_whole_calls_are_capped() {
        let config = SerializeConfig::default();
        let big = "x".repeat(1000);
        let text = call_text(
            "write",
            &json!({"content": big, "path": "a"}),
            &config,
            &|s| normalize(s),
        );
        assert!(text.contains(&cut_marker(502)), "{text}");
        assert!(text.ends_with("path=\"a\")"));
        let many: serde_json::Map<String, serde_json::Value> = (0..20)
            .map(|i| (format!("k{i:02}"), json!("y".repeat(400))))
            .collect();
        let text = call_text(
            "edit",
            &serde_json::Value::Object(many.clone()),
            &config,
            &|s| normalize(s),
        );
        let whole = call_text(
            "edit",
            &serde_json::Value::Object(many),
            &SerializeConfig {
                call_cap: usize::MAX,
                ..config
            },
            &|s| normalize(s),
        )
        .chars()
        .count();
        assert_eq!(
            text.chars().count(),
            2000 + cut_marker(whole - 2000).chars().count()
        );
        assert!(text.starts_with("edit(k00=\""));
        assert!(text.ends_with("\")"));
        assert!(text.contains("chars cut"));
    }

    #[test]
    fn data_urls_become_a_short_note() {
        let payload = "A".repeat(4000);
        let text = format!("see data:image/png;base64,{payload} here");
        assert_eq!(
            replace_data_urls(&text),
            "see [data:image/png, 2 KB omitted] here"
        );
        assert_eq!(replace_data_urls("no data: url"), "no data: url");
    }

    #[test]
    fn images_are_noted_never_printed_as_base64() {
        let history = vec![Message {
            role: Role::User,
            content: vec![
                Block::text("look"),
                Block::Image {
                    source: ImageSource::Base64 {
                        media_type: "image/png".into(),
                        data: "iVBORw0KGgo".repeat(100),
                    },
                    width: Some(640),
                    height: Some(480),
                },
            ],
            meta: Meta::default(),
        }];
        assert_eq!(
            show(&serialize(&history, &SerializeConfig::default())),
            "[user] look [image 640x480]"
        );
    }

    #[test]
    fn shared_messages_serialize_like_owned_ones() {
        let owned = vec![Message::user("a"), Message::assistant("b")];
        let shared: Vec<Arc<Message>> = owned.iter().cloned().map(Arc::new).collect();
        let config = SerializeConfig::default();
        assert_eq!(serialize(&owned, &config), serialize(&shared, &config));
    }

    proptest! {
        #[test]
        fn cap_middle_never_exceeds_cap_plus_marker(text in "\\PC{0,400}", cap in 0usize..300, head in 0u8..=100) {
            let out = cap_middle(&text, cap, head);
            let total = text.chars().count();
            if total <= cap {
                prop_assert_eq!(out, text);
            } else {
                prop_assert_eq!(out.chars().count(), cap + cut_marker(total - cap).chars().count());
            }
        }
    }
}
