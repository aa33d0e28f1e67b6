//! The sessions in OpenHands JSON values: an array of events, a record
//! with a `history`, or bare events, each event with the line and path it
//! was read from.

use serde_json::Value;

use crate::ImportError;
use crate::json::At;
use crate::json::kind_of;

/// One event and where it sits: its line (JSONL) and its path.
pub(super) struct Located<'v> {
    pub(super) line: Option<u64>,
    pub(super) path: String,
    pub(super) event: &'v Value,
}

/// One session in the file.
pub(super) struct Source<'v> {
    /// The record holding the events in `history`, if any.
    pub(super) record: Option<&'v Value>,
    pub(super) events: Vec<Located<'v>>,
}

/// The sessions of the file: an array of events is one, each record with
/// a `history` is one, and lines that are bare events together are one.
pub(super) fn sources<'v>(
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
