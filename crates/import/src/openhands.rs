//! OpenHands event streams: a trajectory (one JSON array of events) or
//! evaluation output (JSONL, one record per task instance, its events in
//! `history`; each record is a session, chosen with `--session N`).
//!
//! Every event is an `action` (with `args`) or an `observation` (with
//! `content` and `extras`), says its `source` (`user`, `agent`,
//! `environment`), and, when the model asked for it through a tool call,
//! carries `tool_call_metadata`: the call's id and name and the model's
//! whole response, which may hold several calls. Observations name the
//! action they answer in `cause`.
//!
//! | event | abridge event |
//! |---|---|
//! | `system` action | system message (`args.content`) |
//! | `message` action from the user / from the agent | user message / assistant message (`args.content`, image URLs as images) |
//! | actions with `tool_call_metadata` | one assistant message per model response: its text, and a tool call per action of that response (arguments from the response, else the action's `args`); usage and model from the response |
//! | `finish` action | assistant message with its final thought |
//! | agent actions without `tool_call_metadata` (prompted tool use) | assistant message with the action's thought and description |
//! | a user's `run` action | user message `$ command`, `Origin::Injected` (`bash`) |
//! | observation of a tool call (by its metadata, or by `cause`) | tool message; a non-zero exit code is added as `[exit code N]`, and `error` observations, failed commands and non-zero exit codes are errors |
//! | other observations (of prompted actions, of the user's commands, `recall` context) | user message, `Origin::Injected` (`observation`, `recall`) |
//! | an observation whose `cause` is no recorded action | the same, with a warning |
//! | `condensation` actions | `openhands/condensation` log event: the surface keeps the full history |
//! | `recall` actions, `change_agent_state`, `agent_state_changed`, `null` events, empty recalls | counted |
//! | record fields besides `history` (`instruction`, `test_result`, `metadata`, ...) | counted |

use std::collections::HashMap;
use std::collections::HashSet;

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_llm::Usage;
use serde_json::Value;

use crate::Format;
use crate::ImportError;
use crate::ImportWarning;
use crate::Imported;
use crate::builder::Builder;
use crate::json::At;
use crate::json::kind_of;
use crate::json::parse_document;
use crate::json::parse_lines;

/// One event and where it sits: its line (JSONL) and its path.
struct Located<'v> {
    line: Option<u64>,
    path: String,
    event: &'v Value,
}

/// One session in the file.
struct Source<'v> {
    /// The record holding the events in `history`, if any.
    record: Option<&'v Value>,
    events: Vec<Located<'v>>,
}

pub(crate) fn import(
    file: &str,
    bytes: &[u8],
    session: Option<usize>,
) -> Result<Imported, ImportError> {
    let values = documents(file, bytes)?;
    let sources = sources(file, &values)?;
    let index = crate::pick(file, sources.len(), session, |i| {
        sources[i]
            .events
            .iter()
            .any(|e| e.event.get("action").is_some())
    })?;
    let Some(source) = sources.get(index) else {
        return Err(ImportError::Empty {
            file: file.to_string(),
        });
    };
    let mut b = Builder::new(file, Format::OpenHands);
    b.report.sessions = sources.len();
    b.report.session = index + 1;
    b.report.records = match source.record {
        Some(_) => 1,
        None => values.len() as u64,
    };
    if let Some(map) = source.record.and_then(Value::as_object) {
        for key in map.keys().filter(|k| *k != "history") {
            b.report.skip(format!("record {key}"));
        }
    }
    let mut stream = Stream::new(&mut b, file, &source.events);
    for event in &source.events {
        stream.event(event)?;
    }
    let id = source
        .record
        .and_then(|r| r.get("instance_id"))
        .and_then(Value::as_str)
        .map_or_else(
            || match sources.len() {
                1 => crate::id_from_file(file),
                _ => format!("{}-{}", crate::id_from_file(file), index + 1),
            },
            str::to_string,
        );
    let created = source
        .events
        .first()
        .and_then(|e| crate::time_of(e.event, "timestamp"));
    let (drafts, report) = b.finish(None)?;
    Ok(Imported {
        header: crate::header(id, created, None),
        drafts,
        report,
    })
}

/// The file as JSON values with their lines: one document (an array, or a
/// record) or JSONL.
fn documents(file: &str, bytes: &[u8]) -> Result<Vec<(Option<u64>, Value)>, ImportError> {
    let head = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if head == Some(&b'[') {
        return Ok(vec![(None, parse_document(file, bytes)?)]);
    }
    match parse_lines(file, bytes) {
        Ok(records) => Ok(records
            .into_iter()
            .map(|r| (Some(r.line), r.value))
            .collect()),
        // A pretty-printed record spans lines.
        Err(lines_error) => match parse_document(file, bytes) {
            Ok(value) => Ok(vec![(None, value)]),
            Err(_) => Err(lines_error),
        },
    }
}

/// The sessions of the file: an array of events is one, each record with
/// a `history` is one, and lines that are bare events together are one.
fn sources<'v>(
    file: &str,
    values: &'v [(Option<u64>, Value)],
) -> Result<Vec<Source<'v>>, ImportError> {
    let mut sources = Vec::new();
    let mut bare = Vec::new();
    for (line, value) in values {
        let at = At {
            file,
            line: *line,
            path: "",
        };
        let located = |path: String, event: &'v Value| Located {
            line: *line,
            path,
            event,
        };
        match value {
            Value::Array(events) => sources.push(Source {
                record: None,
                events: events
                    .iter()
                    .enumerate()
                    .map(|(i, e)| located(format!("[{i}]"), e))
                    .collect(),
            }),
            Value::Object(map) if map.contains_key("history") => sources.push(Source {
                record: Some(value),
                events: at
                    .arr(value, "history")?
                    .iter()
                    .enumerate()
                    .map(|(i, e)| located(format!("history[{i}]"), e))
                    .collect(),
            }),
            Value::Object(map) if map.contains_key("action") || map.contains_key("observation") => {
                bare.push(located(String::new(), value));
            }
            other => {
                return Err(at.error(
                    "",
                    format!(
                        "expected an array of events, a record with a `history` or an event, found {}",
                        kind_of(other)
                    ),
                ));
            }
        }
    }
    if !bare.is_empty() {
        sources.push(Source {
            record: None,
            events: bare,
        });
    }
    Ok(sources)
}

/// The id of the model response that made an event's tool call; a call
/// whose response is not recorded stands alone.
fn response_id(meta: &Value) -> String {
    meta.get("model_response")
        .and_then(|r| r.get("id"))
        .and_then(Value::as_str)
        .map_or_else(
            || {
                let call = meta.get("tool_call_id").and_then(Value::as_str);
                format!("call:{}", call.unwrap_or_default())
            },
            str::to_string,
        )
}

/// The events of one session turned into messages.
struct Stream<'b, 'v> {
    b: &'b mut Builder,
    file: &'b str,
    /// Response id -> the actions it asked for, in stream order.
    by_response: HashMap<String, Vec<&'v Value>>,
    /// Event id -> the tool-call id its action made (or `None` for an
    /// action that made no call).
    actions: HashMap<i64, Option<String>>,
    /// Model responses already written, by response id.
    responses: HashSet<String>,
    /// The model of the newest response.
    model: Option<String>,
    /// The line of the event being read.
    line: Option<u64>,
}

impl<'b, 'v> Stream<'b, 'v> {
    fn new(b: &'b mut Builder, file: &'b str, events: &[Located<'v>]) -> Self {
        let mut by_response: HashMap<String, Vec<&'v Value>> = HashMap::new();
        for located in events {
            let kind = located.event.get("action").and_then(Value::as_str);
            // A finish made through a tool call is written as the model's
            // last words, not as a call.
            if kind.is_some_and(|k| k != "finish")
                && let Some(meta) = metadata(located.event)
            {
                by_response
                    .entry(response_id(meta))
                    .or_default()
                    .push(located.event);
            }
        }
        Stream {
            b,
            file,
            by_response,
            actions: HashMap::new(),
            responses: HashSet::new(),
            model: None,
            line: None,
        }
    }

    fn add(&mut self, message: Message, time: Option<String>) {
        let last = self.b.last();
        self.b.message(message, last, time, self.line);
    }

    fn event(&mut self, located: &Located<'v>) -> Result<(), ImportError> {
        let event = located.event;
        self.line = located.line;
        let at = At {
            file: self.file,
            line: located.line,
            path: &located.path,
        };
        if !event.is_object() {
            return Err(at.error(
                "",
                format!("expected an event object, found {}", kind_of(event)),
            ));
        }
        let time = crate::time_of(event, "timestamp");
        let id = event.get("id").and_then(Value::as_i64);
        if let Some(kind) = at.opt_str(event, "action")? {
            let call = self.action(at, event, kind, time)?;
            if let Some(id) = id {
                self.actions.insert(id, call);
            }
            return Ok(());
        }
        if let Some(kind) = at.opt_str(event, "observation")? {
            return self.observation(at, event, kind, time);
        }
        self.b.report.skip("event without action or observation");
        Ok(())
    }

    fn action(
        &mut self,
        at: At<'_>,
        event: &Value,
        kind: &str,
        time: Option<String>,
    ) -> Result<Option<String>, ImportError> {
        let source = at.opt_str(event, "source")?.unwrap_or("agent");
        let args = event.get("args").unwrap_or(&Value::Null);
        let path = at.join("args");
        let aat = at.inside(&path);
        let text = |key: &str| -> Result<String, ImportError> {
            Ok(if args.is_object() {
                aat.opt_str(args, key)?.unwrap_or_default().to_string()
            } else {
                String::new()
            })
        };
        match kind {
            "system" => {
                self.add(
                    Message::system(text("content")?).with_meta(imported(self.b)),
                    time,
                );
                Ok(None)
            }
            "message" => {
                let mut content = vec![Block::text(text("content")?)];
                for url in aat.opt_arr(args, "image_urls")? {
                    if let Some(url) = url.as_str().filter(|u| !u.trim().is_empty()) {
                        content.push(crate::image_from_url(url));
                    }
                }
                let (role, origin) = match source {
                    "user" => (Role::User, Some(Origin::User)),
                    "agent" => (
                        Role::Assistant,
                        self.model.as_deref().map(crate::model_origin),
                    ),
                    other => (
                        Role::User,
                        Some(Origin::Injected {
                            source: other.to_string(),
                        }),
                    ),
                };
                self.add(
                    Message {
                        role,
                        content,
                        meta: Meta {
                            origin,
                            ..Meta::default()
                        },
                    },
                    time,
                );
                Ok(None)
            }
            "finish" => {
                let mut thought = text("final_thought")?;
                if thought.is_empty() {
                    thought = text("thought")?;
                }
                if let Some(response) = response_of(event) {
                    let said = said(response);
                    if !said.is_empty() && !thought.contains(&said) {
                        thought = [said, thought].join("\n").trim().to_string();
                    }
                }
                let origin = self.model.as_deref().map(crate::model_origin);
                self.add(
                    Message::text(Role::Assistant, thought).with_meta(Meta {
                        origin,
                        ..Meta::default()
                    }),
                    time,
                );
                Ok(None)
            }
            "recall" | "change_agent_state" | "null" => {
                self.b.report.skip(format!("action/{kind}"));
                Ok(None)
            }
            "condensation" | "condensation_request" => {
                let last = self.b.last();
                self.b.log(
                    "openhands/condensation",
                    event.clone(),
                    last,
                    time,
                    self.line,
                );
                Ok(None)
            }
            "run" if source == "user" && metadata(event).is_none() => {
                let message = Message::user(format!("$ {}", text("command")?)).with_meta(Meta {
                    origin: Some(Origin::Injected {
                        source: "bash".to_string(),
                    }),
                    ..Meta::default()
                });
                self.add(message, time);
                Ok(None)
            }
            _ => match metadata(event) {
                Some(meta) => self.tool_call(at, event, meta, time).map(Some),
                None => {
                    let mut said = text("thought")?;
                    let description = at.opt_str(event, "message")?.unwrap_or_default();
                    if !description.is_empty() {
                        said = [said.as_str(), description].join("\n").trim().to_string();
                    }
                    let origin = self.model.as_deref().map(crate::model_origin);
                    self.add(
                        Message::text(Role::Assistant, said).with_meta(Meta {
                            origin,
                            ..Meta::default()
                        }),
                        time,
                    );
                    Ok(None)
                }
            },
        }
    }

    /// An action the model asked for with a tool call. The first action of
    /// a response writes the assistant message with every call of that
    /// response (the later actions are already in it). Returns the call id.
    fn tool_call(
        &mut self,
        at: At<'_>,
        event: &Value,
        meta: &Value,
        time: Option<String>,
    ) -> Result<String, ImportError> {
        let path = at.join("tool_call_metadata");
        let call_id = at.inside(&path).str(meta, "tool_call_id")?.to_string();
        let response_id = response_id(meta);
        if self.responses.contains(&response_id) {
            return Ok(call_id);
        }
        let response = meta.get("model_response");
        let mut said = response.map(said).unwrap_or_default();
        if said.is_empty() {
            said = event
                .get("args")
                .and_then(|a| a.get("thought"))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .trim()
                .to_string();
        }
        let mut content = Vec::new();
        if !said.is_empty() {
            content.push(Block::text(said));
        }
        let actions = self
            .by_response
            .get(&response_id)
            .cloned()
            .unwrap_or_default();
        for action in actions {
            let Some(action_meta) = metadata(action) else {
                continue;
            };
            let Some(id) = action_meta.get("tool_call_id").and_then(Value::as_str) else {
                continue;
            };
            let name = action_meta
                .get("function_name")
                .and_then(Value::as_str)
                .unwrap_or("tool");
            let arguments = response
                .and_then(|r| call_arguments(r, id))
                .unwrap_or_else(|| action.get("args").cloned().unwrap_or(Value::Null));
            content.push(Block::ToolCall {
                id: id.to_string(),
                name: name.to_string(),
                arguments,
            });
        }
        if let Some(model) = response
            .and_then(|r| r.get("model"))
            .and_then(Value::as_str)
        {
            self.model = Some(model.to_string());
        }
        let message = Message {
            role: Role::Assistant,
            content,
            meta: Meta {
                origin: self.model.as_deref().map(crate::model_origin),
                usage: response.and_then(usage_of),
                ..Meta::default()
            },
        };
        let last = self.b.last();
        self.b.message(message, last, time, self.line);
        self.responses.insert(response_id);
        Ok(call_id)
    }

    fn observation(
        &mut self,
        at: At<'_>,
        event: &Value,
        kind: &str,
        time: Option<String>,
    ) -> Result<(), ImportError> {
        if matches!(kind, "agent_state_changed" | "null") {
            self.b.report.skip(format!("observation/{kind}"));
            return Ok(());
        }
        let mut text = at
            .opt_str(event, "content")?
            .unwrap_or_default()
            .to_string();
        let exit_code = event
            .get("extras")
            .and_then(|e| e.get("metadata"))
            .and_then(|m| m.get("exit_code"))
            .and_then(Value::as_i64)
            .filter(|code| *code >= 0);
        if let Some(code) = exit_code.filter(|c| *c != 0) {
            text.push_str(&format!("\n[exit code {code}]"));
        }
        let failed = kind == "error"
            || event.get("success") == Some(&Value::Bool(false))
            || exit_code.is_some_and(|c| c != 0);
        let cause = event.get("cause").and_then(Value::as_i64);
        let call_id = match metadata(event) {
            Some(meta) => meta
                .get("tool_call_id")
                .and_then(Value::as_str)
                .map(str::to_string),
            None => cause.and_then(|c| self.actions.get(&c).cloned().flatten()),
        };
        if let Some(call_id) = call_id {
            let message = Message {
                role: Role::Tool,
                content: vec![Block::ToolResult {
                    call_id,
                    content: vec![Block::text(text)],
                    is_error: failed,
                }],
                meta: Meta::default(),
            };
            self.add(message, time);
            return Ok(());
        }
        if text.trim().is_empty() {
            self.b.report.skip(format!("observation/{kind} (empty)"));
            return Ok(());
        }
        if !cause.is_some_and(|c| self.actions.contains_key(&c)) {
            self.b.report.warn(ImportWarning::Note {
                line: self.line,
                what: format!(
                    "{}: observation `{kind}` answers no recorded action{}; kept as context",
                    at.path,
                    cause.map(|c| format!(" (cause {c})")).unwrap_or_default()
                ),
            });
        }
        let source = if kind == "recall" {
            "recall"
        } else {
            "observation"
        };
        let message = Message::user(text).with_meta(Meta {
            origin: Some(Origin::Injected {
                source: source.to_string(),
            }),
            ..Meta::default()
        });
        self.add(message, time);
        Ok(())
    }
}

fn imported(b: &Builder) -> Meta {
    Meta {
        origin: Some(b.imported()),
        ..Meta::default()
    }
}

/// An event's `tool_call_metadata`, when it has one.
fn metadata(event: &Value) -> Option<&Value> {
    event.get("tool_call_metadata").filter(|m| m.is_object())
}

/// The model response that made an action's tool call.
fn response_of(event: &Value) -> Option<&Value> {
    metadata(event)?.get("model_response")
}

/// The message of a model response (`choices[0].message`).
fn response_message(response: &Value) -> Option<&Value> {
    response.get("choices")?.get(0)?.get("message")
}

/// What the model said in a response besides its calls.
fn said(response: &Value) -> String {
    response_message(response)
        .and_then(|m| m.get("content"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// The arguments the response gave the call `id`: its JSON string parsed,
/// or kept as a string when it is not JSON.
fn call_arguments(response: &Value, id: &str) -> Option<Value> {
    let calls = response_message(response)?.get("tool_calls")?.as_array()?;
    let call = calls
        .iter()
        .find(|c| c.get("id").and_then(Value::as_str) == Some(id))?;
    let arguments = call.get("function")?.get("arguments")?;
    Some(match arguments {
        Value::String(text) => {
            serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.clone()))
        }
        other => other.clone(),
    })
}

/// A response's usage in our disjoint buckets. LiteLLM reports
/// `prompt_tokens` with cached and cache-written tokens inside it, and the
/// cached ones in `prompt_tokens_details.cached_tokens` (or Anthropic's
/// `cache_read_input_tokens`), the written ones in
/// `cache_creation_input_tokens`.
fn usage_of(response: &Value) -> Option<Usage> {
    let usage = response.get("usage").filter(|u| u.is_object())?;
    let count = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0);
    let cache_read = count(
        usage
            .get("prompt_tokens_details")
            .and_then(|d| d.get("cached_tokens"))
            .or_else(|| usage.get("cache_read_input_tokens")),
    );
    let cache_write = count(usage.get("cache_creation_input_tokens"));
    let prompt = count(usage.get("prompt_tokens"));
    Some(Usage {
        input: prompt.saturating_sub(cache_read + cache_write),
        output: count(usage.get("completion_tokens")),
        cache_read,
        cache_write,
    })
}
