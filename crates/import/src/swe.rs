//! SWE-agent trajectories (`.traj`): one JSON document whose `history` is
//! the chat the model was sent, in order.
//!
//! | trajectory part | abridge event |
//! |---|---|
//! | `history[]` system / user / assistant | message of that role (assistant `tool_calls` become tool calls; `is_demo` user messages `Origin::Injected`) |
//! | `history[]` tool, with `tool_call_ids` | one tool message per id |
//! | `trajectory[]` steps | counted: they repeat the history step by step |
//! | `info`, `replay_config`, `environment` | counted |
//!
//! Trajectories record no times and no session id: events are stamped at
//! import and the session id is the file's stem.

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
use crate::builder::Builder;
use crate::builder::Output;
use crate::input::Input;
use crate::json::At;
use crate::json::kind_of;

pub(crate) fn import(
    file: &str,
    input: &Input<'_>,
    output: Output,
) -> Result<Imported, ImportError> {
    let root = At {
        file,
        line: None,
        path: "",
    };
    let mut b = Builder::new(file, Format::SweAgent, output);
    b.report.records = 1;
    // The history is converted entry by entry as it is parsed; the rest of
    // the document (mostly the trajectory's steps) is skipped unbuilt.
    let walk = crate::document::walk(
        file,
        input,
        "a trajectory object",
        "history",
        &mut |i, entry| history_entry(&mut b, root, i, &entry),
    )?;
    for (key, len) in walk.others {
        match (key.as_str(), len) {
            ("trajectory", Some(0)) => {}
            ("trajectory", Some(steps)) => {
                *b.report
                    .skipped
                    .entry("trajectory step".to_string())
                    .or_default() += steps as u64;
            }
            ("trajectory", None) => {}
            _ => b.report.skip(key),
        }
    }
    let (drafts, report) = b.finish(None)?;
    Ok(Imported {
        header: crate::header(crate::id_from_file(file), None, None),
        drafts,
        report,
    })
}

/// One `history[i]` entry: a message, or one tool message per call it
/// answers.
fn history_entry(
    b: &mut Builder,
    root: At<'_>,
    i: usize,
    entry: &Value,
) -> Result<(), ImportError> {
    {
        let path = format!("history[{i}]");
        let at = root.inside(&path);
        let role = at.str(entry, "role")?;
        let content = content(at, entry)?;
        match role {
            "system" | "user" => {
                let role = if role == "system" {
                    Role::System
                } else {
                    Role::User
                };
                let origin = match role {
                    // A worked example from the agent's configuration.
                    Role::User if at.flag(entry, "is_demo")? => Origin::Injected {
                        source: "demonstration".to_string(),
                    },
                    Role::User => Origin::User,
                    _ => b.imported(),
                };
                let message = Message {
                    role,
                    content,
                    meta: Meta {
                        origin: Some(origin),
                        ..Meta::default()
                    },
                };
                let last = b.last();
                b.message(message, last, None, None);
            }
            "assistant" => {
                let mut content = content;
                for (j, call) in at.opt_arr(entry, "tool_calls")?.iter().enumerate() {
                    let call_path = at.join(&format!("tool_calls[{j}]"));
                    let cat = root.inside(&call_path);
                    let function = cat.obj(call, "function")?;
                    let function_path = cat.join("function");
                    let fat = root.inside(&function_path);
                    let arguments = match function.get("arguments") {
                        Some(Value::String(text)) => serde_json::from_str(text)
                            .unwrap_or_else(|_| Value::String(text.clone())),
                        Some(other) => other.clone(),
                        None => Value::Null,
                    };
                    content.push(Block::ToolCall {
                        id: cat.str(call, "id")?.to_string(),
                        name: fat.str(function, "name")?.to_string(),
                        arguments,
                    });
                }
                let message = Message {
                    role: Role::Assistant,
                    content,
                    meta: Meta::default(),
                };
                let last = b.last();
                b.message(message, last, None, None);
            }
            "tool" => {
                let ids = at.opt_arr(entry, "tool_call_ids")?;
                if ids.is_empty() {
                    b.report.warn(ImportWarning::Note {
                        line: None,
                        what: format!(
                            "{path} is a tool message without tool_call_ids; kept as a user message"
                        ),
                    });
                    let message = Message {
                        role: Role::User,
                        content,
                        meta: Meta::default(),
                    };
                    let last = b.last();
                    b.message(message, last, None, None);
                    return Ok(());
                }
                if ids.len() > 1 {
                    b.report.warn(ImportWarning::Note {
                        line: None,
                        what: format!(
                            "{path} answers {} calls with one observation; each call gets a copy",
                            ids.len()
                        ),
                    });
                }
                for (j, id) in ids.iter().enumerate() {
                    let Some(call_id) = id.as_str() else {
                        return Err(at.error(
                            &format!("tool_call_ids[{j}]"),
                            format!("expected a string, found {}", kind_of(id)),
                        ));
                    };
                    let message = Message {
                        role: Role::Tool,
                        content: vec![Block::ToolResult {
                            call_id: call_id.to_string(),
                            content: content.clone(),
                            is_error: false,
                        }],
                        meta: Meta::default(),
                    };
                    let last = b.last();
                    b.message(message, last, None, None);
                }
            }
            other => return Err(at.error("role", format!("unknown role {other:?}"))),
        }
    }
    Ok(())
}

/// `content`: a string, or an array of `text` / `image_url` parts.
fn content(at: At<'_>, entry: &Value) -> Result<Vec<Block>, ImportError> {
    match entry.get("content") {
        Some(Value::String(text)) => Ok(vec![Block::text(text.as_str())]),
        Some(Value::Array(parts)) => {
            let mut out = Vec::with_capacity(parts.len());
            for (i, part) in parts.iter().enumerate() {
                let path = at.join(&format!("content[{i}]"));
                let pat = at.inside(&path);
                match pat.str(part, "type")? {
                    "text" => out.push(Block::text(pat.str(part, "text")?)),
                    "image_url" => {
                        let url = match part.get("image_url") {
                            Some(Value::String(url)) => url.as_str(),
                            Some(object @ Value::Object(_)) => {
                                let url_path = pat.join("image_url");
                                at.inside(&url_path).str(object, "url")?
                            }
                            _ => return Err(pat.error("image_url", "missing")),
                        };
                        out.push(crate::image_from_url(url));
                    }
                    other => {
                        return Err(pat.error("type", format!("unknown content type {other:?}")));
                    }
                }
            }
            Ok(out)
        }
        Some(Value::Null) | None => Ok(Vec::new()),
        Some(other) => Err(at.error(
            "content",
            format!("expected a string or an array, found {}", kind_of(other)),
        )),
    }
}
