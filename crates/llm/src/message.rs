//! The message vocabulary: roles, content blocks, metadata.
//!
//! These types are the wire form of every message abridge stores or sends,
//! free of any HTTP or provider type so that a crate can depend on them for
//! the cost of serde.

use std::sync::Arc;

use serde::Deserialize;
use serde::Serialize;

use crate::usage::StopReason;
use crate::usage::Usage;

/// Who speaks a message.
///
/// `Developer` exists because some providers give it a place between system
/// and user; providers without it receive it as system text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Standing instructions for the model.
    System,
    /// Instructions from the application developer (OpenAI's developer role).
    Developer,
    /// The human, or the harness speaking for them.
    User,
    /// The model.
    Assistant,
    /// The answer to exactly one tool call.
    Tool,
}

impl Role {
    /// The lower-case name used on the wire and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where the bytes of an image live.
///
/// `Blob` is what a store writes when the data is too large to keep inline;
/// stores resolve it back to `Base64` when they load, so most code never
/// sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ImageSource {
    /// Inline data, base64 without a `data:` prefix.
    Base64 {
        /// IANA media type, for example `image/png`.
        media_type: String,
        /// Base64 (standard alphabet, padded) of the image bytes.
        data: String,
    },
    /// An image the provider fetches itself.
    Url {
        /// The address, `https:` or `data:`.
        url: String,
    },
    /// A content-addressed file kept beside the session.
    Blob {
        /// IANA media type.
        media_type: String,
        /// Lower-case hex SHA-256 of the base64 text.
        sha256: String,
        /// Length of the base64 text in bytes, so cost and size are known
        /// without reading the blob.
        len: u64,
    },
}

/// One piece of a message's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Block {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// The model's visible reasoning. The signature, when present, must be
    /// sent back unchanged for providers that verify it.
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// Provider signature over the reasoning.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Reasoning the provider keeps encrypted; opaque to us.
    RedactedThinking {
        /// Opaque provider data.
        data: String,
    },
    /// A provider's own item, sent verbatim to that provider and to no
    /// other: the output of a native compaction (OpenAI's encrypted
    /// `compaction` item, Anthropic's `compaction` block), replayed in
    /// place of the checkpoint text it stands beside so the paid call is
    /// not wasted. Encoders for other providers leave it out; the request
    /// builder only puts one in a request bound for `provider`.
    Native {
        /// The client's provider name (`OpenAiResponsesClient::NAME`,
        /// `AnthropicClient::NAME`).
        provider: String,
        /// The item as the provider gave it.
        item: serde_json::Value,
    },
    /// A picture. Pixel size, when known, decides what it costs.
    Image {
        /// Where the bytes are.
        source: ImageSource,
        /// Width in pixels, if known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        width: Option<u32>,
        /// Height in pixels, if known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        height: Option<u32>,
    },
    /// A request by the model to run a tool.
    ToolCall {
        /// Identifier that the matching result repeats.
        id: String,
        /// Tool name.
        name: String,
        /// Arguments as JSON (usually an object).
        arguments: serde_json::Value,
    },
    /// What a tool answered. Lives in a `Role::Tool` message, alone.
    ToolResult {
        /// The id of the call this answers.
        call_id: String,
        /// Text and images the tool produced.
        content: Vec<Block>,
        /// The tool failed; its content says how.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

impl Block {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Block::Text { text: text.into() }
    }

    /// The text of a text block, else `None`.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Block::Text { text } => Some(text),
            _ => None,
        }
    }
}

/// Who or what produced a message, for the log's readers; never sent to a
/// provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    /// Typed by the user.
    User,
    /// Written by a model.
    Model {
        /// Provider name, for example `anthropic`.
        provider: String,
        /// Model id.
        model: String,
    },
    /// Returned by a tool.
    Tool {
        /// The call it answers.
        call_id: String,
        /// Tool name.
        name: String,
    },
    /// A compaction checkpoint standing for earlier history.
    Checkpoint {
        /// The compaction that wrote it.
        compaction_id: String,
        /// Method name (`soft`, `digest`, ...).
        method: String,
    },
    /// A summary of a branch that navigation left.
    BranchSummary,
    /// Added by an extension of the host agent.
    Plugin {
        /// The extension's name.
        name: String,
    },
    /// Brought in by an importer from another agent's file.
    Imported {
        /// The source format (`pi`, `claude-code`, ...).
        format: String,
    },
    /// Written into the conversation by the host agent's harness as a user
    /// message the user never typed: environment details, instruction
    /// files, reminders, notifications, the output of a command the user
    /// ran locally. It is still sent as a user message; readers looking
    /// for what the user asked (digests, summaries) treat it as context.
    ///
    /// A variant rather than a flag on [`Meta`]: who wrote a message is
    /// what `Origin` records, such a message has no other producer to
    /// keep, and every reader of origins already falls back on unknown
    /// kinds, so nothing else had to change.
    Injected {
        /// What put it there, in the source's terms: a tag such as
        /// `environment_context` or `system-reminder`, or a kind such as
        /// `bash` for a command the user ran.
        source: String,
    },
}

/// What we know about a message besides its content.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// Who produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    /// Tokens the provider reported for the turn that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Why the model stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    /// A tool marked this result as carrying nothing worth keeping (a search
    /// with no hits); pruning may blank it. Errors are never useless.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub useless: bool,
}

impl Meta {
    /// True when nothing is set, so serializers can skip the field.
    pub fn is_empty(&self) -> bool {
        *self == Meta::default()
    }
}

/// One message of a conversation.
///
/// # Wire form
///
/// ```json
/// {"role":"assistant",
///  "content":[{"type":"text","text":"Reading it."},
///             {"type":"tool_call","id":"c1","name":"read","arguments":{"path":"a.rs"}}],
///  "meta":{"origin":{"kind":"model","provider":"openai","model":"gpt-5"},
///          "usage":{"input":1200,"output":40}}}
/// ```
///
/// A `tool` message answers one call:
///
/// ```json
/// {"role":"tool","content":[{"type":"tool_result","call_id":"c1",
///   "content":[{"type":"text","text":"fn main() {}"}]}]}
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// What is said, in order.
    pub content: Vec<Block>,
    /// Provenance and accounting; never sent to a provider.
    #[serde(default, skip_serializing_if = "Meta::is_empty")]
    pub meta: Meta,
}

/// A message shared between the log, the surface and requests without
/// copying its content.
pub type SharedMessage = Arc<Message>;

impl Message {
    /// A message of one text block.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        Message {
            role,
            content: vec![Block::text(text)],
            meta: Meta::default(),
        }
    }

    /// A user message of one text block.
    pub fn user(text: impl Into<String>) -> Self {
        Self::text(Role::User, text)
    }

    /// An assistant message of one text block.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::text(Role::Assistant, text)
    }

    /// A system message of one text block.
    pub fn system(text: impl Into<String>) -> Self {
        Self::text(Role::System, text)
    }

    /// A tool message carrying one text result.
    pub fn tool_result(
        call_id: impl Into<String>,
        text: impl Into<String>,
        is_error: bool,
    ) -> Self {
        Message {
            role: Role::Tool,
            content: vec![Block::ToolResult {
                call_id: call_id.into(),
                content: vec![Block::text(text)],
                is_error,
            }],
            meta: Meta::default(),
        }
    }

    /// An assistant message making one tool call: the shape every agent
    /// turn that uses a tool starts with, and the other half of
    /// [`tool_result`](Self::tool_result).
    pub fn tool_call(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: serde_json::Value,
    ) -> Self {
        Message {
            role: Role::Assistant,
            content: vec![Block::ToolCall {
                id: id.into(),
                name: name.into(),
                arguments,
            }],
            meta: Meta::default(),
        }
    }

    /// Sets the metadata, for building messages in one expression.
    pub fn with_meta(mut self, meta: Meta) -> Self {
        self.meta = meta;
        self
    }

    /// The tool calls of an assistant message, in order.
    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &str, &serde_json::Value)> {
        self.content.iter().filter_map(|block| match block {
            Block::ToolCall {
                id,
                name,
                arguments,
            } => Some((id.as_str(), name.as_str(), arguments)),
            _ => None,
        })
    }

    /// The result block of a tool message: `(call_id, content, is_error)`.
    pub fn tool_result_block(&self) -> Option<(&str, &[Block], bool)> {
        self.content.iter().find_map(|block| match block {
            Block::ToolResult {
                call_id,
                content,
                is_error,
            } => Some((call_id.as_str(), content.as_slice(), *is_error)),
            _ => None,
        })
    }

    /// All text and thinking of the message joined by newlines, including
    /// text nested in tool results. For digests and previews, not requests.
    pub fn plain_text(&self) -> String {
        let mut out = String::new();
        collect_text(&self.content, &mut out);
        out
    }

    /// Bytes of text this message carries (text, thinking, arguments,
    /// nested results; images by their base64 length). An upper bound used
    /// by token estimates.
    pub fn content_bytes(&self) -> usize {
        blocks_bytes(&self.content)
    }
}

fn collect_text(blocks: &[Block], out: &mut String) {
    for block in blocks {
        let piece: Option<&str> = match block {
            Block::Text { text } => Some(text),
            Block::Thinking { thinking, .. } => Some(thinking),
            Block::ToolResult { content, .. } => {
                collect_text(content, out);
                None
            }
            _ => None,
        };
        if let Some(piece) = piece {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(piece);
        }
    }
}

fn blocks_bytes(blocks: &[Block]) -> usize {
    blocks
        .iter()
        .map(|block| match block {
            Block::Text { text } => text.len(),
            Block::Thinking {
                thinking,
                signature,
            } => thinking.len() + signature.as_ref().map_or(0, String::len),
            Block::RedactedThinking { data } => data.len(),
            Block::Native { item, .. } => item.to_string().len(),
            Block::Image { source, .. } => match source {
                ImageSource::Base64 { data, .. } => data.len(),
                ImageSource::Url { url } => url.len(),
                ImageSource::Blob { len, .. } => usize::try_from(*len).unwrap_or(usize::MAX),
            },
            Block::ToolCall {
                id,
                name,
                arguments,
            } => id.len() + name.len() + json_len(arguments),
            Block::ToolResult {
                call_id, content, ..
            } => call_id.len() + blocks_bytes(content),
        })
        .sum()
}

fn json_len(value: &serde_json::Value) -> usize {
    // Serializing into a counting sink avoids allocating the text.
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    match serde_json::to_writer(&mut counter, value) {
        Ok(()) => counter.0,
        Err(_) => 0,
    }
}
