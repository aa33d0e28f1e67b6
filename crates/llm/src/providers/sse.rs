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
    buffer: Vec<u8>,
    event: String,
    has_event: bool,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// Feeds the next bytes, handing each complete event to `on_event`.
    ///
    /// # Errors
    /// A line that is not UTF-8 (events before it are handed over first).
    pub(crate) fn feed(
        &mut self,
        chunk: &[u8],
        mut on_event: impl FnMut(SseEvent<'_>),
    ) -> Result<(), String> {
        self.buffer.extend_from_slice(chunk);
        let mut start = 0;
        let mut result = Ok(());
        while let Some(offset) = memchr_newline(&self.buffer[start..]) {
            let end = start + offset;
            let mut line = &self.buffer[start..end];
            if let Some(stripped) = line.strip_suffix(b"\r") {
                line = stripped;
            }
            match std::str::from_utf8(line) {
                Ok(line) => take_line(
                    line,
                    &mut self.event,
                    &mut self.has_event,
                    &mut self.data,
                    &mut self.has_data,
                    &mut on_event,
                ),
                Err(e) => {
                    result = Err(format!("stream line is not utf-8 ({e})"));
                    start = end + 1;
                    break;
                }
            }
            start = end + 1;
        }
        self.buffer.drain(..start);
        result
    }
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    memchr::memchr(b'\n', bytes)
}

fn take_line(
    line: &str,
    event: &mut String,
    has_event: &mut bool,
    data: &mut String,
    has_data: &mut bool,
    on_event: &mut impl FnMut(SseEvent<'_>),
) {
    if line.is_empty() {
        if *has_data {
            on_event(SseEvent {
                event: has_event.then_some(event.as_str()),
                data,
            });
        }
        event.clear();
        data.clear();
        *has_event = false;
        *has_data = false;
        return;
    }
    if line.starts_with(':') {
        return;
    }
    let (field, value) = match line.split_once(':') {
        Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
        None => (line, ""),
    };
    match field {
        "data" => {
            if *has_data {
                data.push('\n');
            }
            data.push_str(value);
            *has_data = true;
        }
        "event" => {
            event.clear();
            event.push_str(value);
            *has_event = true;
        }
        _ => {}
    }
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
        fn splitting_does_not_change_events(cuts in proptest::collection::vec(0usize..120, 0..8)) {
            let text = "event: a\ndata: héllo wörld\n\n: c\ndata: {\"x\":\"ünï\"}\r\n\r\ndata: z\n\n".as_bytes();
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
