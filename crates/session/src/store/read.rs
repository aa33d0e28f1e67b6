//! Reading a JSONL session file line by line: bounded lines, the header,
//! batches still open at the end of the file, and the renumbering a
//! salvaged log needs. The store's `load` drives these.

use std::io::BufRead;
use std::io::Read;

use crate::event::Event;
use crate::event::EventBody;
use crate::event::FORMAT_VERSION;
use crate::event::Header;
use crate::event::LogEvent;

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
