//! Reading records and typed fields out of other agents' JSON, with errors
//! that name the file, line and field.

use serde_json::Value;

use crate::ImportError;

/// One parsed JSONL line.
#[derive(Debug)]
pub(crate) struct Record {
    /// 1-based line number.
    pub(crate) line: u64,
    /// Byte offset of the line in the source.
    pub(crate) offset: u64,
    /// Length of the line in bytes, without its line end.
    pub(crate) len: usize,
    /// The parsed value.
    pub(crate) value: Value,
}

/// Parses one whole document (SWE-agent trajectories).
pub(crate) fn parse_document(file: &str, bytes: &[u8]) -> Result<Value, ImportError> {
    parse_record(file, 1, bytes, true)
}

/// Parses one record that starts at `line`; `last` when nothing follows it
/// (a parse that runs out of input is then a truncated file).
pub(crate) fn parse_record(
    file: &str,
    line: u64,
    raw: &[u8],
    last: bool,
) -> Result<Value, ImportError> {
    if let Err(e) = std::str::from_utf8(raw) {
        // A document spans lines: report the line of the bad byte.
        let before = &raw[..e.valid_up_to()];
        let extra = before.iter().filter(|b| **b == b'\n').count() as u64;
        let column = before.iter().rev().take_while(|b| **b != b'\n').count() as u64 + 1;
        return Err(ImportError::Utf8 {
            file: file.to_string(),
            line: line + extra,
            column,
        });
    }
    serde_json::from_slice::<Value>(raw).map_err(|e| {
        if last && e.classify() == serde_json::error::Category::Eof {
            ImportError::Truncated {
                file: file.to_string(),
                line: line + e.line() as u64 - 1,
                len: raw.len() as u64,
            }
        } else {
            ImportError::Json {
                file: file.to_string(),
                line: line + e.line() as u64 - 1,
                column: e.column() as u64,
                reason: e.to_string(),
            }
        }
    })
}

/// How a value is named in error messages.
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Where a value sits, for error messages: the file, the line (if any) and
/// the dotted path of the value inside the record.
#[derive(Debug, Clone, Copy)]
pub(crate) struct At<'a> {
    pub(crate) file: &'a str,
    pub(crate) line: Option<u64>,
    pub(crate) path: &'a str,
}

impl<'a> At<'a> {
    /// The record at `line` of `file`, at its root.
    pub(crate) fn line(file: &'a str, line: u64) -> Self {
        At {
            file,
            line: Some(line),
            path: "",
        }
    }

    /// The same place, inside `path`.
    pub(crate) fn inside(self, path: &'a str) -> Self {
        At { path, ..self }
    }

    /// The dotted path of `key` inside the value here.
    pub(crate) fn join(&self, key: &str) -> String {
        if self.path.is_empty() {
            key.to_string()
        } else if key.starts_with('[') {
            format!("{}{key}", self.path)
        } else {
            format!("{}.{key}", self.path)
        }
    }

    /// An error about `key` of the value here.
    pub(crate) fn error(&self, key: &str, reason: impl Into<String>) -> ImportError {
        ImportError::Field {
            file: self.file.to_string(),
            line: self.line,
            field: self.join(key),
            reason: reason.into(),
        }
    }

    fn wrong(&self, key: &str, expected: &str, found: &Value) -> ImportError {
        self.error(
            key,
            format!("expected {expected}, found {}", kind_of(found)),
        )
    }

    /// A required string.
    pub(crate) fn str<'v>(&self, value: &'v Value, key: &str) -> Result<&'v str, ImportError> {
        match value.get(key) {
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(self.wrong(key, "a string", other)),
            None => Err(self.error(key, "missing")),
        }
    }

    /// A string that may be missing or null.
    pub(crate) fn opt_str<'v>(
        &self,
        value: &'v Value,
        key: &str,
    ) -> Result<Option<&'v str>, ImportError> {
        match value.get(key) {
            Some(Value::String(s)) => Ok(Some(s)),
            Some(Value::Null) | None => Ok(None),
            Some(other) => Err(self.wrong(key, "a string", other)),
        }
    }

    /// A required array.
    pub(crate) fn arr<'v>(&self, value: &'v Value, key: &str) -> Result<&'v [Value], ImportError> {
        match value.get(key) {
            Some(Value::Array(a)) => Ok(a),
            Some(other) => Err(self.wrong(key, "an array", other)),
            None => Err(self.error(key, "missing")),
        }
    }

    /// An array that may be missing or null (then empty).
    pub(crate) fn opt_arr<'v>(
        &self,
        value: &'v Value,
        key: &str,
    ) -> Result<&'v [Value], ImportError> {
        match value.get(key) {
            Some(Value::Array(a)) => Ok(a),
            Some(Value::Null) | None => Ok(&[]),
            Some(other) => Err(self.wrong(key, "an array", other)),
        }
    }

    /// A required object.
    pub(crate) fn obj<'v>(&self, value: &'v Value, key: &str) -> Result<&'v Value, ImportError> {
        match value.get(key) {
            Some(v @ Value::Object(_)) => Ok(v),
            Some(other) => Err(self.wrong(key, "an object", other)),
            None => Err(self.error(key, "missing")),
        }
    }

    /// An object that may be missing or null.
    pub(crate) fn opt_obj<'v>(
        &self,
        value: &'v Value,
        key: &str,
    ) -> Result<Option<&'v Value>, ImportError> {
        match value.get(key) {
            Some(v @ Value::Object(_)) => Ok(Some(v)),
            Some(Value::Null) | None => Ok(None),
            Some(other) => Err(self.wrong(key, "an object", other)),
        }
    }

    /// A token count: a non-negative integer, missing or null as 0.
    pub(crate) fn count(&self, value: &Value, key: &str) -> Result<u64, ImportError> {
        match value.get(key) {
            Some(Value::Number(n)) => n
                .as_u64()
                .or_else(|| n.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
                .ok_or_else(|| self.error(key, format!("expected a count, found {n}"))),
            Some(Value::Null) | None => Ok(0),
            Some(other) => Err(self.wrong(key, "a number", other)),
        }
    }

    /// A boolean that may be missing or null (then false).
    pub(crate) fn flag(&self, value: &Value, key: &str) -> Result<bool, ImportError> {
        match value.get(key) {
            Some(Value::Bool(b)) => Ok(*b),
            Some(Value::Null) | None => Ok(false),
            Some(other) => Err(self.wrong(key, "a boolean", other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_type_names_the_field_path() {
        let value: Value = serde_json::json!({"message": {"role": 5}});
        let at = At::line("f.jsonl", 3).inside("message");
        let err = at.str(&value["message"], "role").unwrap_err();
        assert_eq!(
            err.to_string(),
            "f.jsonl:3: field `message.role`: expected a string, found a number"
        );
    }
}
