//! One event as one JSON line, and back.
//!
//! The line form is `{"seq":N,"parent":P,"time":T,"type":K,"data":D}`.
//! Decoding reads the fields in one pass: when `type` precedes `data` (as
//! we always write it) a message's data is parsed straight into typed
//! structs; other writers' field orders still parse, through a raw buffer.

use std::fmt;
use std::sync::Arc;

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
    if let EventBody::Log(LogEvent { raw: Some(raw), .. }) = &event.body {
        return Ok(raw.to_string());
    }
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

/// Parses one line into an event. Log-only events keep the line so they
/// are written back byte for byte.
///
/// # Errors
/// A [`LineError`] naming the column and field.
pub fn decode_event(line: &str) -> Result<Event, LineError> {
    let mut de = serde_json::Deserializer::from_str(line);
    match de.deserialize_map(LineVisitor).and_then(|repr| de.end().map(|()| repr)) {
        Ok(repr) => repr.into_event(line),
        Err(error) => Err(explain(line, &error)),
    }
}

/// Re-reads a failed line with path tracking to name the field.
fn explain(line: &str, error: &serde_json::Error) -> LineError {
    let is_message = serde_json::from_str::<serde_json::Value>(line)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(|t| t == TYPE_MESSAGE))
        .unwrap_or(false);
    let mut de = serde_json::Deserializer::from_str(line);
    let tracked = if is_message {
        serde_path_to_error::deserialize::<_, Probe<MessageEvent>>(&mut de).err()
    } else {
        serde_path_to_error::deserialize::<_, Probe<IgnoredAny>>(&mut de).err()
    };
    LineError {
        column: error.column() as u64,
        field: tracked.map(|t| t.path().to_string()).unwrap_or_default(),
        reason: strip_position(&error.to_string()),
    }
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
        };
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "seq" => repr.seq = Some(map.next_value()?),
                "parent" => repr.parent = map.next_value()?,
                "time" => repr.time = Some(map.next_value()?),
                "type" => repr.kind = Some(map.next_value()?),
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
        assert!(error.reason.contains("invalid type: integer `5`"), "{error}");
        assert!(error.column > 0);
    }

    #[test]
    fn missing_seq_is_named() {
        let error = decode_event(r#"{"type":"leaf"}"#).unwrap_err();
        assert_eq!(error.to_string(), "field `seq`: missing field");
    }
}
