//! Claude Code transcripts: one JSON object per line, linked by
//! `uuid`/`parentUuid`.
//!
//! Claude Code writes each content block of an assistant reply on its own
//! line (same `message.id`), and with parallel tool calls a result may be
//! written before the reply's last block, as a sibling in the uuid tree.
//! The importer merges the blocks of one `message.id` into one assistant
//! message placed where its first block was, and chains the results after
//! it, which is the history the model was sent.
//!
//! | Claude Code line | abridge event |
//! |---|---|
//! | `user`, string or text/image blocks | user message |
//! | `user` with `tool_result` blocks | one tool message per result (then a user message for any other blocks) |
//! | `assistant` lines of one `message.id` | one assistant message (text, thinking, redacted thinking, tool calls) |
//! | `system` `compact_boundary` | `compaction/imported` log event (parent: `logicalParentUuid`) |
//! | `user` with `isCompactSummary` | checkpoint `replace` of the whole surface |
//! | `progress`, `file-history-snapshot`, `queue-operation`, other `system` lines, sidechain lines | counted in the report |

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
use crate::builder::Builder;
use crate::builder::Keep;
use crate::json::At;
use crate::json::Record;
use crate::json::kind_of;
use crate::json::parse_lines;

pub(crate) fn import(file: &str, bytes: &[u8]) -> Result<Imported, ImportError> {
    let records = parse_lines(file, bytes)?;
    let mut b = Builder::new(file, Format::ClaudeCode);
    b.report.records = records.len() as u64;

    // Pass 1: the lines of each assistant message, by `message.id`.
    let mut parts: HashMap<&str, Vec<usize>> = HashMap::new();
    for (index, record) in records.iter().enumerate() {
        if record.value.get("type").and_then(Value::as_str) == Some("assistant")
            && record.value.get("isSidechain") != Some(&Value::Bool(true))
            && let Some(id) = record
                .value
                .get("message")
                .and_then(|m| m.get("id"))
                .and_then(Value::as_str)
        {
            parts.entry(id).or_default().push(index);
        }
    }

    let mut session_id = None;
    let mut created = None;
    let mut cwd = None;
    let mut ids: HashMap<String, (Option<Seq>, u64)> = HashMap::new();
    let mut emitted: HashMap<String, Seq> = HashMap::new();
    let mut leaf: Option<Option<Seq>> = None;
    for record in &records {
        let at = At::line(file, record.line);
        let value = &record.value;
        let line = record.line;
        let kind = at.str(value, "type")?;
        if session_id.is_none() {
            session_id = at.opt_str(value, "sessionId")?.map(str::to_string);
        }
        if created.is_none() {
            created = crate::time_of(value, "timestamp");
        }
        if cwd.is_none() {
            cwd = at.opt_str(value, "cwd")?.map(str::to_string);
        }
        let time = crate::time_of(value, "timestamp");
        let uuid = at.opt_str(value, "uuid")?;
        let subtype = at.opt_str(value, "subtype")?;
        let parent_key =
            if subtype == Some("compact_boundary") && value.get("logicalParentUuid").is_some() {
                "logicalParentUuid"
            } else {
                "parentUuid"
            };
        let parent = match at.opt_str(value, parent_key)? {
            None => None,
            Some(p) => match ids.get(p) {
                Some((seq, _)) => *seq,
                None => {
                    b.report.warn(ImportWarning::UnknownParent {
                        line,
                        parent_id: p.to_string(),
                    });
                    b.last()
                }
            },
        };
        let mapped = if at.flag(value, "isSidechain")? {
            b.report.skip(format!("sidechain {kind}"));
            parent
        } else {
            match kind {
                "user" => user(&mut b, at, value, parent, time, line)?,
                "assistant" => {
                    let message = at.obj(value, "message")?;
                    let id = at.inside("message").opt_str(message, "id")?;
                    match id.and_then(|id| emitted.get(id)) {
                        Some(seq) => Some(*seq),
                        None => {
                            let lines: Vec<&Record> = match id.and_then(|id| parts.get(id)) {
                                Some(indexes) => {
                                    indexes.iter().filter_map(|i| records.get(*i)).collect()
                                }
                                None => vec![record],
                            };
                            let merged = assistant(&mut b, file, &lines)?;
                            let seq = b.message(merged, parent, time, Some(line));
                            if let Some(id) = id {
                                emitted.insert(id.to_string(), seq);
                            }
                            Some(seq)
                        }
                    }
                }
                "system" if subtype == Some("compact_boundary") => {
                    let metadata = value.get("compactMetadata");
                    Some(b.log(
                        TYPE_IMPORTED_COMPACTION,
                        json!({
                            "format": "claude-code",
                            "source_id": uuid,
                            "trigger": metadata.and_then(|m| m.get("trigger")),
                            "tokens_before": metadata.and_then(|m| m.get("preTokens")),
                        }),
                        parent,
                        time,
                        Some(line),
                    ))
                }
                "system" => {
                    b.report.skip(format!("system/{}", subtype.unwrap_or("?")));
                    parent
                }
                "progress" => {
                    let data_kind = value
                        .get("data")
                        .and_then(|d| d.get("type"))
                        .and_then(Value::as_str)
                        .unwrap_or("?");
                    b.report.skip(format!("progress/{data_kind}"));
                    parent
                }
                other => {
                    b.report.skip(other.to_string());
                    parent
                }
            }
        };
        if let Some(uuid) = uuid {
            if let Some((_, first_line)) = ids.insert(uuid.to_string(), (mapped, line)) {
                b.report.warn(ImportWarning::DuplicateId {
                    line,
                    id: uuid.to_string(),
                    first_line,
                });
            }
            leaf = Some(mapped);
        }
    }
    let header = crate::header(
        session_id.unwrap_or_else(|| crate::id_from_file(file)),
        created,
        cwd,
    );
    let (drafts, report) = b.finish(leaf)?;
    Ok(Imported {
        header,
        drafts,
        report,
    })
}

/// A `user` line: tool results, then the rest as one user message, or a
/// compaction summary.
fn user(
    b: &mut Builder,
    at: At<'_>,
    value: &Value,
    parent: Option<Seq>,
    time: Option<String>,
    line: u64,
) -> Result<Option<Seq>, ImportError> {
    let message = at.obj(value, "message")?;
    let mat = at.inside("message");
    let mut results = Vec::new();
    let mut rest = Vec::new();
    match message.get("content") {
        Some(Value::String(text)) => rest.push(Block::text(text.as_str())),
        Some(Value::Array(blocks)) => {
            for (i, block) in blocks.iter().enumerate() {
                let path = format!("message.content[{i}]");
                let bat = at.inside(&path);
                match bat.str(block, "type")? {
                    "tool_result" => {
                        let call_id = bat.str(block, "tool_use_id")?.to_string();
                        let content = result_content(b, bat, block)?;
                        results.push(Message {
                            role: Role::Tool,
                            content: vec![Block::ToolResult {
                                call_id,
                                content,
                                is_error: bat.flag(block, "is_error")?,
                            }],
                            meta: Meta::default(),
                        });
                    }
                    _ => {
                        if let Some(converted) = content_block(b, bat, block)? {
                            rest.push(converted);
                        }
                    }
                }
            }
        }
        Some(other) => {
            return Err(mat.error(
                "content",
                format!("expected a string or an array, found {}", kind_of(other)),
            ));
        }
        None => return Err(mat.error("content", "missing")),
    }
    if value.get("toolUseResult").is_some() {
        b.report.skip("user.toolUseResult");
    }
    let mut last = parent;
    for result in results {
        last = Some(b.message(result, last, time.clone(), Some(line)));
    }
    if rest.is_empty() {
        return Ok(last);
    }
    let origin = if at.flag(value, "isMeta")? {
        b.imported()
    } else {
        Origin::User
    };
    let user = Message {
        role: Role::User,
        content: rest,
        meta: Meta {
            origin: Some(origin),
            ..Meta::default()
        },
    };
    if at.flag(value, "isCompactSummary")? {
        let mut user = user;
        let source_id = at.opt_str(value, "uuid")?.unwrap_or_default().to_string();
        user.meta.origin = Some(Origin::Checkpoint {
            compaction_id: source_id,
            method: "claude-code".to_string(),
        });
        // The boundary log event, when the summary hangs off it, is the
        // compaction's bookkeeping.
        let bookkeeping: Vec<Seq> = last.filter(|p| b.is_log(*p)).into_iter().collect();
        return Ok(Some(b.compaction(
            user,
            last,
            time,
            line,
            Keep::Nothing,
            &bookkeeping,
        )?));
    }
    Ok(Some(b.message(user, last, time, Some(line))))
}

/// Text, image and document blocks outside tool results.
fn content_block(b: &mut Builder, at: At<'_>, block: &Value) -> Result<Option<Block>, ImportError> {
    Ok(match at.str(block, "type")? {
        "text" => Some(Block::text(at.str(block, "text")?)),
        "image" => Some(image(at, block)?),
        other => {
            b.report.skip(format!("content block {other}"));
            None
        }
    })
}

fn image(at: At<'_>, block: &Value) -> Result<Block, ImportError> {
    let source = at.obj(block, "source")?;
    let path = at.join("source");
    let sat = at.inside(&path);
    let source = match sat.str(source, "type")? {
        "base64" => ImageSource::Base64 {
            media_type: sat.str(source, "media_type")?.to_string(),
            data: sat.str(source, "data")?.to_string(),
        },
        "url" => ImageSource::Url {
            url: sat.str(source, "url")?.to_string(),
        },
        other => {
            return Err(sat.error("type", format!("unknown image source type {other:?}")));
        }
    };
    Ok(Block::Image {
        source,
        width: None,
        height: None,
    })
}

/// A tool result's content: a string, an array of text/image blocks, or
/// nothing.
fn result_content(b: &mut Builder, at: At<'_>, block: &Value) -> Result<Vec<Block>, ImportError> {
    match block.get("content") {
        Some(Value::String(text)) => Ok(vec![Block::text(text.as_str())]),
        Some(Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let path = at.join(&format!("content[{i}]"));
                if let Some(converted) = content_block(b, at.inside(&path), item)? {
                    out.push(converted);
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

/// Merges the lines of one assistant reply.
fn assistant(b: &mut Builder, file: &str, lines: &[&Record]) -> Result<Message, ImportError> {
    let mut content = Vec::new();
    let mut model = None;
    let mut usage = None;
    let mut stop_reason = None;
    let mut seen = std::collections::HashSet::new();
    for record in lines {
        let at = At::line(file, record.line);
        // The same line copied twice (a resumed session) adds nothing.
        if let Some(uuid) = at.opt_str(&record.value, "uuid")?
            && !seen.insert(uuid)
        {
            continue;
        }
        let message = at.obj(&record.value, "message")?;
        let mat = at.inside("message");
        if model.is_none() {
            model = mat.opt_str(message, "model")?;
        }
        if let Some(u) = mat.opt_obj(message, "usage")? {
            let uat = at.inside("message.usage");
            usage = Some(Usage {
                input: uat.count(u, "input_tokens")?,
                output: uat.count(u, "output_tokens")?,
                cache_read: uat.count(u, "cache_read_input_tokens")?,
                cache_write: uat.count(u, "cache_creation_input_tokens")?,
            });
        }
        if let Some(reason) = mat.opt_str(message, "stop_reason")? {
            stop_reason = Some(match reason {
                "end_turn" => StopReason::EndTurn,
                "max_tokens" => StopReason::MaxTokens,
                "tool_use" => StopReason::ToolUse,
                "stop_sequence" => StopReason::StopSequence,
                "refusal" => StopReason::Refusal,
                other => StopReason::Other(other.to_string()),
            });
        }
        let blocks = match message.get("content") {
            Some(Value::Array(blocks)) => blocks.as_slice(),
            Some(Value::String(text)) => {
                content.push(Block::text(text.as_str()));
                &[]
            }
            Some(other) => {
                return Err(mat.error(
                    "content",
                    format!("expected an array, found {}", kind_of(other)),
                ));
            }
            None => &[],
        };
        for (i, block) in blocks.iter().enumerate() {
            let path = format!("message.content[{i}]");
            let bat = at.inside(&path);
            match bat.str(block, "type")? {
                "text" => content.push(Block::text(bat.str(block, "text")?)),
                "thinking" => content.push(Block::Thinking {
                    thinking: bat.str(block, "thinking")?.to_string(),
                    signature: bat.opt_str(block, "signature")?.map(str::to_string),
                }),
                "redacted_thinking" => content.push(Block::RedactedThinking {
                    data: bat.str(block, "data")?.to_string(),
                }),
                "tool_use" => content.push(Block::ToolCall {
                    id: bat.str(block, "id")?.to_string(),
                    name: bat.str(block, "name")?.to_string(),
                    arguments: block.get("input").cloned().unwrap_or(Value::Null),
                }),
                other => b.report.skip(format!("assistant block {other}")),
            }
        }
    }
    let origin = match model {
        Some(model) if model != "<synthetic>" => Origin::Model {
            provider: "anthropic".to_string(),
            model: model.to_string(),
        },
        _ => b.imported(),
    };
    Ok(Message {
        role: Role::Assistant,
        content,
        meta: Meta {
            origin: Some(origin),
            usage,
            stop_reason,
            useless: false,
        },
    })
}
