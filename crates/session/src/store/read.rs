//! Reading a JSONL session file line by line: bounded lines, the header,
//! batches still open at the end of the file, and the renumbering a
//! salvaged log needs. [`read_log`] drives these and changes nothing on
//! disk; the store decides what a torn tail means for its caller.

use std::fs::File;
use std::io::BufRead;
use std::io::BufReader;
use std::io::Read;
use std::path::Path;

use super::LoadReport;
use super::SkippedLine;
use super::blob;
use super::line::decode_line;
use super::line::field_at_end;
use crate::error::StoreError;
use crate::event::Event;
use crate::event::EventBody;
use crate::event::FORMAT_VERSION;
use crate::event::Header;
use crate::event::LogEvent;
use crate::event::MessageEvent;
use crate::torn::TornTail;

/// A log as read from disk, with its torn tail (if any) told apart from
/// the complete part before it.
pub(super) struct ReadLog {
    /// The header line.
    pub(super) header: Header,
    /// The events of the complete part, in file order.
    pub(super) events: Vec<Event>,
    /// Skips, resolved blobs, and the torn tail.
    pub(super) report: LoadReport,
    /// The complete events of a batch a crash cut short, in order: not
    /// part of the log until someone chooses to keep them.
    pub(super) torn_events: Vec<Event>,
    /// Bytes of the complete part: where the torn tail starts.
    pub(super) good_len: u64,
}

/// How [`read_log`] treats what does not parse.
pub(super) struct ReadLimits {
    /// Longest line accepted, in bytes.
    pub(super) max_line_bytes: u64,
    /// Skip lines that do not parse instead of failing.
    pub(super) salvage: bool,
}

/// Reads the session file at `path` (blobs resolved from `blob_dir`)
/// without changing it. `Ok(None)` when there is no file.
///
/// A torn tail (an unterminated last line that does not parse, or a batch
/// whose lines end before its `"batch":N` said) is reported in
/// [`LoadReport::torn_tail`] and kept out of `events`.
pub(super) fn read_log(
    path: &Path,
    limits: &ReadLimits,
    blob_dir: &Path,
) -> Result<Option<ReadLog>, StoreError> {
    let io = |op: &'static str| {
        move |source| StoreError::Io {
            path: path.to_path_buf(),
            op,
            source,
        }
    };
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io("open")(e)),
    };
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut line = RawLine {
        bytes: Vec::new(),
        terminated: false,
        overlong: None,
    };
    let mut report = LoadReport::default();
    let mut events = Vec::new();
    let mut line_no: u64 = 0;
    let mut good_len: u64 = 0;
    let mut header: Option<Header> = None;
    let mut open_batch: Option<OpenBatch> = None;
    let limit = limits.max_line_bytes;
    while read_line(&mut reader, limit, &mut line).map_err(io("read"))? {
        line_no += 1;
        let line_len =
            line.overlong.unwrap_or(line.bytes.len() as u64) + u64::from(line.terminated);
        if let Some(len) = line.overlong {
            let error = StoreError::LineTooLong {
                path: path.to_path_buf(),
                line: line_no,
                len,
                limit,
            };
            if limits.salvage && line_no > 1 {
                report.skipped.push(SkippedLine {
                    line: line_no,
                    reason: error.to_string(),
                });
                good_len += line_len;
                line_of_batch(&mut open_batch);
                continue;
            }
            return Err(error);
        }
        match parse(&line.bytes, line_no) {
            Ok(Parsed::Header(h)) => header = Some(h),
            Ok(Parsed::Event(mut event, batch)) => {
                if let EventBody::Message(MessageEvent { message, .. }) = &mut event.body {
                    report.blobs_resolved += blob::resolve(message, blob_dir)?;
                }
                match batch {
                    Some(len) if len > 1 => {
                        open_batch = Some(OpenBatch {
                            line: line_no,
                            remaining: len - 1,
                            start: good_len,
                            events: events.len(),
                        });
                    }
                    _ => line_of_batch(&mut open_batch),
                }
                events.push(event);
            }
            Err((column, field, reason)) => {
                if !line.terminated && line_no > 1 {
                    // A crash mid-append leaves an unterminated last line
                    // that does not parse: the torn tail starts here, or
                    // at its batch's first line.
                    let (line, start, first_torn) = match open_batch.take() {
                        Some(open) => (open.line, open.start, open.events),
                        None => (line_no, good_len, events.len()),
                    };
                    let torn_events = events.split_off(first_torn);
                    report.torn_tail = Some(TornTail {
                        line,
                        bytes: good_len + line_len - start,
                        events: torn_events.len(),
                    });
                    return finish(path, header, events, report, torn_events, start);
                }
                let reason = if field.is_empty() {
                    reason
                } else {
                    format!("field `{field}`: {reason}")
                };
                if line_no == 1 {
                    return Err(StoreError::BadHeader {
                        path: path.to_path_buf(),
                        reason: at_column(column, &reason),
                    });
                }
                if limits.salvage {
                    report.skipped.push(SkippedLine {
                        line: line_no,
                        reason: at_column(column, &reason),
                    });
                    good_len += line_len;
                    line_of_batch(&mut open_batch);
                    continue;
                }
                return Err(StoreError::Corrupt {
                    path: path.to_path_buf(),
                    line: line_no,
                    column,
                    reason,
                });
            }
        }
        good_len += line_len;
    }
    let mut torn_events = Vec::new();
    if let Some(open) = open_batch {
        // The file ends inside a batch, at a line boundary: the batch was
        // never acknowledged, so none of it is part of the log (the
        // store's contract is all of a batch or none of it).
        torn_events = events.split_off(open.events);
        report.torn_tail = Some(TornTail {
            line: open.line,
            bytes: good_len - open.start,
            events: torn_events.len(),
        });
        good_len = open.start;
    }
    finish(path, header, events, report, torn_events, good_len)
}

/// The read log, once its header is known to be there.
fn finish(
    path: &Path,
    header: Option<Header>,
    events: Vec<Event>,
    report: LoadReport,
    torn_events: Vec<Event>,
    good_len: u64,
) -> Result<Option<ReadLog>, StoreError> {
    let Some(header) = header else {
        return Err(StoreError::BadHeader {
            path: path.to_path_buf(),
            reason: "the file is empty".to_string(),
        });
    };
    Ok(Some(ReadLog {
        header,
        events,
        report,
        torn_events,
        good_len,
    }))
}

/// Decodes line `line_no` (1: the header): the value, or the column,
/// field and reason of why it does not decode.
fn parse(bytes: &[u8], line_no: u64) -> Result<Parsed, (u64, String, String)> {
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let valid = &bytes[..e.valid_up_to()];
        // The prefix is valid UTF-8 by construction.
        let field = std::str::from_utf8(valid)
            .map(field_at_end)
            .unwrap_or_default();
        (
            e.valid_up_to() as u64 + 1,
            field,
            "invalid UTF-8".to_string(),
        )
    })?;
    if line_no == 1 {
        parse_header(text).map(Parsed::Header)
    } else {
        decode_line(text)
            .map(|(event, batch)| Parsed::Event(event, batch))
            .map_err(|e| (e.column, e.field, e.reason))
    }
}

/// One line as read: its bytes, whether a newline ended it, and its length
/// when it was over the limit (the bytes are then dropped).
pub(super) struct RawLine {
    pub(super) bytes: Vec<u8>,
    pub(super) terminated: bool,
    pub(super) overlong: Option<u64>,
}

/// Reads the next line, never holding more than `limit` bytes of it.
///
/// `read_until` finds the newline with the standard library's word-wise
/// search, which is most of what reading a log costs after parsing.
pub(super) fn read_line(
    reader: &mut impl BufRead,
    limit: u64,
    line: &mut RawLine,
) -> std::io::Result<bool> {
    line.bytes.clear();
    line.terminated = false;
    line.overlong = None;
    let read = reader
        .by_ref()
        .take(limit.saturating_add(1))
        .read_until(b'\n', &mut line.bytes)?;
    if read == 0 {
        return Ok(false);
    }
    if line.bytes.last() == Some(&b'\n') {
        line.bytes.pop();
        line.terminated = true;
        return Ok(true);
    }
    if line.bytes.len() as u64 <= limit {
        // The file ends without a newline.
        return Ok(true);
    }
    // Over the limit: count the rest of the line in bounded pieces.
    let mut total = line.bytes.len() as u64;
    line.bytes.clear();
    loop {
        let read = reader
            .by_ref()
            .take(1 << 20)
            .read_until(b'\n', &mut line.bytes)?;
        if read == 0 {
            break;
        }
        if line.bytes.last() == Some(&b'\n') {
            total += read as u64 - 1;
            line.terminated = true;
            break;
        }
        total += read as u64;
        line.bytes.clear();
    }
    line.bytes.clear();
    line.overlong = Some(total);
    Ok(true)
}

/// `column N: reason`, or just the reason when the column is unknown (0).
pub(super) fn at_column(column: u64, reason: &str) -> String {
    if column == 0 {
        reason.to_string()
    } else {
        format!("column {column}: {reason}")
    }
}

/// One line decoded: the header (line 1) or an event with its batch size.
pub(super) enum Parsed {
    Header(Header),
    Event(Event, Option<u64>),
}

/// Counts one more line of the open batch, closing it at its last.
pub(super) fn line_of_batch(open_batch: &mut Option<OpenBatch>) {
    if let Some(open) = open_batch.as_mut() {
        open.remaining = open.remaining.saturating_sub(1);
        if open.remaining == 0 {
            *open_batch = None;
        }
    }
}

/// A batch whose first line was read and whose last line was not yet.
pub(super) struct OpenBatch {
    /// The first line's number.
    pub(super) line: u64,
    /// Lines still to come.
    pub(super) remaining: u64,
    /// File offset where the batch starts.
    pub(super) start: u64,
    /// Events read before it.
    pub(super) events: usize,
}

pub(super) fn parse_header(text: &str) -> Result<Header, (u64, String, String)> {
    let strip = |reason: String| match reason.rfind(" at line ") {
        Some(i) => reason[..i].to_string(),
        None => reason,
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let header: Header = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let field = e.path().to_string();
        let field = if field == "." { String::new() } else { field };
        let inner = e.into_inner();
        (inner.column() as u64, field, strip(inner.to_string()))
    })?;
    de.end()
        .map_err(|e| (e.column() as u64, String::new(), strip(e.to_string())))?;
    if header.format > FORMAT_VERSION {
        return Err((
            0,
            "format".to_string(),
            format!(
                "format version {} is newer than this build understands ({FORMAT_VERSION}); upgrade abridge",
                header.format
            ),
        ));
    }
    Ok(header)
}

/// After salvage the kept events may have gaps; number them again from 0
/// and repoint every reference (parents, replace sources, rewrite
/// targets). A parent that was skipped becomes the nearest kept event
/// before it, so a linear log stays one branch instead of splitting into
/// roots that hide its beginning; skipped sources are dropped.
pub(super) fn renumber_salvaged(events: &mut [Event]) {
    let mut map = std::collections::BTreeMap::new();
    for (index, event) in events.iter().enumerate() {
        map.entry(event.seq).or_insert(index as u64);
    }
    let nearest = |seq: u64| map.range(..=seq).next_back().map(|(_, new)| *new);
    for (index, event) in events.iter_mut().enumerate() {
        let new_seq = index as u64;
        // A parent that does not point backwards is left for the session
        // to report, never quietly repaired.
        let parent = match event.parent {
            Some(p) if p < event.seq => nearest(p),
            other => other,
        };
        if event.seq == new_seq && event.parent == parent {
            continue;
        }
        event.seq = new_seq;
        event.parent = parent;
        match &mut event.body {
            EventBody::Log(LogEvent { raw, .. }) => {
                // The kept line names the old seq; write it from data.
                *raw = None;
            }
            EventBody::Message(m) => {
                m.sources = m
                    .sources
                    .iter()
                    .filter_map(|s| map.get(s).copied())
                    .collect();
                if let crate::event::SurfaceOp::Rewrite { target } = &mut m.op
                    && let Some(new) = map.get(target)
                {
                    *target = *new;
                }
            }
            EventBody::Leaf => {}
        }
    }
}
