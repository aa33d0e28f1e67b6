//! pi coding agent sessions: v1 (a linear list of entries) and v2/v3
//! (entries linked by `id`/`parentId` into a tree).
//!
//! | pi entry | abridge event |
//! |---|---|
//! | `session` header | [`Header`](abridge_session::Header): id, timestamp, cwd, parentSession |
//! | `message` user / assistant / toolResult | message (user / assistant / tool) |
//! | `message` bashExecution | user message `$ command` + output, `Origin::Injected` (`bash`); log event when excluded from context |
//! | `message` custom, hookMessage / `custom_message` | user message, `Origin::Plugin` |
//! | `message` branchSummary / `branch_summary` | user message, `Origin::BranchSummary` |
//! | `compaction` | `compaction/imported` log + checkpoint `replace` |
//! | `model_change` | `model_change` log event |
//! | `label`, `custom`, `session_info` | log events `label`, `extension_state`, `session_info` |
//! | `thinking_level_change` | counted in the report |
//! | any other type | log event `pi/<type>` with the entry |

use std::collections::HashMap;

use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Origin;
use abridge_llm::Role;
use abridge_llm::StopReason;
use abridge_llm::Usage;
use abridge_session::Seq;
use serde_json::Value;
use serde_json::json;

use crate::Format;
use crate::ImportError;
use crate::ImportWarning;
use crate::Imported;
use crate::TYPE_IMPORTED_COMPACTION;
use crate::TYPE_MODEL_CHANGE;
use crate::builder::Builder;
use crate::builder::Keep;
use crate::builder::Output;
use crate::input::Input;
use crate::json::At;

pub(crate) fn import(
    file: &str,
    input: &Input<'_>,
    output: Output,
) -> Result<Imported, ImportError> {
    let mut records = input.records(file)?;
    let Some(first) = records.next().transpose()? else {
        return Err(ImportError::Empty {
            file: file.to_string(),
        });
    };
    let at = At::line(file, first.line);
    let kind = at.str(&first.value, "type")?;
    if kind != "session" {
        return Err(at.error(
            "type",
            format!("expected \"session\" on the first line of a pi session, found {kind:?}"),
        ));
    }
    let version = match at.count(&first.value, "version")? {
        0 => 1,
        v => v,
    };
    let mut header = crate::header(
        at.str(&first.value, "id")?.to_string(),
        crate::time_of(&first.value, "timestamp"),
        at.opt_str(&first.value, "cwd")?.map(str::to_string),
    );
    header.parent_session = at
        .opt_str(&first.value, "parentSession")?
        .map(str::to_string);

    let mut b = Builder::new(file, Format::Pi, output);
    b.report.records = 1;
    let tree = version >= 2;
    // Entry index (header = 0, as v1's firstKeptEntryIndex counts) -> where
    // the entry landed and its line.
    let mut entries: Vec<(Option<Seq>, u64)> = vec![(None, first.line)];
    let mut ids: HashMap<String, (Option<Seq>, u64)> = HashMap::new();
    let mut previous: Option<Seq> = None;
    for record in records {
        let record = record?;
        b.report.records += 1;
        let at = At::line(file, record.line);
        let value = &record.value;
        let kind = at.str(value, "type")?;
        let time = crate::time_of(value, "timestamp");
        let line = record.line;
        let parent = if tree {
            match value.get("parentId") {
                None | Some(Value::Null) => None,
                Some(Value::String(id)) => match ids.get(id.as_str()) {
                    Some((seq, _)) => *seq,
                    None => {
                        b.report.warn(ImportWarning::UnknownParent {
                            line,
                            parent_id: id.clone(),
                        });
                        b.last()
                    }
                },
                Some(other) => {
                    return Err(at.error(
                        "parentId",
                        format!(
                            "expected a string or null, found {}",
                            crate::json::kind_of(other)
                        ),
                    ));
                }
            }
        } else {
            previous
        };
        let id = if tree {
            Some(at.str(value, "id")?)
        } else {
            None
        };
        let mapped = match kind {
            "message" => {
                let message = at.obj(value, "message")?;
                import_message(&mut b, at.inside("message"), message, parent, time)?
            }
            "model_change" => Some(b.log(
                TYPE_MODEL_CHANGE,
                json!({
                    "provider": at.opt_str(value, "provider")?,
                    "model": at.opt_str(value, "modelId")?,
                }),
                parent,
                time,
                Some(line),
            )),
            "thinking_level_change" => {
                b.report.skip("thinking_level_change");
                parent
            }
            "compaction" => {
                let summary = at.str(value, "summary")?;
                let (kept_line, anchor) =
                    if let Some(kept) = at.opt_str(value, "firstKeptEntryId")? {
                        match ids.get(kept) {
                            Some((seq, kept_line)) => (*kept_line, Some(*seq)),
                            None => (0, None),
                        }
                    } else if value.get("firstKeptEntryIndex").is_some() {
                        let index = at.count(value, "firstKeptEntryIndex")?;
                        match usize::try_from(index).ok().and_then(|i| entries.get(i)) {
                            Some((seq, kept_line)) => (*kept_line, Some(*seq)),
                            None => (0, None),
                        }
                    } else {
                        (0, None)
                    };
                let entry_id = id.map_or_else(|| format!("line-{line}"), str::to_string);
                let log = b.log(
                    TYPE_IMPORTED_COMPACTION,
                    json!({
                        "format": "pi",
                        "source_id": entry_id,
                        "tokens_before": value.get("tokensBefore"),
                        "first_kept_line": (kept_line > 0).then_some(kept_line),
                        "details": value.get("details"),
                        "from_hook": value.get("fromHook"),
                    }),
                    parent,
                    time.clone(),
                    Some(line),
                );
                let message = Message::user(summary).with_meta(Meta {
                    origin: Some(Origin::Checkpoint {
                        compaction_id: entry_id,
                        method: "pi".to_string(),
                    }),
                    ..Meta::default()
                });
                Some(b.compaction(
                    message,
                    Some(log),
                    time,
                    line,
                    Keep::FromLine {
                        line: kept_line,
                        anchor,
                    },
                    &[log],
                )?)
            }
            "branch_summary" => {
                let summary = at.str(value, "summary")?;
                if value.get("details").is_some_and(|d| !d.is_null()) {
                    b.report.skip("branch_summary.details");
                }
                let message = Message::user(summary).with_meta(Meta {
                    origin: Some(Origin::BranchSummary),
                    ..Meta::default()
                });
                Some(b.message(message, parent, time, Some(line)))
            }
            "custom_message" => {
                let name = at.str(value, "customType")?;
                let content = user_content(&mut b, at, value, "content")?;
                let message = plugin_message(name, content);
                Some(b.message(message, parent, time, Some(line)))
            }
            "custom" => Some(b.log(
                "extension_state",
                json!({
                    "name": at.opt_str(value, "customType")?,
                    "data": value.get("data"),
                }),
                parent,
                time,
                Some(line),
            )),
            "label" => {
                let target = at
                    .opt_str(value, "targetId")?
                    .and_then(|t| ids.get(t))
                    .and_then(|(seq, _)| *seq);
                Some(b.log(
                    "label",
                    json!({"target": target, "label": value.get("label")}),
                    parent,
                    time,
                    Some(line),
                ))
            }
            "session_info" => Some(b.log(
                "session_info",
                json!({"name": value.get("name")}),
                parent,
                time,
                Some(line),
            )),
            "session" => {
                b.report.skip("session (repeated header)");
                parent
            }
            other => Some(b.log(
                &format!("pi/{other}"),
                value.clone(),
                parent,
                time,
                Some(line),
            )),
        };
        if let Some(id) = id
            && let Some((_, first_line)) = ids.insert(id.to_string(), (mapped, line))
        {
            b.report.warn(ImportWarning::DuplicateId {
                line,
                id: id.to_string(),
                first_line,
            });
        }
        entries.push((mapped, line));
        previous = mapped;
    }
    let (drafts, report) = b.finish(Some(previous))?;
    Ok(Imported {
        header,
        drafts,
        report,
    })
}

fn plugin_message(name: &str, content: Vec<Block>) -> Message {
    Message {
        role: Role::User,
        content,
        meta: Meta {
            origin: Some(Origin::Plugin {
                name: name.to_string(),
            }),
            ..Meta::default()
        },
    }
}

/// One `message` entry. Returns where it landed (its parent when it does
/// not become an event).
fn import_message(
    b: &mut Builder,
    at: At<'_>,
    message: &Value,
    parent: Option<Seq>,
    time: Option<String>,
) -> Result<Option<Seq>, ImportError> {
    let line = at.line;
    let role = at.str(message, "role")?;
    let imported = match role {
        "user" => Message {
            role: Role::User,
            content: user_content(b, at, message, "content")?,
            meta: Meta {
                origin: Some(Origin::User),
                ..Meta::default()
            },
        },
        "assistant" => assistant(b, at, message)?,
        "toolResult" => {
            let call_id = at.str(message, "toolCallId")?.to_string();
            let name = at
                .opt_str(message, "toolName")?
                .unwrap_or_default()
                .to_string();
            if message.get("details").is_some_and(|d| !d.is_null()) {
                b.report.skip("toolResult.details");
            }
            Message {
                role: Role::Tool,
                content: vec![Block::ToolResult {
                    call_id: call_id.clone(),
                    content: user_content(b, at, message, "content")?,
                    is_error: at.flag(message, "isError")?,
                }],
                meta: Meta {
                    origin: Some(Origin::Tool { call_id, name }),
                    ..Meta::default()
                },
            }
        }
        "bashExecution" => {
            if at.flag(message, "excludeFromContext")? {
                return Ok(Some(b.log(
                    "pi/bash_execution",
                    message.clone(),
                    parent,
                    time,
                    line,
                )));
            }
            let command = at.str(message, "command")?;
            let output = at.opt_str(message, "output")?.unwrap_or_default();
            let mut text = format!("$ {command}\n{output}");
            if let Some(code) = message
                .get("exitCode")
                .and_then(Value::as_i64)
                .filter(|c| *c != 0)
            {
                text.push_str(&format!("\n(exit code {code})"));
            }
            if at.flag(message, "cancelled")? {
                text.push_str("\n(cancelled)");
            }
            // A `!` command the user ran: its output is context for the
            // model, not a request.
            Message {
                role: Role::User,
                content: vec![Block::text(text)],
                meta: Meta {
                    origin: Some(Origin::Injected {
                        source: "bash".to_string(),
                    }),
                    ..Meta::default()
                },
            }
        }
        "custom" | "hookMessage" => {
            let name = at.opt_str(message, "customType")?.unwrap_or(role);
            plugin_message(name, user_content(b, at, message, "content")?)
        }
        "branchSummary" => Message::user(at.str(message, "summary")?).with_meta(Meta {
            origin: Some(Origin::BranchSummary),
            ..Meta::default()
        }),
        "compactionSummary" => {
            b.report.warn(ImportWarning::Note {
                line,
                what: "a compactionSummary message entry was appended as a message".to_string(),
            });
            Message::user(at.str(message, "summary")?).with_meta(Meta {
                origin: Some(Origin::Checkpoint {
                    compaction_id: String::new(),
                    method: "pi".to_string(),
                }),
                ..Meta::default()
            })
        }
        other => {
            b.report.warn(ImportWarning::Note {
                line,
                what: format!("message role {other:?} is unknown; kept as a log event"),
            });
            return Ok(Some(b.log(
                &format!("pi/message/{other}"),
                message.clone(),
                parent,
                time,
                line,
            )));
        }
    };
    Ok(Some(b.message(imported, parent, time, line)))
}

/// Text and image blocks of a user message, tool result or custom message:
/// a string or an array of blocks.
fn user_content(
    b: &mut Builder,
    at: At<'_>,
    value: &Value,
    key: &str,
) -> Result<Vec<Block>, ImportError> {
    match value.get(key) {
        Some(Value::String(text)) => Ok(vec![Block::text(text.as_str())]),
        Some(Value::Array(blocks)) => {
            let mut out = Vec::with_capacity(blocks.len());
            for (i, block) in blocks.iter().enumerate() {
                let path = at.join(&format!("{key}[{i}]"));
                let bat = at.inside(&path);
                match bat.str(block, "type")? {
                    "text" => out.push(Block::text(bat.str(block, "text")?)),
                    "image" => out.push(Block::Image {
                        source: ImageSource::Base64 {
                            media_type: bat.str(block, "mimeType")?.to_string(),
                            data: bat.str(block, "data")?.to_string(),
                        },
                        width: None,
                        height: None,
                    }),
                    other => b.report.skip(format!("content block {other}")),
                }
            }
            Ok(out)
        }
        Some(Value::Null) | None => Ok(Vec::new()),
        Some(other) => Err(at.error(
            key,
            format!(
                "expected a string or an array, found {}",
                crate::json::kind_of(other)
            ),
        )),
    }
}

fn assistant(b: &mut Builder, at: At<'_>, message: &Value) -> Result<Message, ImportError> {
    let blocks = at.arr(message, "content")?;
    let mut content = Vec::with_capacity(blocks.len());
    for (i, block) in blocks.iter().enumerate() {
        let path = at.join(&format!("content[{i}]"));
        let bat = at.inside(&path);
        match bat.str(block, "type")? {
            "text" => content.push(Block::text(bat.str(block, "text")?)),
            "thinking" => content.push(Block::Thinking {
                thinking: bat.str(block, "thinking")?.to_string(),
                signature: bat.opt_str(block, "thinkingSignature")?.map(str::to_string),
            }),
            "toolCall" => content.push(Block::ToolCall {
                id: bat.str(block, "id")?.to_string(),
                name: bat.str(block, "name")?.to_string(),
                arguments: block.get("arguments").cloned().unwrap_or(Value::Null),
            }),
            "image" => content.push(Block::Image {
                source: ImageSource::Base64 {
                    media_type: bat.str(block, "mimeType")?.to_string(),
                    data: bat.str(block, "data")?.to_string(),
                },
                width: None,
                height: None,
            }),
            other => b.report.skip(format!("assistant block {other}")),
        }
    }
    let provider = at.opt_str(message, "provider")?;
    let model = at.opt_str(message, "model")?;
    let origin = match (provider, model) {
        (Some(provider), Some(model)) => Some(Origin::Model {
            provider: provider.to_string(),
            model: model.to_string(),
        }),
        _ => None,
    };
    let usage = match at.opt_obj(message, "usage")? {
        Some(u) => {
            let path = at.join("usage");
            let uat = at.inside(&path);
            Some(Usage {
                input: uat.count(u, "input")?,
                output: uat.count(u, "output")?,
                cache_read: uat.count(u, "cacheRead")?,
                cache_write: uat.count(u, "cacheWrite")?,
            })
        }
        None => None,
    };
    let stop_reason = at.opt_str(message, "stopReason")?.map(|r| match r {
        "stop" => StopReason::EndTurn,
        "length" => StopReason::MaxTokens,
        "toolUse" => StopReason::ToolUse,
        "error" | "aborted" => StopReason::Error,
        other => StopReason::Other(other.to_string()),
    });
    if message.get("errorMessage").is_some_and(|e| !e.is_null()) {
        b.report.skip("assistant.errorMessage");
    }
    Ok(Message {
        role: Role::Assistant,
        content,
        meta: Meta {
            origin,
            usage,
            stop_reason,
            useless: false,
        },
    })
}
