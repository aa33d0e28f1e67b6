//! Events: the lines of a session log.

use std::sync::Arc;

use abridge_llm::Message;
use abridge_llm::SharedMessage;
use serde::Deserialize;
use serde::Serialize;

/// An event's index in its log: contiguous from 0, never reused.
pub type Seq = u64;

/// The format version this crate writes into headers.
pub const FORMAT_VERSION: u32 = 1;

/// Event type of a message event.
pub const TYPE_MESSAGE: &str = "message";
/// Event type of a navigation marker.
pub const TYPE_LEAF: &str = "leaf";

/// The first line of a session file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Always `"header"` on the wire; checked on open.
    #[serde(rename = "type")]
    pub kind: HeaderTag,
    /// Format version; files newer than [`FORMAT_VERSION`] are refused.
    pub format: u32,
    /// Stable identifier of the session.
    pub session_id: String,
    /// Creation time, RFC 3339 UTC.
    pub created: String,
    /// Working directory of the agent, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The session this one was forked or continued from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
}

/// The literal `"header"` tag, so a header line cannot be mistaken for an
/// event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeaderTag {
    /// The only value.
    Header,
}

impl Header {
    /// A header for a new session with the given id, created now.
    pub fn new(session_id: impl Into<String>) -> Self {
        Header {
            kind: HeaderTag::Header,
            format: FORMAT_VERSION,
            session_id: session_id.into(),
            created: crate::time::now_rfc3339(),
            cwd: None,
            parent_session: None,
        }
    }
}

/// How a message event changes what the model sees.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SurfaceOp {
    /// Push the message onto the surface.
    #[default]
    Append,
    /// Swap surface positions `start..=end` for this one message (a
    /// checkpoint).
    Replace {
        /// First surface position hidden, inclusive.
        start: usize,
        /// Last surface position hidden, inclusive.
        end: usize,
    },
    /// Replace the content of one visible tool result, keeping its place
    /// and call id (pruning, shake).
    Rewrite {
        /// The visible seq whose content this replaces.
        target: Seq,
    },
}

impl SurfaceOp {
    fn is_append(&self) -> bool {
        matches!(self, SurfaceOp::Append)
    }
}

/// A message and the surface operation that places it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageEvent {
    /// The message; shared so the surface and requests clone it cheaply.
    pub message: SharedMessage,
    /// How it changes the surface.
    #[serde(default, skip_serializing_if = "SurfaceOp::is_append")]
    pub op: SurfaceOp,
    /// For `replace`: every seq it hides plus the bookkeeping events that
    /// produced it. For `rewrite`: `[target]`. Empty for `append`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<Seq>,
}

/// An event that never reaches the model: compaction bookkeeping, model
/// changes, labels, extension state, and types this crate does not know.
#[derive(Debug, Clone, PartialEq)]
pub struct LogEvent {
    /// The event type, for example `compaction/start`.
    pub kind: String,
    /// The event's data.
    pub data: serde_json::Value,
    /// The line exactly as read from disk, written back unchanged so that
    /// types we do not understand survive byte for byte.
    pub raw: Option<Arc<str>>,
}

/// What an event says.
#[derive(Debug, Clone, PartialEq)]
pub enum EventBody {
    /// A message for the model.
    Message(MessageEvent),
    /// A navigation marker: its parent is the navigation's target, so the
    /// active path after a restart is the one the user chose.
    Leaf,
    /// Anything log-only.
    Log(LogEvent),
}

impl EventBody {
    /// The event type as written on the line.
    pub fn kind(&self) -> &str {
        match self {
            EventBody::Message(_) => TYPE_MESSAGE,
            EventBody::Leaf => TYPE_LEAF,
            EventBody::Log(log) => &log.kind,
        }
    }

    /// Bytes of message text and data this body carries (none for a
    /// log-only event or a leaf): roughly what its encoded line takes,
    /// which is what a bulk writer counts to bound a batch (see
    /// [`batch_is_full`](crate::batch_is_full)).
    pub fn content_bytes(&self) -> usize {
        match self {
            EventBody::Message(m) => m.message.content_bytes(),
            EventBody::Leaf | EventBody::Log(_) => 0,
        }
    }
}

/// One line of the log after the header.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Index in the log.
    pub seq: Seq,
    /// The event before this one on its branch; `None` for a root.
    pub parent: Option<Seq>,
    /// When it was written, RFC 3339 UTC.
    pub time: String,
    /// What it says.
    pub body: EventBody,
}

impl Event {
    /// The message, for message events.
    pub fn message(&self) -> Option<&SharedMessage> {
        match &self.body {
            EventBody::Message(m) => Some(&m.message),
            _ => None,
        }
    }

    /// The message event, for message events.
    pub fn message_event(&self) -> Option<&MessageEvent> {
        match &self.body {
            EventBody::Message(m) => Some(m),
            _ => None,
        }
    }

    /// The log event, for log-only events.
    pub fn log(&self) -> Option<&LogEvent> {
        match &self.body {
            EventBody::Log(log) => Some(log),
            _ => None,
        }
    }
}

/// An event not yet written: the session assigns `seq`, and `parent`
/// defaults to the current leaf.
#[derive(Debug, Clone, PartialEq)]
pub struct Draft {
    /// `None`: the current leaf (the usual case). `Some(p)`: an explicit
    /// parent, `Some(None)` for a new root.
    pub parent: Option<Option<Seq>>,
    /// Time to record; `None`: now.
    pub time: Option<String>,
    /// What it says.
    pub body: EventBody,
}

impl Draft {
    /// Appends a message to the surface.
    pub fn message(message: Message) -> Self {
        Self::message_op(message, SurfaceOp::Append, Vec::new())
    }

    /// A checkpoint replacing surface positions `start..=end`.
    pub fn replace(message: Message, start: usize, end: usize, sources: Vec<Seq>) -> Self {
        Self::message_op(message, SurfaceOp::Replace { start, end }, sources)
    }

    /// New content for the visible tool result `target`.
    pub fn rewrite(message: Message, target: Seq) -> Self {
        Self::message_op(message, SurfaceOp::Rewrite { target }, vec![target])
    }

    /// A log-only event.
    pub fn log(kind: impl Into<String>, data: serde_json::Value) -> Self {
        Self::body(EventBody::Log(LogEvent {
            kind: kind.into(),
            data,
            raw: None,
        }))
    }

    fn message_op(message: Message, op: SurfaceOp, sources: Vec<Seq>) -> Self {
        Self::body(EventBody::Message(MessageEvent {
            message: Arc::new(message),
            op,
            sources,
        }))
    }

    /// A draft with the given body, parent defaulted.
    pub fn body(body: EventBody) -> Self {
        Draft {
            parent: None,
            time: None,
            body,
        }
    }

    /// Sets an explicit parent.
    pub fn with_parent(mut self, parent: Option<Seq>) -> Self {
        self.parent = Some(parent);
        self
    }

    /// Sets the recorded time (importers keep the source's times).
    pub fn with_time(mut self, time: impl Into<String>) -> Self {
        self.time = Some(time.into());
        self
    }
}
