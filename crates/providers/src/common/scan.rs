//! A quick reader for the few small JSON objects that make up most of a
//! streamed answer: text deltas, hundreds per answer.
//!
//! serde_json reads any event correctly, but its per-field machinery costs
//! more than the rest of the client's answer path put together on a delta
//! of a hundred bytes. Each decoder first offers an event to a reader built
//! from this scanner, which knows only the common shapes; whenever the
//! scanner meets anything it is not sure of (an escape it does not decode,
//! a nested value too deep, a duplicate field, a number with a fraction,
//! bytes after the object) it gives up with `None`, and the decoder reads
//! the event with serde as before. So the contract is one-sided: what the
//! scanner accepts, serde reads to the same value; what it refuses costs a
//! second read, never a different answer. Each reader's tests check that
//! against serde on generated events.
//!
//! Deltas of one stream are mostly the same bytes: the same keys, types
//! and model, with another piece of text, another counter, another id.
//! So a decoder keeps the last delta's [`Shape`](repeat::Shape) (its
//! literal bytes around the tokens that change) and, when the next event
//! has the same literal bytes, rebuilds it from the last one with the new
//! text ([`Refill`]): a byte comparison in place of a scan. The first such
//! match settles the shape: tokens the two events share (a stream's id,
//! creation time, fingerprint) become literal, so only the text and the
//! counters that really change are still scanned.

use std::borrow::Cow;

mod repeat;

pub(crate) use repeat::HoleKind;
pub(crate) use repeat::Refill;
pub(crate) use repeat::Repeat;
pub(crate) use repeat::lent;
pub(crate) use repeat::lent_or_text;
pub(crate) use repeat::owned;

/// How deep a skipped value may nest before the scanner gives up.
const MAX_DEPTH: usize = 16;

/// The bytes that end a plain run inside a string: the closing quote, an
/// escape, and the control characters JSON forbids there.
const STOP: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = true;
        byte += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// A cursor over one event's JSON text.
#[derive(Debug)]
pub(crate) struct Scanner<'a> {
    text: &'a str,
    at: usize,
    /// When recording a [`Shape`](repeat::Shape): the spans of the tokens that may
    /// change from one delta to the next, in text order.
    holes: Option<Vec<(usize, usize, HoleKind)>>,
}

impl<'a> Scanner<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Scanner {
            text,
            at: 0,
            holes: None,
        }
    }

    /// A scanner that also notes where the changing tokens are, for
    /// [`Scanner::shape`].
    pub(crate) fn recording(text: &'a str) -> Self {
        Scanner {
            holes: Some(Vec::new()),
            ..Scanner::new(text)
        }
    }

    fn note(&mut self, start: usize, kind: HoleKind) {
        let end = self.at;
        if let Some(holes) = &mut self.holes {
            holes.push((start, end, kind));
        }
    }

    fn bytes(&self) -> &'a [u8] {
        self.text.as_bytes()
    }

    fn skip_space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes().get(self.at) {
            self.at += 1;
        }
    }

    /// The next byte after white space, not consumed.
    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.bytes().get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    fn eat_word(&mut self, word: &str) -> Option<()> {
        self.skip_space();
        self.text[self.at..]
            .starts_with(word)
            .then(|| self.at += word.len())
    }

    /// Reads the whole text as one object, calling `field` with each key
    /// while the cursor sits on its value; `field` must consume the value.
    /// Only white space may follow the object.
    pub(crate) fn object(
        &mut self,
        field: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.members(field)?;
        self.skip_space();
        (self.at == self.text.len()).then_some(())
    }

    /// Reads one object at the cursor, calling `field` for each member.
    /// Keys holding escapes are refused.
    pub(crate) fn members(
        &mut self,
        mut field: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return Some(());
        }
        loop {
            let Cow::Borrowed(key) = self.string()? else {
                return None;
            };
            self.eat(b':')?;
            field(self, key)?;
            if !self.comma_or(b'}')? {
                return Some(());
            }
        }
    }

    /// Reads one array at the cursor, calling `element` for each element;
    /// `element` must consume it.
    pub(crate) fn elements(
        &mut self,
        mut element: impl FnMut(&mut Self) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'[')?;
        if self.eat(b']').is_some() {
            return Some(());
        }
        loop {
            element(self)?;
            if !self.comma_or(b']')? {
                return Some(());
            }
        }
    }

    /// Steps past what follows a member or an element: `true` past a
    /// comma (another follows), `false` past `close` (the last one);
    /// `None` for anything else.
    fn comma_or(&mut self, close: u8) -> Option<bool> {
        let next = self.peek()?;
        if next != b',' && next != close {
            return None;
        }
        self.at += 1;
        Some(next == b',')
    }

    /// `true` (and consumed) when the value at the cursor is `null`.
    pub(crate) fn null(&mut self) -> bool {
        self.eat_word("null").is_some()
    }

    /// A string value: borrowed when it holds no escape, decoded when its
    /// escapes are the short ones; `\u` escapes and raw control characters
    /// are refused.
    pub(crate) fn string(&mut self) -> Option<Cow<'a, str>> {
        self.eat(b'"')?;
        let bytes = self.bytes();
        let start = self.at;
        let mut owned: Option<String> = None;
        let mut run = start;
        let mut at = start;
        loop {
            at = plain_run_end(bytes, at)?;
            match bytes[at] {
                b'"' => {
                    self.at = at + 1;
                    return Some(match owned {
                        None => Cow::Borrowed(&self.text[start..at]),
                        Some(mut text) => {
                            text.push_str(&self.text[run..at]);
                            Cow::Owned(text)
                        }
                    });
                }
                b'\\' => {}
                _ => return None,
            }
            let decoded = match bytes.get(at + 1)? {
                b'"' => '"',
                b'\\' => '\\',
                b'/' => '/',
                b'b' => '\u{8}',
                b'f' => '\u{c}',
                b'n' => '\n',
                b'r' => '\r',
                b't' => '\t',
                _ => return None,
            };
            let text = owned.get_or_insert_with(String::new);
            text.push_str(&self.text[run..at]);
            text.push(decoded);
            at += 2;
            run = at;
        }
    }

    /// A string or `null`.
    pub(crate) fn optional_string(&mut self) -> Option<Option<Cow<'a, str>>> {
        nullable(self, Scanner::string)
    }

    /// A delta's text, or `null`: as [`Scanner::optional_string`], noted
    /// as the token a [`Shape`](repeat::Shape) refills.
    pub(crate) fn text_hole(&mut self) -> Option<Option<Cow<'a, str>>> {
        nullable(self, |s| {
            s.skip_space();
            let start = s.at;
            let text = s.string()?;
            s.note(start, HoleKind::Text);
            Some(text)
        })
    }

    /// A non-negative integer without fraction or exponent, or `null`.
    pub(crate) fn optional_u64(&mut self) -> Option<Option<u64>> {
        nullable(self, |s| {
            let digits = s.number()?;
            if !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            digits.parse().ok()
        })
    }

    /// The text of a JSON number at the cursor, checked against the
    /// grammar: `-`, then `0` or digits not starting with `0`, then an
    /// optional fraction and exponent.
    fn number(&mut self) -> Option<&'a str> {
        self.skip_space();
        let bytes = self.bytes();
        let start = self.at;
        let mut at = start;
        let digits = |at: &mut usize| {
            let from = *at;
            while bytes.get(*at).is_some_and(u8::is_ascii_digit) {
                *at += 1;
            }
            *at > from
        };
        if bytes.get(at) == Some(&b'-') {
            at += 1;
        }
        match bytes.get(at)? {
            b'0' => at += 1,
            b'1'..=b'9' => {
                digits(&mut at);
            }
            _ => return None,
        }
        if bytes.get(at) == Some(&b'.') {
            at += 1;
            if !digits(&mut at) {
                return None;
            }
        }
        if let Some(b'e' | b'E') = bytes.get(at) {
            at += 1;
            if let Some(b'+' | b'-') = bytes.get(at) {
                at += 1;
            }
            if !digits(&mut at) {
                return None;
            }
        }
        self.at = at;
        Some(&self.text[start..at])
    }

    /// Steps over any value, checking it as it goes.
    pub(crate) fn skip(&mut self) -> Option<()> {
        self.skip_at(0)
    }

    fn skip_at(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        let first = self.peek()?;
        let start = self.at;
        match first {
            b'"' => {
                self.string()?;
                self.note(start, HoleKind::String);
                Some(())
            }
            b'{' => self.members(|s, _| s.skip_at(depth + 1)),
            b'[' => self.elements(|s| s.skip_at(depth + 1)),
            b't' => self.eat_word("true"),
            b'f' => self.eat_word("false"),
            b'n' => self.eat_word("null"),
            _ => {
                self.number()?;
                self.note(start, HoleKind::Number);
                Some(())
            }
        }
    }
}

/// An event type with a quick reader for its common shapes.
///
/// # Contract
/// `read` consumes the whole text (nothing but white space may follow the
/// object) and returns `Some` only for text that serde reads (through the
/// type's `Deserialize`) to an equal value; for anything else it returns
/// `None`, and the caller reads the text with serde. Delta texts are read
/// with [`Scanner::text_hole`], everything else that may change between
/// two deltas is stepped over with [`Scanner::skip`].
pub(crate) trait QuickRead<'a>: Sized {
    /// The event read by the scanner, or `None` to leave it to serde.
    fn read(scanner: &mut Scanner<'a>) -> Option<Self>;
}

/// A value that may be `null`, read by `read` otherwise.
pub(crate) fn nullable<'a, T>(
    scanner: &mut Scanner<'a>,
    read: impl FnOnce(&mut Scanner<'a>) -> Option<T>,
) -> Option<Option<T>> {
    if scanner.null() {
        return Some(None);
    }
    read(scanner).map(Some)
}

/// Where the plain run of string bytes starting at `at` ends: the index of
/// the first quote, backslash or control character, eight bytes at a time
/// while eight remain. Keys and deltas are a few bytes long, too short
/// for a vectorized search to pay for its setup; a word at a time is not.
fn plain_run_end(bytes: &[u8], mut at: usize) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // A high bit in each byte of `x` that is zero; bits above the first
    // zero byte may be wrong, which is why only the lowest is used.
    let zero_bytes = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    while let Some(word) = bytes.get(at..at + 8) {
        let x = u64::from_le_bytes(word.try_into().ok()?);
        let found = zero_bytes(x ^ (ONES * u64::from(b'"')))
            | zero_bytes(x ^ (ONES * u64::from(b'\\')))
            | (x.wrapping_sub(ONES * 0x20) & !x & HIGHS);
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    while !STOP[usize::from(*bytes.get(at)?)] {
        at += 1;
    }
    Some(at)
}

/// Stores `value` in `slot`, refusing a field seen twice (serde refuses a
/// duplicate field, so the scanner must not pick one of the two).
pub(crate) fn once<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    if slot.is_some() {
        return None;
    }
    *slot = Some(value);
    Some(())
}

/// Test helpers shared by every quick reader's tests: generated JSON and
/// events, and the check that the quick reader agrees with serde.
#[cfg(test)]
pub(crate) mod testing {
    use std::fmt::Debug;

    use proptest::prelude::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestCaseError;

    use super::QuickRead;

    /// JSON text from pieces that exercise the scanner's edges: escapes it
    /// decodes and ones it refuses, numbers of every form, nesting, and
    /// white space wherever JSON allows it.
    pub(crate) fn json_text() -> impl Strategy<Value = String> {
        let space = prop::sample::select(vec!["", " ", "\n", "\t ", "\r\n"]);
        let leaf = prop_oneof![
            prop::sample::select(vec![
                "null",
                "true",
                "false",
                "0",
                "-0",
                "17",
                "-3.25",
                "1e5",
                "2.5E-3",
                "\"\"",
                "\"word \"",
                "\"a\\nb\"",
                "\"q\\\"\\\\\\/\"",
                "\"\\u00e9\"",
                "\"é ✓\"",
                "\"tab\\tend\"",
            ])
            .prop_map(str::to_string),
        ];
        leaf.prop_recursive(4, 24, 4, move |inner| {
            let space = space.clone();
            prop_oneof![
                (prop::collection::vec((inner.clone(), space.clone()), 0..4)).prop_map(|items| {
                    let body: Vec<String> = items
                        .into_iter()
                        .map(|(v, s)| format!("{s}{v}{s}"))
                        .collect();
                    format!("[{}]", body.join(","))
                }),
                (prop::collection::vec(
                    (
                        prop::sample::select(vec!["a", "type", "delta", "text", "b"]),
                        inner,
                        space
                    ),
                    0..4
                ))
                .prop_map(|members| {
                    let body: Vec<String> = members
                        .into_iter()
                        .enumerate()
                        .map(|(i, (k, v, s))| format!("{s}\"{k}{i}\"{s}:{s}{v}"))
                        .collect();
                    format!("{{{}}}", body.join(","))
                }),
            ]
        })
    }

    /// A string value as it may come on the wire: plain, with escapes
    /// the scanner decodes, with one it leaves to serde, or `null`.
    pub(crate) fn text_value() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "\"word \"",
            "\"\"",
            "\" two\\nlines\"",
            "\"say \\\"hi\\\"\"",
            "\"\\u00e9t\\u00e9\"",
            "\"ünï ✓\"",
            "null",
        ])
        .prop_map(str::to_string)
    }

    /// One of `values` (JSON text), as a boxed strategy for [`members`].
    pub(crate) fn pick(values: &[&'static str]) -> BoxedStrategy<String> {
        prop::sample::select(values.to_vec())
            .prop_map(str::to_string)
            .boxed()
    }

    /// An object of `members` (key and value text) in the order given,
    /// with `space` around every token, plus `extra` unknown members.
    pub(crate) fn object(members: Vec<(String, String)>, space: &str) -> String {
        let body: Vec<String> = members
            .into_iter()
            .map(|(k, v)| format!("{space}\"{k}\"{space}:{space}{v}{space}"))
            .collect();
        format!("{{{}}}", body.join(","))
    }

    /// A top-level event: `members` as an object, compact or with white
    /// space around every token.
    pub(crate) fn event_text(
        members: impl Strategy<Value = Vec<(String, String)>>,
    ) -> impl Strategy<Value = String> {
        (members, prop::sample::select(vec!["", " ", "\n"])).prop_map(|(m, space)| object(m, space))
    }

    /// Members for an object: each `(key, value)` kept or dropped, one
    /// possibly repeated, unknown members of any JSON mixed in, in any
    /// order.
    pub(crate) fn members(
        known: Vec<(&'static str, BoxedStrategy<String>)>,
    ) -> impl Strategy<Value = Vec<(String, String)>> {
        members_kept(known, 0.5)
    }

    /// [`members`], each known member kept with probability `keep`.
    pub(crate) fn members_kept(
        known: Vec<(&'static str, BoxedStrategy<String>)>,
        keep: f64,
    ) -> impl Strategy<Value = Vec<(String, String)>> {
        let fields: Vec<_> = known
            .into_iter()
            .map(|(key, value)| {
                (prop::bool::weighted(keep), value)
                    .prop_map(move |(kept, v)| kept.then(|| (key.to_string(), v)))
            })
            .collect();
        let unknown_value = prop_oneof![
            4 => prop::sample::select(vec!["null", "12", "\"chatcmpl-1\"", "[]", "{\"a\":[1,true]}"])
                .prop_map(str::to_string),
            1 => json_text(),
        ];
        let unknown = prop::collection::vec(
            (
                prop::sample::select(vec!["id", "object", "sequence_number", "logprobs", "extra"]),
                unknown_value,
            ),
            0..3,
        );
        (fields, unknown, prop::bool::weighted(0.1))
            .prop_map(|(fields, unknown, repeat)| {
                let mut all: Vec<(String, String)> = fields.into_iter().flatten().collect();
                if repeat && let Some(first) = all.first().cloned() {
                    all.push(first);
                }
                all.extend(unknown.into_iter().map(|(k, v)| (k.to_string(), v)));
                all
            })
            .prop_shuffle()
    }

    /// Checks 512 cases from `cases` with `read` and fails on the first
    /// disagreement, or when fewer than `at_least` of them took the path
    /// under test (a generator that always falls back to serde would test
    /// nothing).
    pub(crate) fn agree_on<S: Strategy>(
        cases: S,
        at_least: usize,
        read: impl Fn(&S::Value) -> Result<bool, TestCaseError>,
    ) {
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let mut taken = 0;
        let total = 512;
        for _ in 0..total {
            let case = cases
                .new_tree(&mut runner)
                .expect("a generated case")
                .current();
            match read(&case) {
                Ok(true) => taken += 1,
                Ok(false) => {}
                Err(e) => panic!("{e}"),
            }
        }
        assert!(
            taken >= at_least,
            "only {taken} of {total} generated cases took the path under test"
        );
    }

    /// Pairs of events: one from `events`, and the same text with every
    /// `"word "` string (a value [`text_value`] draws) replaced by another
    /// string. Where that string sat in a hole the two share a
    /// [`Shape`](super::repeat::Shape); where it sat in a field the reader uses
    /// (a type, a model) they must not.
    pub(crate) fn pairs(
        events: impl Strategy<Value = String>,
    ) -> impl Strategy<Value = (String, String)> {
        let others = prop::sample::select(vec![
            "\"x\"",
            "\"a longer piece of text\"",
            "\"two\\nlines\"",
            "\"caf\\u00e9\"",
            "\"\"",
        ]);
        (events, others).prop_map(|(first, other)| {
            let second = first.replace("\"word \"", other);
            (first, second)
        })
    }

    /// Reads `second` after `first` through `repeat`, and `first` again
    /// after both through `settled`, whose shape `second` settled (both
    /// new, so the events they rebuild may borrow them); fails unless each
    /// result (when there is one) equals serde's. Returns whether
    /// `second`, a different text, was rebuilt from `first`'s shape.
    pub(crate) fn repeats_agree<'a, T>(
        first: &'a str,
        second: &'a str,
        repeat: &'a mut super::Repeat<T::Kept>,
        settled: &'a mut super::Repeat<T::Kept>,
    ) -> Result<bool, TestCaseError>
    where
        T: super::Refill<'a> + serde::Deserialize<'a> + PartialEq + Debug,
    {
        let _ = repeat.scan::<T>(first);
        let rebuilt = repeat
            .last
            .as_ref()
            .is_some_and(|(shape, _)| shape.fill(second).is_some());
        let Some(event) = repeat.read::<T>(second) else {
            return Ok(false);
        };
        agree_with_serde(event, second, first)?;
        let _ = settled.scan::<T>(first);
        if settled.refill_text(second).is_some()
            && let Some(again) = settled.read::<T>(first)
        {
            agree_with_serde(again, first, second)?;
        }
        Ok(rebuilt && first != second)
    }

    /// Fails unless `event`, read from `data` after `before`, is what
    /// serde reads from `data`.
    fn agree_with_serde<'a, T>(event: T, data: &'a str, before: &str) -> Result<(), TestCaseError>
    where
        T: serde::Deserialize<'a> + PartialEq + Debug,
    {
        match serde_json::from_str::<T>(data) {
            Ok(parsed) => {
                prop_assert_eq!(event, parsed, "{} after {}", data, before);
                Ok(())
            }
            Err(e) => Err(TestCaseError::fail(format!(
                "read what serde refuses ({e}): {data} after {before}"
            ))),
        }
    }

    /// Checks each of `quick` is read by the quick reader (agreeing with
    /// serde) and each of `slow` is left to serde; `read` is
    /// [`agrees`] for the event type.
    pub(crate) fn assert_paths(
        quick: &[&str],
        slow: &[&str],
        read: impl Fn(&str) -> Result<bool, TestCaseError>,
    ) {
        for data in quick {
            assert!(read(data).unwrap(), "should take the quick path: {data}");
        }
        for data in slow {
            assert!(!read(data).unwrap(), "should be left to serde: {data}");
        }
    }

    /// Fails unless the quick reader's value (when it gives one) equals
    /// serde's; returns whether the quick reader read the text.
    pub(crate) fn agrees<'a, T>(data: &'a str) -> Result<bool, TestCaseError>
    where
        T: QuickRead<'a> + serde::Deserialize<'a> + PartialEq + Debug,
    {
        let Some(quick) = T::read(&mut super::Scanner::new(data)) else {
            return Ok(false);
        };
        match serde_json::from_str::<T>(data) {
            Ok(parsed) => {
                prop_assert_eq!(quick, parsed, "{}", data);
                Ok(true)
            }
            Err(e) => Err(TestCaseError::fail(format!(
                "quick read what serde refuses ({e}): {data}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Reads `text` as a value with the scanner (objects and arrays
    /// rebuilt as serde values), for comparison with serde_json.
    fn scan_value(text: &str) -> Option<serde_json::Value> {
        fn value(s: &mut Scanner<'_>, depth: usize) -> Option<serde_json::Value> {
            if depth > MAX_DEPTH {
                return None;
            }
            Some(match s.peek()? {
                b'"' => serde_json::Value::String(s.string()?.into_owned()),
                b'{' => {
                    let mut map = serde_json::Map::new();
                    s.members(|s, key| {
                        let v = value(s, depth + 1)?;
                        map.insert(key.to_string(), v);
                        Some(())
                    })?;
                    serde_json::Value::Object(map)
                }
                b'[' => {
                    let mut list = Vec::new();
                    s.elements(|s| {
                        list.push(value(s, depth + 1)?);
                        Some(())
                    })?;
                    serde_json::Value::Array(list)
                }
                b'n' => {
                    s.eat_word("null")?;
                    serde_json::Value::Null
                }
                b't' => {
                    s.eat_word("true")?;
                    serde_json::Value::Bool(true)
                }
                b'f' => {
                    s.eat_word("false")?;
                    serde_json::Value::Bool(false)
                }
                _ => serde_json::from_str(s.number()?).ok()?,
            })
        }
        let mut s = Scanner::new(text);
        let v = value(&mut s, 0)?;
        s.skip_space();
        (s.at == text.len()).then_some(v)
    }

    #[test]
    fn strings_borrow_unless_escaped_and_refuse_what_they_do_not_decode() {
        let mut s = Scanner::new(r#""plain" "a\nb\"c\\d\/e\tf" "\u00e9" "#);
        assert!(matches!(s.string(), Some(Cow::Borrowed("plain"))));
        assert_eq!(s.string().as_deref(), Some("a\nb\"c\\d/e\tf"));
        assert_eq!(s.string(), None, "\\u escapes are left to serde");
        assert_eq!(Scanner::new("\"a\u{1}b\"").string(), None);
        assert_eq!(Scanner::new("\"unterminated").string(), None);
        assert_eq!(Scanner::new("\"bad \\x escape\"").string(), None);
    }

    /// The word-at-a-time search finds the same byte as a plain loop,
    /// wherever the stop byte falls in a word and whatever follows it.
    #[test]
    fn a_plain_run_ends_at_the_first_stop_byte() {
        let plain =
            |bytes: &[u8], at: usize| (at..bytes.len()).find(|i| STOP[usize::from(bytes[*i])]);
        let fillers: [&[u8]; 3] = [
            b"abcdefghijklmnopqrstuvwxyz",
            "ünïcødé ✓ ünïcødé".as_bytes(),
            b"\x7f~}|{ !#$%&'()*+",
        ];
        for filler in fillers {
            for stop in [b'"', b'\\', b'\n', 0x00, 0x1f] {
                for len in 0..filler.len() {
                    for tail in [&b""[..], b"\"", b"\\\"x"] {
                        let mut text = filler[..len].to_vec();
                        text.push(stop);
                        text.extend_from_slice(tail);
                        for from in 0..=len {
                            assert_eq!(
                                plain_run_end(&text, from),
                                plain(&text, from),
                                "{text:?} from {from}"
                            );
                        }
                    }
                }
                assert_eq!(
                    plain_run_end(filler, 0),
                    None,
                    "no stop byte: the string is unterminated"
                );
            }
        }
    }

    #[test]
    fn numbers_follow_the_json_grammar() {
        for good in ["0", "-0", "12", "1.5", "-2e10", "3E+2", "4.25e-3"] {
            assert_eq!(Scanner::new(good).number(), Some(good), "{good}");
        }
        for bad in ["-", "+1", ".5", "1.", "1e", "01x"] {
            let mut s = Scanner::new(bad);
            let whole = s.number().is_some_and(|n| n.len() == bad.len());
            assert!(!whole, "{bad} must not read as a whole number");
        }
        assert_eq!(Scanner::new("7").optional_u64(), Some(Some(7)));
        assert_eq!(Scanner::new("null").optional_u64(), Some(None));
        assert_eq!(Scanner::new("1.0").optional_u64(), None);
        assert_eq!(Scanner::new("-1").optional_u64(), None);
        assert_eq!(Scanner::new("99999999999999999999").optional_u64(), None);
    }

    #[test]
    fn an_object_must_be_all_of_the_text() {
        let skip_all = |text| Scanner::new(text).object(|s, _| s.skip());
        assert_eq!(skip_all(r#" {"a": [1, {"b": null}], "c": "d"} "#), Some(()));
        assert_eq!(skip_all(r#"{"a": 1} x"#), None);
        assert_eq!(skip_all(r#"{"a": 1,}"#), None);
        assert_eq!(skip_all(r#"{"a" 1}"#), None);
        assert_eq!(skip_all("[1]"), None);
        let deep = format!("{{\"a\":{}1{}}}", "[".repeat(40), "]".repeat(40));
        assert_eq!(skip_all(&deep), None, "too deep: left to serde");
    }

    #[test]
    fn a_field_seen_twice_is_refused() {
        let mut slot = None;
        assert_eq!(once(&mut slot, 1), Some(()));
        assert_eq!(once(&mut slot, 2), None);
        assert_eq!(slot, Some(1));
    }

    proptest! {
        /// Whatever the scanner accepts, serde reads to the same value.
        #[test]
        fn what_the_scanner_accepts_serde_reads_the_same(text in testing::json_text()) {
            if let Some(scanned) = scan_value(&text) {
                let parsed: serde_json::Value = serde_json::from_str(&text).expect("serde reads what the scanner read");
                prop_assert_eq!(scanned, parsed);
            }
        }

        /// Text that serde refuses the scanner refuses too, cut anywhere.
        #[test]
        fn text_cut_short_is_refused(text in testing::json_text(), cut in 0usize..200) {
            let mut end = cut.min(text.len());
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            let cut = &text[..end];
            if serde_json::from_str::<serde_json::Value>(cut).is_err() {
                prop_assert_eq!(scan_value(cut), None);
            }
        }
    }
}
