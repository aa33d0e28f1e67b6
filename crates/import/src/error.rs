//! Why an import failed.

use std::collections::BTreeMap;

use abridge_session::SessionError;

/// A failure to import another agent's session file.
///
/// Every variant names the file; those about content name the line (1-based;
/// for single-document formats such as SWE-agent trajectories, the line of
/// the document where parsing failed, or none when the problem is a field)
/// and, where one is at fault, the field as a dotted path
/// (`message.content[2].text`). An import that fails writes nothing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The file could not be read.
    #[error("{file}: cannot read: {source}")]
    Io {
        /// The file.
        file: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Nothing in the file says which agent wrote it; pass a format.
    #[error(
        "{file}: cannot tell which agent wrote this file; pass --format (pi, claude-code, codex, swe-agent, aider, openhands)"
    )]
    UnknownFormat {
        /// The file.
        file: String,
    },
    /// The format asked for is not the one the file is written in: its
    /// content reads as another agent's.
    #[error(
        "{file}: not a{} {asked} file: its content reads as {found}; pass --format {found}, or leave --format out",
        if asked.starts_with(['a', 'o']) { "n" } else { "" }
    )]
    FormatMismatch {
        /// The file.
        file: String,
        /// The format asked for, by its [`Format::name`](crate::Format::name).
        asked: &'static str,
        /// The format its content shows, by its name.
        found: &'static str,
    },
    /// A `--format` value that names no format.
    #[error(
        "unknown import format {name:?}; expected pi, claude-code, codex, swe-agent, aider or openhands"
    )]
    FormatName {
        /// What was given.
        name: String,
    },
    /// The file holds no record at all.
    #[error("{file}: the file is empty")]
    Empty {
        /// The file.
        file: String,
    },
    /// The file was read without error but holds nothing the model would
    /// see: no record of it became a message. An empty session would only
    /// hide the mistake (a wrong file, a wrong `--format`, a file of
    /// metadata), so this is an error that lists what was found instead.
    #[error("{file}: nothing to import: {}", why_empty(*records, skipped))]
    NoMessages {
        /// The file.
        file: String,
        /// Records read (lines, or 1 for a single document).
        records: u64,
        /// What those records were, by kind, as the report counts them.
        skipped: BTreeMap<String, u64>,
    },
    /// A session number past the sessions the file holds.
    #[error(
        "{file}: there is no session {asked}: the file holds {count} {}; pass --session 1 to {count}",
        if *count == 1 { "session" } else { "sessions" }
    )]
    NoSuchSession {
        /// The file.
        file: String,
        /// The number asked for, from 1.
        asked: usize,
        /// Sessions in the file.
        count: usize,
    },
    /// A line is not UTF-8.
    #[error("{file}:{line}:{column}: invalid UTF-8")]
    Utf8 {
        /// The file.
        file: String,
        /// 1-based line.
        line: u64,
        /// 1-based byte column of the first bad byte.
        column: u64,
    },
    /// A line is longer than
    /// [`ReadOptions::max_record_bytes`](crate::ReadOptions::max_record_bytes).
    #[error("{file}:{line}: record is {len} bytes, over the limit of {limit} bytes")]
    TooLong {
        /// The file.
        file: String,
        /// 1-based line.
        line: u64,
        /// Its length in bytes.
        len: u64,
        /// The limit.
        limit: u64,
    },
    /// A line is not valid JSON.
    #[error("{file}:{line}:{column}: invalid JSON: {reason}")]
    Json {
        /// The file.
        file: String,
        /// 1-based line.
        line: u64,
        /// 1-based column.
        column: u64,
        /// serde_json's description.
        reason: String,
    },
    /// The last line stops mid-record: the writer was interrupted.
    #[error(
        "{file}:{line}: the last line is cut short ({len} bytes, no closing brace); the file was truncated while being written"
    )]
    Truncated {
        /// The file.
        file: String,
        /// 1-based line.
        line: u64,
        /// Bytes on that line.
        len: u64,
    },
    /// A field is missing or has the wrong type.
    #[error("{file}{}: {}{reason}", line.map(|l| format!(":{l}")).unwrap_or_default(), field_prefix(field))]
    Field {
        /// The file.
        file: String,
        /// 1-based line, when the format is line-based.
        line: Option<u64>,
        /// Dotted path of the field.
        field: String,
        /// What is wrong, naming the value found.
        reason: String,
    },
    /// An image claims more pixels than
    /// [`ReadOptions::max_image_pixels`](crate::ReadOptions::max_image_pixels)
    /// (by its header, else its stated size). Nothing is imported.
    #[error(
        "{file}{}: field `{field}`: the image claims {width}x{height} pixels, over the limit of {limit} pixels",
        line.map(|l| format!(":{l}")).unwrap_or_default()
    )]
    ImageTooLarge {
        /// The file.
        file: String,
        /// 1-based line of the record the image came from, when known.
        line: Option<u64>,
        /// Where the image is in the imported message
        /// (`message.content[1]`, `message.content[0].content[2]`).
        field: String,
        /// Width it claims.
        width: u32,
        /// Height it claims.
        height: u32,
        /// The limit.
        limit: u64,
    },
    /// A parent chain came back to an entry already visited. The importer
    /// builds parents that only point backwards, so this means a bug; it is
    /// an error rather than an endless loop.
    #[error("{file}: the parent chain from seq {seq} loops")]
    Cycle {
        /// The file.
        file: String,
        /// Where the walk started.
        seq: u64,
    },
    /// The imported events were refused by the session (an importer bug,
    /// or a target session that is not empty).
    #[error("{file}: imported events rejected: {source}")]
    Session {
        /// The file.
        file: String,
        /// What the session said.
        #[source]
        source: SessionError,
    },
}

/// `field `x`: ` before a reason, or nothing when the fault is the
/// record itself (the empty path), so no message reads "field ``".
fn field_prefix(field: &str) -> String {
    if field.is_empty() {
        String::new()
    } else {
        format!("field `{field}`: ")
    }
}

/// The reason of [`ImportError::NoMessages`]: how many records were read and
/// the most frequent kinds among them.
fn why_empty(records: u64, skipped: &BTreeMap<String, u64>) -> String {
    let noun = if records == 1 { "record" } else { "records" };
    let mut why = format!("none of its {records} {noun} is a message");
    if !skipped.is_empty() {
        let mut kinds: Vec<(&String, &u64)> = skipped.iter().collect();
        kinds.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let shown: Vec<String> = kinds
            .iter()
            .take(5)
            .map(|(kind, n)| format!("{kind} {n}"))
            .collect();
        why.push_str(&format!(" (skipped: {}", shown.join(", ")));
        if kinds.len() > 5 {
            why.push_str(&format!(", and {} more kinds", kinds.len() - 5));
        }
        why.push(')');
    }
    why
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by `cargo xtask fuzz` (import-openhands): a record that is
    /// not an object read "field ``: expected ...".
    #[test]
    fn a_fault_of_the_whole_record_names_no_empty_field() {
        let error = ImportError::Field {
            file: "run.jsonl".to_string(),
            line: Some(3),
            field: String::new(),
            reason: "expected an object, found a string".to_string(),
        };
        assert_eq!(
            error.to_string(),
            "run.jsonl:3: expected an object, found a string"
        );
        let error = ImportError::Field {
            file: "run.jsonl".to_string(),
            line: None,
            field: "history[2].args".to_string(),
            reason: "missing".to_string(),
        };
        assert_eq!(
            error.to_string(),
            "run.jsonl: field `history[2].args`: missing"
        );
    }
}
