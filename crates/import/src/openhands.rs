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
use serde_json::Value;

use crate::Format;
use crate::ImportError;
use crate::ImportWarning;
use crate::Imported;
use crate::Wanted;
use crate::builder::Builder;
use crate::builder::Output;
use crate::document;
use crate::input::Input;
use crate::json::At;
use crate::json::kind_of;

mod records;
mod response;
mod sources;

use records::records;
use response::call_arguments;
use response::metadata;
use response::response_id;
use response::response_of;
use response::said;
use response::usage_of;
use sources::Located;

/// The sessions `wanted` names, each handed to `visit`: the one of a
/// trajectory, or the records of evaluation output. Returns how many
/// sessions the file holds.
pub(crate) fn sessions(
    file: &str,
    input: &Input<'_>,
    wanted: Wanted,
    visit: &mut dyn FnMut(Imported) -> Result<(), ImportError>,
) -> Result<usize, ImportError> {
    let head = crate::input::head(file, input, crate::DETECT_BYTES)?;
    if head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        let mut outputs = wanted.outputs(file, 1, |_| true)?;
        if let Some(output) = outputs.first_mut().and_then(Option::take) {
            visit(trajectory(file, input, output)?)?;
        }
        return Ok(1);
    }
    records(file, input, wanted, visit)
}

/// A trajectory, one array of events, read twice one event at a time:
/// first for the calls each model response made, then to convert. Only
/// one event's JSON tree is held at a time.
fn trajectory(file: &str, input: &Input<'_>, output: Output) -> Result<Imported, ImportError> {
    const WHAT: &str = "an array of events, a record with a `history` or an event";
    let mut calls = Calls::default();
    let mut created = None;
    document::each_element(file, input, WHAT, &mut |index, event| {
        if index == 0 {
            created = crate::time_of(&event, "timestamp");
        }
        calls.add(&event);
        Ok(())
    })?;
    let mut b = Builder::new(file, Format::OpenHands, output);
    b.report.sessions = 1;
    b.report.session = 1;
    b.report.records = 1;
    let mut stream = Stream::new(&mut b, file, calls);
    document::each_element(file, input, WHAT, &mut |index, event| {
        stream.event(&Located {
            line: None,
            path: format!("[{index}]"),
            event: &event,
        })
    })?;
    let (drafts, report) = b.finish(None)?;
    Ok(Imported {
        header: crate::header(crate::id_from_file(file), created, None),
        drafts,
        report,
    })
}

/// One tool call an action made, kept for the first action of its model
/// response, which writes every call of that response.
#[derive(Debug)]
struct Call {
    id: String,
    name: String,
    /// The action's `args`: the call's arguments when the response does not
    /// record them.
    args: Value,
}

/// Response id -> the calls its actions made, in stream order.
#[derive(Debug, Default)]
struct Calls(HashMap<String, Vec<Call>>);

impl Calls {
    /// Notes the call `event` made, if it is an action made through a tool
    /// call. A finish made through a tool call is written as the model's
    /// last words, not as a call.
    fn add(&mut self, event: &Value) {
        let kind = event.get("action").and_then(Value::as_str);
        if kind.is_some_and(|k| k != "finish")
            && let Some(meta) = metadata(event)
        {
            let calls = self.0.entry(response_id(meta)).or_default();
            if let Some(id) = meta.get("tool_call_id").and_then(Value::as_str) {
                calls.push(Call {
                    id: id.to_string(),
                    name: meta
                        .get("function_name")
                        .and_then(Value::as_str)
                        .unwrap_or("tool")
                        .to_string(),
                    args: event.get("args").cloned().unwrap_or(Value::Null),
                });
            }
        }
    }
}

/// The events of one session turned into messages.
struct Stream<'b> {
    b: &'b mut Builder,
    file: &'b str,
    /// The calls of each response not yet written.
    calls: Calls,
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

impl<'b> Stream<'b> {
    fn new(b: &'b mut Builder, file: &'b str, calls: Calls) -> Self {
        Stream {
            b,
            file,
            calls,
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

    fn event(&mut self, located: &Located<'_>) -> Result<(), ImportError> {
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
        // Each response is written once: its calls are taken, not copied.
        let calls = self.calls.0.remove(&response_id).unwrap_or_default();
        for call in calls {
            let arguments = response
                .and_then(|r| call_arguments(r, &call.id))
                .unwrap_or(call.args);
            content.push(Block::ToolCall {
                id: call.id,
                name: call.name,
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
