//! A server-sent events parser that accepts bytes in arbitrary pieces.
//!
//! Network reads cut lines (and UTF-8 characters) anywhere, so the parser
//! buffers bytes until a line ends and decodes only whole lines. Lines end
//! in `\n` or `\r\n`; an event ends at a blank line. An event still open
//! when the bytes stop is dropped, as the SSE format says, which is what
//! lets a driver notice a stream cut before its terminal event.

/// One dispatched event, borrowed from the parser until the next one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct SseEvent<'a> {
    /// The `event:` field, if any.
    pub(crate) event: Option<&'a str>,
    /// The `data:` lines joined by `\n`.
    pub(crate) data: &'a str,
}

/// Incremental parser state. Its buffers are reused from event to event,
/// so a long stream allocates nothing per event once they have grown.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    /// The start of a line the last chunk cut off.
    buffer: Vec<u8>,
    event: String,
    has_event: bool,
    /// The event's data so far, when it did not fit in one chunk or came
    /// in several lines.
    data: String,
    has_data: bool,
}

/// A field line's meaning for the event being read.
enum Field<'a> {
    /// A blank line: the event ends.
    End,
    /// A `data:` line's value.
    Data(&'a str),
    /// Anything else (its effect already applied), or a comment.
    Other,
}

impl SseParser {
    /// Reads `chunk` up to the end of the first event that completes in
    /// it, hands that event to `on_event`, and returns how many bytes it
    /// read; a chunk where no event completes is read whole. A driver
    /// calls it again on the rest when it wants the next event, so events
    /// are decoded as the caller takes them, not all at once.
    ///
    /// Lines wholly inside `chunk` are read where they lie, and an event
    /// of one `data:` line (what providers send) is handed over as a
    /// slice of `chunk`, copied nowhere; only a line the chunk cuts off,
    /// and the data of an event still open at its end, are kept.
    ///
    /// # Errors
    /// A line that is not UTF-8.
    pub(crate) fn feed_one(
        &mut self,
        chunk: &[u8],
        mut on_event: impl FnMut(SseEvent<'_>),
    ) -> Result<usize, String> {
        let mut rest = chunk;
        if !self.buffer.is_empty() {
            let Some(end) = memchr_newline(rest) else {
                self.buffer.extend_from_slice(rest);
                return Ok(chunk.len());
            };
            self.buffer.extend_from_slice(&rest[..end]);
            rest = &rest[end + 1..];
            let line = std::mem::take(&mut self.buffer);
            let dispatched = self.line(&line, None, &mut on_event);
            self.buffer = line;
            self.buffer.clear();
            if dispatched? {
                return Ok(chunk.len() - rest.len());
            }
        }
        // The data of the event being read while it is one line of this
        // chunk: handed over from here when the event ends in the chunk.
        let mut single: Option<&str> = None;
        while let Some(end) = memchr_newline(rest) {
            let line = &rest[..end];
            rest = &rest[end + 1..];
            if self.line(line, Some(&mut single), &mut on_event)? {
                return Ok(chunk.len() - rest.len());
            }
        }
        if let Some(data) = single {
            self.push_data(data);
        }
        self.buffer.extend_from_slice(rest);
        Ok(chunk.len())
    }

    /// Reads one line (without its `\n`); `true` when it ended an event
    /// and the event was handed to `on_event`. With `single`, a first
    /// `data:` line is held there as a slice instead of copied; without,
    /// the line lives only for this call and anything kept is copied.
    fn line<'c>(
        &mut self,
        line: &'c [u8],
        single: Option<&mut Option<&'c str>>,
        on_event: &mut impl FnMut(SseEvent<'_>),
    ) -> Result<bool, String> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        match self.field(line)? {
            Field::Other => {}
            Field::Data(value) => match single {
                Some(slot) if slot.is_none() && !self.has_data => *slot = Some(value),
                Some(slot) => {
                    if let Some(first) = slot.take() {
                        self.push_data(first);
                    }
                    self.push_data(value);
                }
                None => self.push_data(value),
            },
            Field::End => {
                let data = single
                    .and_then(Option::take)
                    .or_else(|| self.has_data.then_some(self.data.as_str()));
                let dispatched = data.is_some();
                if let Some(data) = data {
                    on_event(SseEvent {
                        event: self.has_event.then_some(self.event.as_str()),
                        data,
                    });
                }
                self.event.clear();
                self.data.clear();
                self.has_event = false;
                self.has_data = false;
                return Ok(dispatched);
            }
        }
        Ok(false)
    }

    fn push_data(&mut self, value: &str) {
        if self.has_data {
            self.data.push('\n');
        }
        self.data.push_str(value);
        self.has_data = true;
    }

    /// What `line` is; an `event:` line is applied here. Field names are
    /// matched on bytes, the blank and `data:` lines that make up most of
    /// a stream first, and only the value is checked as UTF-8 (the name
    /// is ASCII once matched).
    ///
    /// # Errors
    /// A line that is not UTF-8.
    fn field<'l>(&mut self, line: &'l [u8]) -> Result<Field<'l>, String> {
        let text = |bytes: &'l [u8]| {
            std::str::from_utf8(bytes).map_err(|e| format!("stream line is not utf-8 ({e})"))
        };
        let value = |bytes: &'l [u8]| text(bytes.strip_prefix(b" ").unwrap_or(bytes));
        if line.is_empty() {
            return Ok(Field::End);
        }
        if let Some(data) = line.strip_prefix(b"data:") {
            return Ok(Field::Data(value(data)?));
        }
        if let Some(name) = line.strip_prefix(b"event:") {
            self.event.clear();
            self.event.push_str(value(name)?);
            self.has_event = true;
            return Ok(Field::Other);
        }
        // A comment, a field we do not use, or a field name alone (which
        // means an empty value: a bare `data` line is an empty data line).
        match text(line)? {
            "data" => Ok(Field::Data("")),
            "event" => {
                self.event.clear();
                self.has_event = true;
                Ok(Field::Other)
            }
            _ => Ok(Field::Other),
        }
    }
}

/// Where the next line ends. Every event ends in a blank line, found
/// without the vectorized search's setup.
fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    if bytes.first() == Some(&b'\n') {
        return Some(0);
    }
    memchr::memchr(b'\n', bytes)
}

/// `bytes` in pieces, cut at each of `cuts` (taken modulo one past its
/// length, so any number is a cut point): how the network might deliver
/// it, for tests that must read the same whatever the cuts.
#[cfg(test)]
pub(crate) fn cut<'b>(bytes: &'b [u8], cuts: &[usize]) -> Vec<&'b [u8]> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    points.sort_unstable();
    let mut pieces = Vec::with_capacity(points.len() + 1);
    let mut last = 0;
    for point in points.into_iter().chain([bytes.len()]) {
        pieces.push(&bytes[last..point]);
        last = point;
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use proptest::prelude::*;

    /// An event as owned strings, to compare.
    #[derive(Debug, Clone, PartialEq, Eq)]
    struct Owned {
        event: Option<String>,
        data: String,
    }

    fn parse_all(chunks: &[&[u8]]) -> Vec<Owned> {
        let mut parser = SseParser::default();
        let mut out = Vec::new();
        for chunk in chunks {
            // Event by event, as the driver reads: each call hands over at
            // most one event, and reads the chunk whole when it hands none.
            let mut rest: &[u8] = chunk;
            while !rest.is_empty() {
                let before = out.len();
                let read = parser
                    .feed_one(rest, |e| {
                        out.push(Owned {
                            event: e.event.map(str::to_string),
                            data: e.data.to_string(),
                        })
                    })
                    .unwrap();
                assert!(read > 0 && read <= rest.len());
                assert!(out.len() <= before + 1, "more than one event in one call");
                assert!(out.len() == before + 1 || read == rest.len());
                rest = &rest[read..];
            }
        }
        out
    }

    #[test]
    fn events_names_comments_and_multiline_data() {
        let text =
            b": keep-alive\nevent: ping\ndata: {}\n\ndata: a\ndata: b\r\n\r\ndata:[DONE]\n\n";
        assert_eq!(
            parse_all(&[text]),
            vec![
                Owned {
                    event: Some("ping".into()),
                    data: "{}".into()
                },
                Owned {
                    event: None,
                    data: "a\nb".into()
                },
                Owned {
                    event: None,
                    data: "[DONE]".into()
                },
            ]
        );
    }

    #[test]
    fn data_over_several_lines_and_chunks_is_joined() {
        let owned = |event: Option<&str>, data: &str| Owned {
            event: event.map(str::to_string),
            data: data.to_string(),
        };
        let expected = vec![
            owned(None, "one\ntwo\nthree"),
            owned(Some("b"), ""),
            owned(None, "z"),
        ];
        let text: &[u8] = b"data: one\ndata: two\ndata: three\n\nevent: b\ndata\n\ndata: z\n\n";
        assert_eq!(parse_all(&[text]), expected);
        // Cut inside the first line, between lines, and inside the blank
        // line's `\n\n`.
        assert_eq!(
            parse_all(&[&text[..4], &text[4..20], &text[20..35], &text[35..]]),
            expected
        );
    }

    #[test]
    fn an_unterminated_event_is_not_dispatched() {
        assert_eq!(parse_all(&[b"data: {\"partial\":true}\n"]), Vec::new());
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        let mut parser = SseParser::default();
        assert!(parser.feed_one(b"data: \xff\xfe\n\n", |_| {}).is_err());
    }

    proptest! {
        /// However the bytes are cut, the same events come out.
        #[test]
        fn splitting_does_not_change_events(cuts in proptest::collection::vec(0usize..160, 0..8)) {
            let text = "event: a\ndata: héllo wörld\n\n: c\ndata: {\"x\":\"ünï\"}\r\n\r\ndata: one\ndata: two\ndata: three\n\nevent: b\ndata\n\ndata: z\n\n".as_bytes();
            let whole = parse_all(&[text]);
            prop_assert_eq!(parse_all(&cut(text, &cuts)), whole);
        }
    }
}
