//! Where an import's bytes come from, read one line at a time.
//!
//! An import never holds the whole source: the line-based formats are
//! parsed one record at a time from a buffered reader ([`Input::records`]),
//! so the memory a record's JSON tree takes is freed before the next line
//! is read. A format that needs to look at the file twice (a first pass
//! for a few facts, then the conversion) asks for the records again, which
//! re-reads the file from its start; one that needs a line it has passed
//! (Claude Code's split assistant replies) reads it back by its offset with
//! [`Input::record_at`].

use std::fs::File;
use std::io::BufRead;
use std::io::BufReader;
use std::io::Read;
use std::io::Seek;
use std::io::SeekFrom;
use std::path::Path;

use crate::ImportError;
use crate::json::Record;
use crate::json::parse_record;

/// Read buffer of a file source: large enough that reading costs few
/// system calls, small beside any file worth streaming.
const BUFFER_BYTES: usize = 256 * 1024;

/// The source of an import: bytes already in memory, or a file on disk.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Input<'a> {
    /// The whole source, held by the caller.
    Bytes(&'a [u8]),
    /// A file, read in pieces as the import goes.
    File(&'a Path),
}

impl<'a> Input<'a> {
    /// A fresh reader over the whole source, from its first byte.
    pub(crate) fn reader(&self, file: &str) -> Result<Box<dyn BufRead + 'a>, ImportError> {
        match *self {
            Input::Bytes(bytes) => Ok(Box::new(bytes)),
            Input::File(path) => {
                let handle = File::open(path).map_err(|source| io_error(file, source))?;
                Ok(Box::new(BufReader::with_capacity(BUFFER_BYTES, handle)))
            }
        }
    }

    /// The size of the source in bytes (0 when a file cannot be read; the
    /// read itself then reports why).
    pub(crate) fn len(&self) -> u64 {
        match *self {
            Input::Bytes(bytes) => bytes.len() as u64,
            Input::File(path) => std::fs::metadata(path).map_or(0, |m| m.len()),
        }
    }

    /// The whole source in memory: the bytes themselves, or the file read
    /// in full (for the formats that are not read line by line).
    pub(crate) fn bytes(&self, file: &str) -> Result<std::borrow::Cow<'a, [u8]>, ImportError> {
        match *self {
            Input::Bytes(bytes) => Ok(std::borrow::Cow::Borrowed(bytes)),
            Input::File(path) => std::fs::read(path)
                .map(std::borrow::Cow::Owned)
                .map_err(|source| io_error(file, source)),
        }
    }

    /// Calls `visit` with every line of the source as text and its 1-based
    /// number, cut as [`str::lines`] cuts (`\n` or `\r\n` ends a line; the
    /// last needs neither), one line in memory at a time. For the formats
    /// that are text, not records (aider's Markdown).
    ///
    /// # Errors
    /// The first error `visit` returns; [`ImportError::Utf8`] naming the
    /// line and column of a byte that is not UTF-8; a read error.
    pub(crate) fn each_line(
        &self,
        file: &str,
        mut visit: impl FnMut(u64, &str) -> Result<(), ImportError>,
    ) -> Result<(), ImportError> {
        let mut reader = self.reader(file)?;
        let mut buf = Vec::new();
        let mut number = 0u64;
        loop {
            buf.clear();
            let read = reader
                .read_until(b'\n', &mut buf)
                .map_err(|source| io_error(file, source))?;
            if read == 0 {
                return Ok(());
            }
            number += 1;
            let raw = match buf.strip_suffix(b"\n") {
                Some(rest) => rest.strip_suffix(b"\r").unwrap_or(rest),
                None => &buf[..],
            };
            let text = std::str::from_utf8(raw).map_err(|e| ImportError::Utf8 {
                file: file.to_string(),
                line: number,
                column: e.valid_up_to() as u64 + 1,
            })?;
            visit(number, text)?;
            // A long line's buffer is not kept for the short ones after it.
            if buf.capacity() > BUFFER_BYTES {
                buf = Vec::new();
            }
        }
    }

    /// Every non-blank line of the source, parsed one at a time as the
    /// iterator is advanced. A bad line is an error naming its line and
    /// column; a last line cut short is [`ImportError::Truncated`].
    pub(crate) fn records(&self, file: &str) -> Result<Records<'a>, ImportError> {
        Ok(Records {
            file: file.to_string(),
            reader: self.reader(file)?,
            line: 0,
            offset: 0,
            buf: Vec::new(),
            failed: false,
        })
    }

    /// The record of `len` bytes at byte `offset`, which [`Input::records`]
    /// returned before as line `line`.
    pub(crate) fn record_at(
        &self,
        file: &str,
        line: u64,
        offset: u64,
        len: usize,
    ) -> Result<Record, ImportError> {
        let raw = match *self {
            Input::Bytes(bytes) => usize::try_from(offset)
                .ok()
                .and_then(|start| bytes.get(start..start.checked_add(len)?))
                .map(<[u8]>::to_vec),
            Input::File(path) => {
                let mut handle = File::open(path).map_err(|source| io_error(file, source))?;
                handle
                    .seek(SeekFrom::Start(offset))
                    .map_err(|source| io_error(file, source))?;
                let mut raw = vec![0; len];
                handle
                    .read_exact(&mut raw)
                    .map_err(|source| io_error(file, source))?;
                Some(raw)
            }
        };
        let raw = raw.ok_or_else(|| {
            io_error(
                file,
                std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    format!("line {line} is no longer where it was read"),
                ),
            )
        })?;
        Ok(Record {
            line,
            offset,
            len,
            value: parse_record(file, line, &raw, false)?,
        })
    }
}

/// The records of an [`Input`], parsed lazily. After an error it ends.
pub(crate) struct Records<'a> {
    file: String,
    reader: Box<dyn BufRead + 'a>,
    /// Lines read so far.
    line: u64,
    /// Byte offset of the next line.
    offset: u64,
    /// The current line's bytes, reused between lines.
    buf: Vec<u8>,
    failed: bool,
}

impl Iterator for Records<'_> {
    type Item = Result<Record, ImportError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.failed {
            self.buf.clear();
            let read = match self.reader.read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(n) => n,
                Err(source) => {
                    self.failed = true;
                    return Some(Err(io_error(&self.file, source)));
                }
            };
            self.line += 1;
            let offset = self.offset;
            self.offset += read as u64;
            let terminated = self.buf.last() == Some(&b'\n');
            let mut raw = &self.buf[..];
            if terminated {
                raw = &raw[..raw.len() - 1];
            }
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            if raw.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let len = raw.len();
            let parsed = parse_record(&self.file, self.line, raw, !terminated);
            // A long line's buffer is not kept for the short ones after it.
            if self.buf.capacity() > BUFFER_BYTES {
                self.buf = Vec::new();
            }
            return Some(match parsed {
                Ok(value) => Ok(Record {
                    line: self.line,
                    offset,
                    len,
                    value,
                }),
                Err(e) => {
                    self.failed = true;
                    Err(e)
                }
            });
        }
        None
    }
}

/// The first `limit` bytes of the source (fewer when it is shorter), for
/// format detection.
pub(crate) fn head(file: &str, input: &Input<'_>, limit: usize) -> Result<Vec<u8>, ImportError> {
    let mut head = Vec::with_capacity(limit.min(BUFFER_BYTES));
    input
        .reader(file)?
        .take(limit as u64)
        .read_to_end(&mut head)
        .map_err(|source| io_error(file, source))?;
    Ok(head)
}

/// What a scan of the whole source found: whether it holds anything but
/// whitespace.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Scan {
    /// True when every byte is ASCII whitespace.
    pub(crate) blank: bool,
}

/// Scans the source once, refusing it when one of its lines is longer than
/// `limit` bytes (naming the first such line and its whole length) or when
/// it is not UTF-8 (naming the line and column of the first bad byte).
/// Nothing is kept but counters, so a hostile line costs a read and no
/// allocation; a one-line document counts as a line.
pub(crate) fn scan(file: &str, input: &Input<'_>, limit: u64) -> Result<Scan, ImportError> {
    scan_reader(file, input.reader(file)?, limit)
}

fn scan_reader(file: &str, mut reader: impl BufRead, limit: u64) -> Result<Scan, ImportError> {
    let mut line = 1u64;
    let mut len = 0u64;
    let mut blank = true;
    // The start of a character cut by the end of the previous chunk.
    let mut carry: Vec<u8> = Vec::new();
    loop {
        let chunk = match reader.fill_buf() {
            Ok([]) => break,
            Ok(chunk) => chunk,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(source) => return Err(io_error(file, source)),
        };
        blank = blank && chunk.iter().all(u8::is_ascii_whitespace);
        carry = check_utf8(file, &carry, chunk, line, len)?;
        let mut rest = chunk;
        while let Some(i) = rest.iter().position(|b| *b == b'\n') {
            too_long(file, line, len + i as u64, limit)?;
            line += 1;
            len = 0;
            rest = &rest[i + 1..];
        }
        len += rest.len() as u64;
        let used = chunk.len();
        reader.consume(used);
    }
    too_long(file, line, len, limit)?;
    if !carry.is_empty() {
        return Err(ImportError::Utf8 {
            file: file.to_string(),
            line,
            column: len + 1 - carry.len() as u64,
        });
    }
    Ok(Scan { blank })
}

/// Checks that `carry` (the cut start of a character) and then `chunk`
/// are UTF-8; `line` and `len` (bytes of that line before `chunk`) place
/// an error. Returns the bytes of a character `chunk` ends inside.
fn check_utf8(
    file: &str,
    carry: &[u8],
    chunk: &[u8],
    line: u64,
    len: u64,
) -> Result<Vec<u8>, ImportError> {
    // Complete the character cut by the previous chunk, if any.
    let mut rest = chunk;
    if !carry.is_empty() {
        let take = chunk.len().min(4 - carry.len().min(4));
        let mut joined = carry.to_vec();
        joined.extend_from_slice(&chunk[..take]);
        let used = match std::str::from_utf8(&joined) {
            Ok(_) => joined.len(),
            Err(e) if e.valid_up_to() > 0 => e.valid_up_to(),
            Err(e) if e.error_len().is_none() => return Ok(joined),
            Err(_) => 0,
        };
        if used < carry.len() {
            return Err(ImportError::Utf8 {
                file: file.to_string(),
                line,
                column: len + 1 - carry.len() as u64,
            });
        }
        rest = &chunk[used - carry.len()..];
    }
    match std::str::from_utf8(rest) {
        Ok(_) => Ok(Vec::new()),
        Err(e) if e.error_len().is_none() => Ok(rest[e.valid_up_to()..].to_vec()),
        Err(e) => {
            let offset = chunk.len() - rest.len() + e.valid_up_to();
            let before = &chunk[..offset];
            let newlines = before.iter().filter(|b| **b == b'\n').count() as u64;
            let column = match before.iter().rposition(|b| *b == b'\n') {
                Some(i) => (offset - i) as u64,
                None => len + offset as u64 + 1,
            };
            Err(ImportError::Utf8 {
                file: file.to_string(),
                line: line + newlines,
                column,
            })
        }
    }
}

fn too_long(file: &str, line: u64, len: u64, limit: u64) -> Result<(), ImportError> {
    if len > limit {
        return Err(ImportError::TooLong {
            file: file.to_string(),
            line,
            len,
            limit,
        });
    }
    Ok(())
}

fn io_error(file: &str, source: std::io::Error) -> ImportError {
    ImportError::Io {
        file: file.to_string(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every record of `bytes`, as [`Input::records`] reads them.
    fn parse_lines(file: &str, bytes: &[u8]) -> Result<Vec<Record>, ImportError> {
        Input::Bytes(bytes).records(file)?.collect()
    }

    /// Scans `bytes` in pieces of `size` bytes, as a file is read.
    fn scan_in_pieces(bytes: &[u8], size: usize) -> Result<Scan, ImportError> {
        scan_reader("f", BufReader::with_capacity(size, bytes), 1 << 20)
    }

    #[test]
    fn a_character_cut_between_reads_is_whole_utf8() {
        let text = "{\"a\":\"h\u{e9}llo \u{20ac} \u{1f600}\"}\n".as_bytes();
        for size in 1..8 {
            assert!(
                !scan_in_pieces(text, size).unwrap().blank,
                "pieces of {size}"
            );
        }
    }

    #[test]
    fn a_bad_byte_is_placed_at_its_line_and_column_whatever_the_reads() {
        let bytes = b"{}\n{\"a\":\"\xe2\x82x\"}\n";
        for size in 1..8 {
            match scan_in_pieces(bytes, size) {
                Err(ImportError::Utf8 { line, column, .. }) => {
                    assert_eq!((line, column), (2, 7), "pieces of {size}");
                }
                other => panic!("pieces of {size}: {other:?}"),
            }
        }
        // A character cut by the end of the file.
        assert!(matches!(
            scan_in_pieces(b"{}\n\xf0\x9f", 1),
            Err(ImportError::Utf8 {
                line: 2,
                column: 1,
                ..
            })
        ));
    }

    #[test]
    fn records_carry_where_they_are_and_read_back_by_offset() {
        let bytes = b"{\"n\":1}\r\n\n  \n{\"n\":2}";
        let input = Input::Bytes(bytes);
        let records: Vec<Record> = input.records("f").unwrap().map(Result::unwrap).collect();
        assert_eq!(records.len(), 2);
        assert_eq!((records[1].line, records[1].offset), (4, 13));
        let back = input
            .record_at("f", records[1].line, records[1].offset, records[1].len)
            .unwrap();
        assert_eq!(back.value, records[1].value);
        let first = input
            .record_at("f", 1, records[0].offset, records[0].len)
            .unwrap();
        assert_eq!(first.value["n"], 1);
    }

    #[test]
    fn truncated_last_line_is_named() {
        let err = parse_lines("f.jsonl", b"{\"a\":1}\n{\"b\":").unwrap_err();
        assert_eq!(
            err.to_string(),
            "f.jsonl:2: the last line is cut short (5 bytes, no closing brace); the file was truncated while being written"
        );
    }

    #[test]
    fn bad_line_in_the_middle_names_line_and_column() {
        let err = parse_lines("f.jsonl", b"{\"a\":1}\n{\"b\":}\n{}\n").unwrap_err();
        assert!(
            err.to_string().starts_with("f.jsonl:2:6: invalid JSON"),
            "{err}"
        );
    }

    #[test]
    fn an_overlong_line_is_refused_before_parsing() {
        let bytes = b"{}\n{\"a\":\"0123456789\"}\n";
        let input = Input::Bytes(bytes);
        scan("f.jsonl", &input, 18).unwrap();
        let err = scan("f.jsonl", &input, 17).unwrap_err();
        assert_eq!(
            err.to_string(),
            "f.jsonl:2: record is 18 bytes, over the limit of 17 bytes"
        );
    }

    #[test]
    fn invalid_utf8_names_line_and_column() {
        let err = parse_lines("f.jsonl", b"{}\n{\"a\":\"\xff\"}\n").unwrap_err();
        assert_eq!(err.to_string(), "f.jsonl:2:7: invalid UTF-8");
    }
}
