//! One event as one JSON line, and back.
//!
//! The line form is `{"seq":N,"parent":P,"time":T,"type":K,"data":D}`;
//! the first line of a batch of several events starts `{"batch":N,` so a
//! load can tell a complete batch from one a crash cut short.
//! Decoding reads the fields in one pass: when `type` precedes `data` (as
//! we always write it) a message's data is parsed straight into typed
//! structs; other writers' field orders still parse, through a raw buffer.

use std::fmt;
use std::sync::Arc;

use serde::Deserialize;
use serde::Deserializer;
use serde::de::IgnoredAny;
use serde::de::MapAccess;
use serde::de::Visitor;
use serde_json::value::RawValue;

use crate::event::Event;
use crate::event::EventBody;
use crate::event::LogEvent;
use crate::event::MessageEvent;
use crate::event::Seq;
use crate::event::TYPE_LEAF;
use crate::event::TYPE_MESSAGE;

/// Why a line does not decode: where in the line, and which field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// 1-based byte column where parsing failed (0 when unknown).
    pub column: u64,
    /// The field path, for example `data.message.content[2].text`.
    pub field: String,
    /// What is wrong.
    pub reason: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() || self.field == "." {
            write!(f, "{}", self.reason)
        } else {
            write!(f, "field `{}`: {}", self.field, self.reason)
        }
    }
}

/// Writes `event` as one line (without the newline). Events read from
/// disk with a kept raw line are written back unchanged.
///
/// # Errors
/// Only if a message holds a value serde_json cannot write (a non-finite
/// float in tool arguments).
pub fn encode_event(event: &Event) -> Result<String, serde_json::Error> {
    if let EventBody::Log(LogEvent {
        raw: Some(raw),
        kind,
        ..
    }) = &event.body
    {
        // A kept line is only the truth while its envelope still matches:
        // an event copied to another place in a log gets a fresh line.
        if raw_matches(raw, event, kind) {
            return Ok(raw.to_string());
        }
    }
    encode_fresh(event)
}

/// The key marking the first line of a batch of several events with the
/// batch's length, so a load can tell a batch cut short by a crash at a
/// line boundary from a complete one.
pub(crate) const BATCH_KEY: &str = "batch";

/// Encodes one line of a batch: the first line of a batch of `len > 1`
/// events carries [`BATCH_KEY`] (and is always encoded fresh, never from a
/// kept raw line); every other line is [`encode_event`]'s.
pub(crate) fn encode_in_batch(
    event: &Event,
    index: usize,
    len: usize,
) -> Result<String, serde_json::Error> {
    if index != 0 || len < 2 {
        return encode_event(event);
    }
    let fresh = encode_fresh(event)?;
    // `encode_fresh` always starts with `{"seq":`.
    Ok(format!("{{\"{BATCH_KEY}\":{len},{}", &fresh[1..]))
}

/// Writes the line from the event's fields, ignoring any kept raw line.
fn encode_fresh(event: &Event) -> Result<String, serde_json::Error> {
    let mut out = String::with_capacity(128);
    out.push_str("{\"seq\":");
    out.push_str(&event.seq.to_string());
    out.push_str(",\"parent\":");
    match event.parent {
        Some(parent) => out.push_str(&parent.to_string()),
        None => out.push_str("null"),
    }
    out.push_str(",\"time\":");
    out.push_str(&serde_json::to_string(&event.time)?);
    out.push_str(",\"type\":");
    out.push_str(&serde_json::to_string(event.body.kind())?);
    match &event.body {
        EventBody::Message(message) => {
            out.push_str(",\"data\":");
            out.push_str(&serde_json::to_string(message)?);
        }
        EventBody::Leaf => {}
        EventBody::Log(log) => {
            out.push_str(",\"data\":");
            out.push_str(&serde_json::to_string(&log.data)?);
        }
    }
    out.push('}');
    Ok(out)
}

/// True when the kept `raw` line says the same seq, parent, time and type
/// as `event`.
fn raw_matches(raw: &str, event: &Event, kind: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Envelope<'a> {
        seq: Option<Seq>,
        #[serde(default)]
        parent: Option<Seq>,
        #[serde(default, borrow)]
        time: Option<std::borrow::Cow<'a, str>>,
        #[serde(rename = "type", borrow)]
        kind: Option<std::borrow::Cow<'a, str>>,
        #[serde(rename = "batch")]
        batch: Option<IgnoredAny>,
    }
    match serde_json::from_str::<Envelope<'_>>(raw) {
        Ok(envelope) => {
            envelope.seq == Some(event.seq)
                && envelope.parent == event.parent
                && envelope.time.as_deref().unwrap_or("") == event.time
                && envelope.kind.as_deref() == Some(kind)
                // A batch marker describes the batch the line was first
                // written in, not the one it is copied into.
                && envelope.batch.is_none()
        }
        Err(_) => false,
    }
}

/// Parses one line into an event. Log-only events keep the line so they
/// are written back byte for byte.
///
/// # Errors
/// A [`LineError`] naming the column and field.
pub fn decode_event(line: &str) -> Result<Event, LineError> {
    decode_line(line).map(|(event, _)| event)
}

/// Parses one line into an event and the length of the batch it starts,
/// when it carries [`BATCH_KEY`].
pub(crate) fn decode_line(line: &str) -> Result<(Event, Option<u64>), LineError> {
    let mut de = serde_json::Deserializer::from_str(line);
    match de
        .deserialize_map(LineVisitor)
        .and_then(|repr| de.end().map(|()| repr))
    {
        Ok(repr) => {
            let batch = repr.batch;
            repr.into_event(line).map(|event| (event, batch))
        }
        Err(error) => Err(explain(line, &error)),
    }
}

/// Re-reads a failed line with path tracking to name the field.
fn explain(line: &str, error: &serde_json::Error) -> LineError {
    let value = serde_json::from_str::<serde_json::Value>(line).ok();
    let is_message = value
        .as_ref()
        .and_then(|v| {
            v.get("type")
                .and_then(|t| t.as_str())
                .map(|t| t == TYPE_MESSAGE)
        })
        .unwrap_or(false);
    let mut de = serde_json::Deserializer::from_str(line);
    let tracked = if is_message {
        serde_path_to_error::deserialize::<_, Probe<MessageEvent>>(&mut de).err()
    } else {
        serde_path_to_error::deserialize::<_, Probe<IgnoredAny>>(&mut de).err()
    };
    let field = match (tracked, value) {
        (Some(tracked), Some(value)) => refine_block_path(&value, tracked.path()),
        (Some(tracked), None) => tracked.path().to_string(),
        (None, _) => String::new(),
    };
    LineError {
        column: error.column() as u64,
        field,
        reason: strip_position(&error.to_string()),
    }
}

/// Content blocks are internally tagged, so serde buffers them and the
/// tracked path stops at the block (`content[0]`). Narrow it to the field:
/// drop one key at a time and see which one changes the error, descending
/// into a tool result's nested content.
fn refine_block_path(line: &serde_json::Value, path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut current = Some(line);
    for segment in path {
        current = match segment {
            Segment::Seq { index } => current.and_then(|v| v.get(*index)),
            Segment::Map { key } => current.and_then(|v| v.get(key.as_str())),
            Segment::Enum { .. } | Segment::Unknown => None,
        };
    }
    let mut field = path.to_string();
    match current {
        Some(block) if block.get("type").is_some() => refine_block(block, &mut field),
        _ => {}
    }
    field
}

fn refine_block(block: &serde_json::Value, field: &mut String) {
    let parse = |v: &serde_json::Value| {
        abridge_llm::Block::deserialize(v)
            .err()
            .map(|e| e.to_string())
    };
    let Some(original) = parse(block) else {
        return;
    };
    let Some(object) = block.as_object() else {
        return;
    };
    if let Some(serde_json::Value::Array(items)) = object.get("content")
        && let Some((index, item)) = items.iter().enumerate().find(|(_, i)| parse(i).is_some())
    {
        field.push_str(&format!(".content[{index}]"));
        refine_block(item, field);
        return;
    }
    for key in object.keys().filter(|k| k.as_str() != "type") {
        let mut without = object.clone();
        without.remove(key);
        if parse(&serde_json::Value::Object(without)).as_ref() != Some(&original) {
            field.push('.');
            field.push_str(key);
            return;
        }
    }
}

/// The field path being read where `prefix` ends (a line cut where its
/// UTF-8 breaks), for example `data.message.content[0].text`, found by
/// following brackets, keys and commas. Empty at the top level.
pub(crate) fn field_at_end(prefix: &str) -> String {
    enum Frame {
        Object(Option<String>),
        Array(usize),
    }
    let bytes = prefix.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut expect_key = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                if i >= bytes.len() {
                    break;
                }
                if expect_key {
                    if let Some(Frame::Object(key)) = stack.last_mut() {
                        *key = prefix.get(start..i).map(str::to_string);
                    }
                    expect_key = false;
                }
            }
            b'{' => {
                stack.push(Frame::Object(None));
                expect_key = true;
            }
            b'[' => stack.push(Frame::Array(0)),
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Frame::Object(_)) => expect_key = true,
                Some(Frame::Array(n)) => *n += 1,
                None => {}
            },
            _ => {}
        }
        i += 1;
    }
    let mut path = String::new();
    for frame in &stack {
        match frame {
            Frame::Object(Some(key)) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Frame::Object(None) => {}
            Frame::Array(n) => path.push_str(&format!("[{n}]")),
        }
    }
    path
}

/// serde_json appends " at line L column C"; we report the position our
/// own way.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(index) => message[..index].to_string(),
        None => message.to_string(),
    }
}

/// The typed shape of a line, used only to find the failing field path.
#[derive(serde::Deserialize)]
#[allow(dead_code)]
struct Probe<D> {
    seq: Seq,
    #[serde(default)]
    parent: Option<Seq>,
    #[serde(default)]
    time: String,
    #[serde(rename = "type")]
    kind: String,
    data: Option<D>,
}

enum Data {
    None,
    Message(MessageEvent),
    Raw(Box<RawValue>),
    Ignored,
}

struct LineRepr {
    seq: Option<Seq>,
    parent: Option<Seq>,
    time: Option<String>,
    kind: Option<String>,
    data: Data,
    batch: Option<u64>,
}

impl LineRepr {
    fn into_event(self, line: &str) -> Result<Event, LineError> {
        let missing = |field: &str| LineError {
            column: 0,
            field: field.to_string(),
            reason: "missing field".to_string(),
        };
        let seq = self.seq.ok_or_else(|| missing("seq"))?;
        let kind = self.kind.ok_or_else(|| missing("type"))?;
        let body = match kind.as_str() {
            TYPE_MESSAGE => match self.data {
                Data::Message(message) => EventBody::Message(message),
                Data::Raw(raw) => EventBody::Message(
                    serde_json::from_str(raw.get()).map_err(|e| explain_data(line, &e))?,
                ),
                Data::None | Data::Ignored => return Err(missing("data")),
            },
            TYPE_LEAF => EventBody::Leaf,
            _ => {
                let data = match self.data {
                    Data::Raw(raw) => serde_json::from_str(raw.get()).unwrap_or_default(),
                    _ => serde_json::Value::Null,
                };
                EventBody::Log(LogEvent {
                    kind,
                    data,
                    raw: Some(Arc::from(line)),
                })
            }
        };
        Ok(Event {
            seq,
            parent: self.parent,
            time: self.time.unwrap_or_default(),
            body,
        })
    }
}

fn explain_data(line: &str, error: &serde_json::Error) -> LineError {
    let mut explained = explain(line, error);
    if explained.field.is_empty() {
        explained.field = "data".to_string();
    }
    explained
}

struct LineVisitor;

impl<'de> Visitor<'de> for LineVisitor {
    type Value = LineRepr;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an event object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LineRepr, A::Error> {
        let mut repr = LineRepr {
            seq: None,
            parent: None,
            time: None,
            kind: None,
            data: Data::None,
            batch: None,
        };
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "seq" => repr.seq = Some(map.next_value()?),
                "parent" => repr.parent = map.next_value()?,
                "time" => repr.time = Some(map.next_value()?),
                "type" => repr.kind = Some(map.next_value()?),
                BATCH_KEY => repr.batch = map.next_value::<serde_json::Value>()?.as_u64(),
                "data" => {
                    repr.data = match repr.kind.as_deref() {
                        Some(TYPE_MESSAGE) => Data::Message(map.next_value()?),
                        Some(TYPE_LEAF) => {
                            map.next_value::<IgnoredAny>()?;
                            Data::Ignored
                        }
                        _ => Data::Raw(map.next_value()?),
                    }
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(repr)
    }
}

#[cfg(test)]
mod tests {
    use abridge_llm::Message;

    use super::*;
    use crate::event::SurfaceOp;

    fn message_event() -> Event {
        Event {
            seq: 3,
            parent: Some(2),
            time: "2026-11-30T00:00:00.000Z".into(),
            body: EventBody::Message(MessageEvent {
                message: Arc::new(Message::user("hi")),
                op: SurfaceOp::Replace { start: 0, end: 1 },
                sources: vec![0, 1],
            }),
        }
    }

    #[test]
    fn message_round_trips() {
        let event = message_event();
        let line = encode_event(&event).unwrap();
        assert_eq!(
            line,
            r#"{"seq":3,"parent":2,"time":"2026-11-30T00:00:00.000Z","type":"message","data":{"message":{"role":"user","content":[{"type":"text","text":"hi"}]},"op":{"kind":"replace","start":0,"end":1},"sources":[0,1]}}"#
        );
        assert_eq!(decode_event(&line).unwrap(), event);
    }

    #[test]
    fn data_before_type_still_parses() {
        let line = r#"{"data":{"message":{"role":"user","content":[]}},"seq":0,"parent":null,"time":"t","type":"message"}"#;
        let event = decode_event(line).unwrap();
        assert!(event.message().is_some());
    }

    #[test]
    fn unknown_type_is_kept_byte_for_byte() {
        let line = r#"{"seq":1, "parent":0,"time":"t","type":"x/future","data":{"b":1,  "a":[2]}}"#;
        let event = decode_event(line).unwrap();
        assert_eq!(encode_event(&event).unwrap(), line);
    }

    #[test]
    fn wrong_field_type_names_the_field() {
        let line = r#"{"seq":0,"parent":null,"time":"t","type":"message","data":{"message":{"role":"user","content":[{"type":"text","text":5}]}}}"#;
        let error = decode_event(line).unwrap_err();
        assert_eq!(error.field, "data.message.content[0].text");
        assert!(
            error.reason.contains("invalid type: integer `5`"),
            "{error}"
        );
        assert!(error.column > 0);
    }

    #[test]
    fn missing_seq_is_named() {
        let error = decode_event(r#"{"type":"leaf"}"#).unwrap_err();
        assert_eq!(error.to_string(), "field `seq`: missing field");
    }
}
