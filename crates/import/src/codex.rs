//! OpenAI Codex CLI rollouts: one `{timestamp, type, payload}` object per
//! line, linear.
//!
//! The model's history is the `response_item` lines. Consecutive items the
//! model produced in one response (reasoning, assistant text, tool calls)
//! become one assistant message; a `token_count` event closes the response
//! and its `last_token_usage` becomes that message's usage. A user or
//! developer message that Codex wrote between a call and its output is
//! moved after the outputs, so that results follow their calls.
//!
//! | rollout line | abridge event |
//! |---|---|
//! | `session_meta` | [`Header`](abridge_session::Header): id, timestamp, cwd |
//! | `response_item` `message` user / developer / system | message of that role; a user message is `Origin::Injected` when its text is Codex context (see `item::MARKERS`) or, in a rollout that echoes typed input, when no `user_message` echo follows it |
//! | `response_item` `message` assistant, `reasoning`, `function_call`, `custom_tool_call`, `local_shell_call` | blocks of one assistant message (reasoning: thinking, encrypted content as its signature) |
//! | `response_item` `*_call_output` | tool message |
//! | `event_msg` `token_count` | usage of the preceding assistant message |
//! | `turn_context` | counted; a change of model adds a `model_change` log event |
//! | `compacted` | `compaction/imported` log + checkpoint `replace` by the first item of `replacement_history`, the other items appended |
//! | `response_item` `web_search_call`, other `event_msg` (UI echoes of messages) | counted in the report |
//! | legacy rollout (before `session_meta`): a bare `{id, timestamp, instructions, git}` first line, then bare items | header: id, timestamp; items as above, stamped with the start time; `record_type` state lines counted |

use std::collections::HashSet;

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_llm::Usage;
use serde_json::Value;
use serde_json::json;

use crate::Format;
use crate::ImportError;
use crate::ImportWarning;
use crate::Imported;
use crate::TYPE_IMPORTED_COMPACTION;
use crate::TYPE_MODEL_CHANGE;
use crate::UNECHOED;
use crate::builder::Builder;
use crate::builder::Keep;
use crate::builder::Output;
use crate::format::is_legacy_codex_header;
use crate::input::Input;
use crate::input::Records;
use crate::json::At;
use crate::json::Record;

mod item;

use item::Item;
use item::convert;

/// Lines of the user messages the user typed. Codex follows each one with
/// an `event_msg` `user_message` echo (the text its UI shows) before the
/// next item; the context it injects gets no echo. This is the only witness
/// where the text itself says nothing (redacted rollouts, new tags). Empty
/// when the rollout has no echoes at all (older versions).
fn typed_lines(
    records: impl Iterator<Item = Result<Record, ImportError>>,
) -> Result<HashSet<u64>, ImportError> {
    let mut typed = HashSet::new();
    let mut pending: Option<u64> = None;
    for record in records {
        let record = record?;
        let value = &record.value;
        let payload = value.get("payload");
        let kind = payload.and_then(|p| p.get("type")).and_then(Value::as_str);
        match value.get("type").and_then(Value::as_str) {
            Some("response_item") => {
                let role = payload.and_then(|p| p.get("role")).and_then(Value::as_str);
                pending = (kind == Some("message") && role == Some("user")).then_some(record.line);
            }
            Some("event_msg") if kind == Some("user_message") => {
                typed.extend(pending.take());
            }
            _ => {}
        }
    }
    Ok(typed)
}

struct Group {
    content: Vec<Block>,
    time: Option<String>,
    line: u64,
    usage: Option<Usage>,
}

struct Held {
    message: Message,
    time: Option<String>,
    line: u64,
    passed: bool,
}

struct State {
    b: Builder,
    group: Option<Group>,
    held: Vec<Held>,
    provider: String,
    model: Option<String>,
    /// An instruction-file message has been pinned: `turn_context`'s
    /// copy of the instructions is not pinned again.
    instructions: bool,
}

impl State {
    fn origin(&self) -> Origin {
        match &self.model {
            Some(model) => Origin::Model {
                provider: self.provider.clone(),
                model: model.clone(),
            },
            None => self.b.imported(),
        }
    }

    fn flush(&mut self) {
        let Some(group) = self.group.take() else {
            return;
        };
        if group.usage.is_some() {
            self.b.report.usage_attached += 1;
        }
        let message = Message {
            role: Role::Assistant,
            content: group.content,
            meta: Meta {
                origin: Some(self.origin()),
                usage: group.usage,
                ..Meta::default()
            },
        };
        let last = self.b.last();
        self.b.message(message, last, group.time, Some(group.line));
    }

    fn release(&mut self) {
        for held in std::mem::take(&mut self.held) {
            if held.passed {
                self.b.report.reordered += 1;
            }
            self.instructions |=
                crate::instructions::codex_message(&mut self.b, held.message, held.time, held.line);
        }
    }

    /// Writes what is still held and ends the import.
    fn finish(
        mut self,
        file: &str,
        session_id: Option<String>,
        created: Option<String>,
        cwd: Option<String>,
    ) -> Result<Imported, ImportError> {
        self.flush();
        self.release();
        let header = crate::header(
            session_id.unwrap_or_else(|| crate::id_from_file(file)),
            created,
            cwd,
        );
        let (drafts, report) = self.b.finish(None)?;
        Ok(Imported {
            header,
            drafts,
            report,
        })
    }

    fn item(&mut self, item: Item, time: Option<String>, line: u64) {
        match item {
            Item::Reply(blocks) => {
                self.release();
                let group = self.group.get_or_insert_with(|| Group {
                    content: Vec::new(),
                    time,
                    line,
                    usage: None,
                });
                group.content.extend(blocks);
            }
            Item::Message(message) => {
                self.flush();
                if !self.held.is_empty() || self.b.open_calls_at(self.b.last()) > 0 {
                    self.held.push(Held {
                        message,
                        time,
                        line,
                        passed: false,
                    });
                } else {
                    self.instructions |=
                        crate::instructions::codex_message(&mut self.b, message, time, line);
                }
            }
            Item::Output(message) => {
                self.flush();
                let last = self.b.last();
                self.b.message(message, last, time, Some(line));
                for held in &mut self.held {
                    held.passed = true;
                }
                if self.b.open_calls_at(self.b.last()) == 0 {
                    self.release();
                }
            }
            Item::Skip(kind) => self.b.report.skip(kind),
        }
    }
}

pub(crate) fn import(
    file: &str,
    input: &Input<'_>,
    output: Output,
) -> Result<Imported, ImportError> {
    let mut state = State {
        b: Builder::new(file, Format::Codex, output),
        group: None,
        held: Vec::new(),
        provider: "openai".to_string(),
        model: None,
        instructions: false,
    };
    let mut records = input.records(file)?.peekable();
    // A first line that fails to parse is reported by the pass below.
    if matches!(records.peek(), Some(Ok(r)) if is_legacy_codex_header(&r.value) || is_bare_item(&r.value))
    {
        return legacy(file, records, state);
    }
    // A first pass for the echoes; the conversion reads the file again.
    let echoes = typed_lines(records)?;
    let echoes = (!echoes.is_empty()).then_some(&echoes);
    let records = input.records(file)?;
    let mut session_id = None;
    let mut created = None;
    let mut cwd = None;
    let mut last_total: Option<Value> = None;
    for record in records {
        let record = record?;
        state.b.report.records += 1;
        let at = At::line(file, record.line);
        let value = &record.value;
        let line = record.line;
        let time = crate::time_of(value, "timestamp");
        if created.is_none() {
            created = time.clone();
        }
        let kind = at.str(value, "type")?;
        let payload = at.obj(value, "payload")?;
        let pat = at.inside("payload");
        match kind {
            "session_meta" if session_id.is_none() => {
                session_id = Some(pat.str(payload, "id")?.to_string());
                if let Some(t) = crate::time_of(payload, "timestamp") {
                    created = Some(t);
                }
                cwd = pat.opt_str(payload, "cwd")?.map(str::to_string);
                if let Some(provider) = pat.opt_str(payload, "model_provider")? {
                    state.provider = provider.to_string();
                }
            }
            "session_meta" => state.b.report.skip("session_meta (repeated)"),
            "turn_context" => {
                state.b.report.skip("turn_context");
                if let Some(text) = pat.opt_str(payload, "user_instructions")?
                    && !state.instructions
                    && !text.trim().is_empty()
                {
                    state.flush();
                    let last = state.b.last();
                    let pin = abridge_session::Pin::text(
                        text,
                        crate::instructions::CODEX_USER_INSTRUCTIONS,
                    );
                    crate::instructions::write_pin(&mut state.b, &pin, last, time.clone(), line);
                    state.instructions = true;
                }
                if let Some(model) = pat.opt_str(payload, "model")?
                    && state.model.as_deref() != Some(model)
                {
                    if state.model.is_some() {
                        state.flush();
                        let last = state.b.last();
                        state.b.log(
                            TYPE_MODEL_CHANGE,
                            json!({"provider": state.provider, "model": model}),
                            last,
                            time,
                            Some(line),
                        );
                    }
                    state.model = Some(model.to_string());
                }
            }
            "response_item" => {
                let mut item = convert(&state.b, pat, payload)?;
                if let Item::Message(message) = &mut item
                    && message.meta.origin == Some(Origin::User)
                    && echoes.is_some_and(|typed| !typed.contains(&line))
                {
                    message.meta.origin = Some(Origin::Injected {
                        source: UNECHOED.to_string(),
                    });
                }
                state.item(item, time, line);
            }
            "event_msg" => {
                let event = pat.str(payload, "type")?;
                if event != "token_count" {
                    state.b.report.skip(format!("event_msg/{event}"));
                    continue;
                }
                let Some(info) = pat.opt_obj(payload, "info")? else {
                    state.b.report.skip("event_msg/token_count (no usage)");
                    continue;
                };
                let iat = at.inside("payload.info");
                let total = info.get("total_token_usage").cloned();
                if total.is_some() && total == last_total {
                    state.b.report.skip("event_msg/token_count (repeat)");
                    continue;
                }
                last_total = total;
                let Some(last_usage) = iat.opt_obj(info, "last_token_usage")? else {
                    state.b.report.skip("event_msg/token_count (no usage)");
                    continue;
                };
                let uat = at.inside("payload.info.last_token_usage");
                let input = uat.count(last_usage, "input_tokens")?;
                let cached = uat.count(last_usage, "cached_input_tokens")?;
                let usage = Usage {
                    input: input.saturating_sub(cached),
                    output: uat.count(last_usage, "output_tokens")?,
                    cache_read: cached,
                    cache_write: 0,
                };
                if let Some(group) = state.group.as_mut().filter(|g| g.usage.is_none()) {
                    group.usage = Some(usage);
                    state.flush();
                } else {
                    state.flush();
                    let attached = state
                        .b
                        .last_assistant(state.b.last())
                        .is_some_and(|a| state.b.attach_usage(a, usage));
                    if !attached {
                        state.b.report.skip("event_msg/token_count (no new reply)");
                    }
                }
            }
            "compacted" => {
                state.flush();
                state.release();
                compacted(&mut state, at, payload, time.as_ref(), line)?;
            }
            other => state.b.report.skip(other.to_string()),
        }
    }
    state.finish(file, session_id, created, cwd)
}

/// A rollout from before `session_meta` (Codex CLI up to mid 2025): a bare
/// header object (`id`, `timestamp`, `instructions`, `git`), then one bare
/// response item per line, and `record_type` lines holding saved state.
/// Items carry no time: every event gets the session's start time.
fn legacy(
    file: &str,
    mut records: std::iter::Peekable<Records<'_>>,
    mut state: State,
) -> Result<Imported, ImportError> {
    let mut session_id = None;
    let mut created = None;
    if let Some(Ok(first)) =
        records.next_if(|r| r.as_ref().is_ok_and(|r| is_legacy_codex_header(&r.value)))
    {
        state.b.report.records += 1;
        let at = At::line(file, first.line);
        session_id = Some(at.str(&first.value, "id")?.to_string());
        created = crate::time_of(&first.value, "timestamp");
        if first
            .value
            .get("instructions")
            .is_some_and(|i| !i.is_null())
        {
            state.b.report.skip("header instructions");
        }
    }
    for record in records {
        let record = record?;
        state.b.report.records += 1;
        let at = At::line(file, record.line);
        let value = &record.value;
        if let Some(kind) = value.get("record_type") {
            state
                .b
                .report
                .skip(format!("record_type/{}", kind.as_str().unwrap_or("?")));
            continue;
        }
        let item = convert(&state.b, at, value)?;
        state.item(item, created.clone(), record.line);
    }
    state.finish(file, session_id, created, None)
}

/// A response item written bare, as legacy rollouts do.
fn is_bare_item(value: &Value) -> bool {
    value.get("payload").is_none()
        && matches!(
            value.get("type").and_then(Value::as_str),
            Some("message" | "function_call" | "function_call_output" | "reasoning")
        )
}

/// A `compacted` line: the history from here on is `replacement_history`
/// (newer Codex) or the summary `message` (older Codex).
fn compacted(
    state: &mut State,
    at: At<'_>,
    payload: &Value,
    time: Option<&String>,
    line: u64,
) -> Result<(), ImportError> {
    let time = time.cloned();
    let pat = at.inside("payload");
    let history = pat.opt_arr(payload, "replacement_history")?;
    let summary = pat.opt_str(payload, "message")?.unwrap_or_default();
    let encrypted: Vec<&Value> = history
        .iter()
        .filter(|item| item.get("type").and_then(Value::as_str) == Some("compaction"))
        .filter_map(|item| item.get("encrypted_content"))
        .collect();
    let compaction_id = format!("line-{line}");
    let last = state.b.last();
    let log = state.b.log(
        TYPE_IMPORTED_COMPACTION,
        json!({
            "format": "codex",
            "source_id": compaction_id,
            "message": summary,
            "replacement_items": history.len(),
            "encrypted": encrypted,
        }),
        last,
        time.clone(),
        Some(line),
    );
    let checkpoint = Origin::Checkpoint {
        compaction_id,
        method: "codex".to_string(),
    };
    let mut messages: Vec<Message> = Vec::new();
    let mut reply: Option<Vec<Block>> = None;
    for (i, item) in history.iter().enumerate() {
        let path = format!("payload.replacement_history[{i}]");
        let converted = convert(&state.b, at.inside(&path), item)?;
        if let Item::Reply(blocks) = converted {
            reply.get_or_insert_with(Vec::new).extend(blocks);
            continue;
        }
        if let Some(blocks) = reply.take() {
            messages.push(Message {
                role: Role::Assistant,
                content: blocks,
                meta: Meta::default(),
            });
        }
        match converted {
            Item::Message(m) | Item::Output(m) => messages.push(m),
            Item::Skip(kind) => state.b.report.skip(format!("replacement_history {kind}")),
            Item::Reply(_) => {}
        }
    }
    if let Some(blocks) = reply.take() {
        messages.push(Message {
            role: Role::Assistant,
            content: blocks,
            meta: Meta::default(),
        });
    }
    if messages.is_empty() {
        if summary.is_empty() {
            state.b.report.warn(ImportWarning::Compaction {
                line,
                reason: "no replacement history and no summary; recorded as a log event only"
                    .to_string(),
            });
            return Ok(());
        }
        messages.push(Message::user(summary));
    }
    let mut messages = messages.into_iter().map(|mut m| {
        if m.meta.origin.is_none() || matches!(m.meta.origin, Some(Origin::User)) {
            m.meta.origin = Some(checkpoint.clone());
        }
        m
    });
    if let Some(first) = messages.next() {
        state
            .b
            .compaction(first, Some(log), time.clone(), line, Keep::Nothing, &[log])?;
    }
    for message in messages {
        let last = state.b.last();
        state.b.message(message, last, time.clone(), Some(line));
    }
    Ok(())
}
