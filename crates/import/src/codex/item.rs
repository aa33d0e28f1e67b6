//! One Codex `response_item` converted to abridge content: the model's
//! reply blocks, a message from anyone else (with Codex's own injected
//! context told apart), or a tool's output.

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Origin;
use abridge_llm::Role;
use serde_json::Value;

use crate::ENCRYPTED_SUMMARY;
use crate::ImportError;
use crate::builder::Builder;
use crate::injected::Markers;
use crate::json::At;
use crate::json::kind_of;

/// What Codex writes as user messages of its own: the AGENTS.md files, its
/// environment, the user's `!` shell commands with their output, notes on
/// aborted turns, skills and sub-agent notifications.
const MARKERS: Markers = Markers {
    prefixes: &[("# AGENTS.md instructions", "agents-md")],
    tags: &[
        "environment_context",
        "user_instructions",
        "user_shell_command",
        "turn_aborted",
        "skill",
        "subagent_notification",
        "INSTRUCTIONS",
    ],
};

/// One response item, converted.
pub(super) enum Item {
    /// Blocks of the model's reply.
    Reply(Vec<Block>),
    /// A message from anyone else.
    Message(Message),
    /// A tool's output.
    Output(Message),
    /// Nothing for the log; counted under this kind.
    Skip(String),
}

/// Converts one response item.
pub(super) fn convert(b: &Builder, at: At<'_>, item: &Value) -> Result<Item, ImportError> {
    let kind = at.str(item, "type")?;
    Ok(match kind {
        "message" => {
            let role = at.str(item, "role")?;
            let content = content(at, item, "content")?;
            let role = match role {
                "assistant" => return Ok(Item::Reply(content)),
                "user" => Role::User,
                "developer" => Role::Developer,
                "system" => Role::System,
                other => return Err(at.error("role", format!("unknown message role {other:?}"))),
            };
            let origin = if role != Role::User {
                b.imported()
            } else {
                match content
                    .iter()
                    .map(Block::as_text)
                    .collect::<Option<Vec<&str>>>()
                    .and_then(|texts| MARKERS.source_of(texts))
                {
                    Some(source) => Origin::Injected {
                        source: source.to_string(),
                    },
                    None => Origin::User,
                }
            };
            Item::Message(Message {
                role,
                content,
                meta: Meta {
                    origin: Some(origin),
                    ..Meta::default()
                },
            })
        }
        "reasoning" => {
            let mut parts = Vec::new();
            for key in ["content", "summary"] {
                for (i, part) in at.opt_arr(item, key)?.iter().enumerate() {
                    let path = at.join(&format!("{key}[{i}]"));
                    if let Some(text) = at.inside(&path).opt_str(part, "text")? {
                        parts.push(text);
                    }
                }
                if !parts.is_empty() {
                    break;
                }
            }
            Item::Reply(vec![Block::Thinking {
                thinking: parts.join("\n"),
                signature: at.opt_str(item, "encrypted_content")?.map(str::to_string),
            }])
        }
        "function_call" => {
            let arguments = at.str(item, "arguments")?;
            Item::Reply(vec![Block::ToolCall {
                id: at.str(item, "call_id")?.to_string(),
                name: at.str(item, "name")?.to_string(),
                arguments: serde_json::from_str(arguments)
                    .unwrap_or_else(|_| Value::String(arguments.to_string())),
            }])
        }
        "custom_tool_call" => Item::Reply(vec![Block::ToolCall {
            id: at.str(item, "call_id")?.to_string(),
            name: at.str(item, "name")?.to_string(),
            arguments: Value::String(at.opt_str(item, "input")?.unwrap_or_default().to_string()),
        }]),
        "local_shell_call" => {
            let id = match at.opt_str(item, "call_id")? {
                Some(id) => id,
                None => at.str(item, "id")?,
            };
            Item::Reply(vec![Block::ToolCall {
                id: id.to_string(),
                name: "local_shell".to_string(),
                arguments: item.get("action").cloned().unwrap_or(Value::Null),
            }])
        }
        "function_call_output" | "custom_tool_call_output" | "local_shell_call_output" => {
            let call_id = at.str(item, "call_id")?.to_string();
            let (content, is_error) = output(at, item)?;
            Item::Output(Message {
                role: Role::Tool,
                content: vec![Block::ToolResult {
                    call_id,
                    content,
                    is_error,
                }],
                meta: Meta::default(),
            })
        }
        "compaction" => Item::Message(Message {
            role: Role::User,
            content: vec![Block::text(ENCRYPTED_SUMMARY)],
            meta: Meta::default(),
        }),
        other => Item::Skip(format!("response_item/{other}")),
    })
}

/// Message content: text and image items.
fn content(at: At<'_>, item: &Value, key: &str) -> Result<Vec<Block>, ImportError> {
    let mut out = Vec::new();
    for (i, part) in at.arr(item, key)?.iter().enumerate() {
        let path = at.join(&format!("{key}[{i}]"));
        let pat = at.inside(&path);
        match pat.str(part, "type")? {
            "input_text" | "output_text" | "text" | "summary_text" | "reasoning_text" => {
                out.push(Block::text(pat.str(part, "text")?));
            }
            "refusal" => out.push(Block::text(pat.str(part, "refusal")?)),
            "input_image" => out.push(crate::image_from_url(pat.str(part, "image_url")?)),
            other => return Err(pat.error("type", format!("unknown content type {other:?}"))),
        }
    }
    Ok(out)
}

/// A tool output: a string, an array of content items, or (older Codex)
/// an object with `content` and `success`.
fn output(at: At<'_>, item: &Value) -> Result<(Vec<Block>, bool), ImportError> {
    match item.get("output") {
        Some(Value::String(text)) => Ok((vec![Block::text(text.as_str())], false)),
        Some(Value::Array(_)) => Ok((content(at, item, "output")?, false)),
        Some(value @ Value::Object(_)) => {
            let path = at.join("output");
            let oat = at.inside(&path);
            let text = oat.opt_str(value, "content")?.unwrap_or_default();
            let failed = value.get("success").and_then(Value::as_bool) == Some(false);
            Ok((vec![Block::text(text)], failed))
        }
        Some(Value::Null) | None => Ok((Vec::new(), false)),
        Some(other) => Err(at.error(
            "output",
            format!(
                "expected a string, an array or an object, found {}",
                kind_of(other)
            ),
        )),
    }
}
