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
    /// Feeds the next bytes, handing each complete event to `on_event`.
    ///
    /// Lines wholly inside `chunk` are read where they lie, and an event
    /// of one `data:` line (what providers send) is handed over as a
    /// slice of `chunk`, copied nowhere; only a line the chunk cuts off,
    /// and the data of an event still open at its end, are kept.
    ///
    /// # Errors
    /// A line that is not UTF-8 (events before it are handed over first).
    pub(crate) fn feed(
        &mut self,
        chunk: &[u8],
        mut on_event: impl FnMut(SseEvent<'_>),
    ) -> Result<(), String> {
        let mut rest = chunk;
        if !self.buffer.is_empty() {
            let Some(end) = memchr_newline(rest) else {
                self.buffer.extend_from_slice(rest);
                return Ok(());
            };
            self.buffer.extend_from_slice(&rest[..end]);
            rest = &rest[end + 1..];
            let line = std::mem::take(&mut self.buffer);
            let done = self.line(&line, None, &mut on_event);
            self.buffer = line;
            self.buffer.clear();
            done?;
        }
        // The data of the event being read while it is one line of this
        // chunk: handed over from here when the event ends in the chunk.
        let mut single: Option<&str> = None;
        while let Some(end) = memchr_newline(rest) {
            let line = &rest[..end];
            rest = &rest[end + 1..];
            self.line(line, Some(&mut single), &mut on_event)?;
        }
        if let Some(data) = single {
            self.data.push_str(data);
            self.has_data = true;
        }
        self.buffer.extend_from_slice(rest);
        Ok(())
    }

    /// Reads one line (without its `\n`). With `single`, a first `data:`
    /// line is held there as a slice instead of copied; without, the line
    /// lives only for this call and anything kept is copied.
    fn line<'c>(
        &mut self,
        line: &'c [u8],
        single: Option<&mut Option<&'c str>>,
        on_event: &mut impl FnMut(SseEvent<'_>),
    ) -> Result<(), String> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let line =
            std::str::from_utf8(line).map_err(|e| format!("stream line is not utf-8 ({e})"))?;
        match self.field(line) {
            Field::Other => {}
            Field::Data(value) => match single {
                Some(slot) if slot.is_none() && !self.has_data => *slot = Some(value),
                Some(slot) => {
                    if let Some(first) = slot.take() {
                        self.data.push_str(first);
                        self.has_data = true;
                    }
                    self.push_data(value);
                }
                None => self.push_data(value),
            },
            Field::End => {
                let data = single
                    .and_then(Option::take)
                    .or_else(|| self.has_data.then_some(self.data.as_str()));
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
            }
        }
        Ok(())
    }

    fn push_data(&mut self, value: &str) {
        if self.has_data {
            self.data.push('\n');
        }
        self.data.push_str(value);
        self.has_data = true;
    }

    /// What `line` is; an `event:` line is applied here.
    fn field<'l>(&mut self, line: &'l str) -> Field<'l> {
        if line.is_empty() {
            return Field::End;
        }
        if line.starts_with(':') {
            return Field::Other;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => Field::Data(value),
            "event" => {
                self.event.clear();
                self.event.push_str(value);
                self.has_event = true;
                Field::Other
            }
            _ => Field::Other,
        }
    }
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', bytes)
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
            parser
                .feed(chunk, |e| {
                    out.push(Owned {
                        event: e.event.map(str::to_string),
                        data: e.data.to_string(),
                    })
                })
                .unwrap();
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
        assert!(parser.feed(b"data: \xff\xfe\n\n", |_| {}).is_err());
    }

    proptest! {
        /// However the bytes are cut, the same events come out.
        #[test]
        fn splitting_does_not_change_events(cuts in proptest::collection::vec(0usize..160, 0..8)) {
            let text = "event: a\ndata: héllo wörld\n\n: c\ndata: {\"x\":\"ünï\"}\r\n\r\ndata: one\ndata: two\ndata: three\n\nevent: b\ndata\n\ndata: z\n\n".as_bytes();
            let whole = parse_all(&[text]);
            let mut points: Vec<usize> = cuts.into_iter().map(|c| c % (text.len() + 1)).collect();
            points.sort_unstable();
            let mut chunks = Vec::new();
            let mut last = 0;
            for p in points {
                chunks.push(&text[last..p]);
                last = p;
            }
            chunks.push(&text[last..]);
            prop_assert_eq!(parse_all(&chunks), whole);
        }
    }
}
