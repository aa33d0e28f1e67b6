//! Rebuilding a delta from the last one of its stream: the [`Shape`] of
//! an event's text (its literal bytes around the tokens that change), and
//! [`Repeat`], which keeps the last delta and its shape so the next event
//! of the same shape costs a byte comparison instead of a scan.

use std::borrow::Cow;

use super::QuickRead;
use super::Scanner;

/// A delta event rebuilt from the last one of its stream: when a new
/// event's text has the last one's [`Shape`], it is that event with
/// another delta text.
///
/// # Contract
/// `refill(&keep(e), t)` equals what [`QuickRead::read`] gives for `e`'s
/// text with its one text hole (see [`Scanner::shape`]) holding `t`.
pub(crate) trait Refill<'a>: QuickRead<'a> {
    /// The event with every borrowed piece owned, kept between events.
    type Kept: Send + std::fmt::Debug + 'static;

    /// This event, owned.
    fn keep(&self) -> Self::Kept;

    /// `kept` with its delta text (the one text hole) replaced by `text`.
    /// The rest borrows from `kept`, so a rebuilt event copies no string
    /// but its text.
    fn refill(kept: &'a Self::Kept, text: Cow<'a, str>) -> Self;
}

/// `text`, owned, for a [`Refill::Kept`] event.
pub(crate) fn owned(text: &Option<Cow<'_, str>>) -> Option<Cow<'static, str>> {
    text.as_deref().map(|t| Cow::Owned(t.to_string()))
}

/// A kept string, borrowed for an event rebuilt by [`Refill::refill`].
pub(crate) fn lent<'a>(text: &'a Option<Cow<'static, str>>) -> Option<Cow<'a, str>> {
    text.as_deref().map(Cow::Borrowed)
}

/// A text slot of an event rebuilt by [`Refill::refill`]: the new `text`
/// when the kept event had a string here and the text is not placed yet
/// (it goes into the first such slot, as in the kept event), else the
/// kept string lent.
pub(crate) fn lent_or_text<'a>(
    slot: &'a Option<Cow<'static, str>>,
    text: &mut Option<Cow<'a, str>>,
) -> Option<Cow<'a, str>> {
    match slot {
        Some(_) if text.is_some() => text.take(),
        _ => lent(slot),
    }
}

/// What kind of token a hole in a [`Shape`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum HoleKind {
    /// The delta text: read, and put in the rebuilt event.
    Text,
    /// A string the reader stepped over: any string will do.
    String,
    /// A number the reader stepped over: any number will do.
    Number,
}

/// An event's text as literal pieces around the tokens that change from
/// one delta to the next (the text itself, and the ids, counters and
/// padding a reader steps over). A later event whose literal pieces are
/// the same bytes, with a valid token of the same kind in each hole, is
/// the same JSON structure with other values where the reader either
/// ignores them or reads the delta text: so it reads to the same event
/// with the new text, and a byte comparison replaces a scan.
#[derive(Debug)]
pub(crate) struct Shape {
    text: Box<str>,
    /// Each hole: the literal piece before it (a range of `text`) and
    /// its kind.
    holes: Vec<(std::ops::Range<usize>, HoleKind)>,
    /// The literal piece after the last hole.
    tail: std::ops::Range<usize>,
    /// Whether [`Shape::settle`] has run: its holes are only the tokens
    /// that changed between the first two events.
    settled: bool,
}

impl Shape {
    /// The delta text of `data` when it has this shape.
    pub(crate) fn fill<'a>(&self, data: &'a str) -> Option<Cow<'a, str>> {
        self.walk(data, |_, _| {})
    }

    /// Reads `data` along this shape: each literal piece must be the same
    /// bytes and each hole a valid token of its kind. `on_hole` is shown
    /// each hole (its literal piece and kind) with its token's span in
    /// `data`. The delta text; `None` at the first difference.
    fn walk<'a>(
        &self,
        data: &'a str,
        mut on_hole: impl FnMut(&(std::ops::Range<usize>, HoleKind), std::ops::Range<usize>),
    ) -> Option<Cow<'a, str>> {
        let mut scanner = Scanner::new(data);
        let mut text = None;
        for hole in &self.holes {
            let (literal, kind) = hole;
            let literal = self.text.as_bytes().get(literal.clone())?;
            let next = data
                .as_bytes()
                .get(scanner.at..scanner.at + literal.len())?;
            if !same_bytes(next, literal) {
                return None;
            }
            scanner.at += literal.len();
            let start = scanner.at;
            match kind {
                HoleKind::Text => text = Some(scanner.string()?),
                HoleKind::String => drop(scanner.string()?),
                HoleKind::Number => drop(scanner.number()?),
            }
            on_hole(hole, start..scanner.at);
        }
        let tail = self.text.as_bytes().get(self.tail.clone())?;
        same_bytes(data.as_bytes().get(scanner.at..)?, tail).then_some(())?;
        text
    }

    /// [`Shape::fill`], and this shape taken again from `data` with each
    /// hole whose token is the same bytes in both events made part of the
    /// literal around it. A stream repeats its id, creation time and
    /// fingerprint in every delta; as literals they cost a comparison
    /// instead of a scan, and only the tokens that change (the text, a
    /// sequence number, padding) are still read. An event that later
    /// differs in one of them no longer matches and is read afresh, so
    /// settling can only make the shape stricter.
    fn settle<'a>(&self, data: &'a str) -> Option<(Cow<'a, str>, Shape)> {
        let old = self.text.as_bytes();
        let mut holes = Vec::with_capacity(self.holes.len());
        let mut from = 0;
        let mut tokens = self
            .holes
            .iter()
            .skip(1)
            .map(|(literal, _)| literal.start)
            .chain([self.tail.start]);
        let text = self.walk(data, |(literal, kind), token| {
            // The old token lies between this literal and the next one.
            let old_token = tokens.next().and_then(|end| old.get(literal.end..end));
            if *kind == HoleKind::Text || old_token != data.as_bytes().get(token.clone()) {
                holes.push((from..token.start, *kind));
                from = token.end;
            }
        })?;
        let settled = Shape {
            text: data.into(),
            holes,
            tail: from..data.len(),
            settled: true,
        };
        Some((text, settled))
    }
}

/// Whether `a` and `b` hold the same bytes, compared a word at a time. A
/// shape's literal pieces are a few dozen bytes, where a call into the C
/// library's `memcmp` (what slice equality becomes) costs more than the
/// comparison itself; it was a tenth of a delta's decoding.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (a_words, b_words) = (a.chunks_exact(8), b.chunks_exact(8));
    let (a_rest, b_rest) = (a_words.remainder(), b_words.remainder());
    a_words.zip(b_words).all(|(x, y)| word(x) == word(y))
        && a_rest.iter().zip(b_rest).all(|(x, y)| x == y)
}

/// Eight bytes as one integer (for [`same_bytes`]; shorter input, which
/// its callers never pass, reads as zero).
fn word(bytes: &[u8]) -> u64 {
    u64::from_ne_bytes(bytes.try_into().unwrap_or([0; 8]))
}

/// The last delta of a stream and its shape, for [`Refill`].
#[derive(Debug)]
pub(crate) struct Repeat<K> {
    pub(super) last: Option<(Shape, K)>,
}

impl<K> Default for Repeat<K> {
    fn default() -> Self {
        Repeat { last: None }
    }
}

impl<K> Repeat<K> {
    /// Reads `data` as a `T`: rebuilt from the last delta when it has the
    /// same shape, else read by the scanner (and kept, when it is a delta);
    /// `None` when the scanner leaves it to serde.
    pub(crate) fn read<'a, T: Refill<'a, Kept = K>>(&'a mut self, data: &'a str) -> Option<T> {
        if let Some(text) = self.refill_text(data) {
            let kept = self.last.as_ref().map(|(_, kept)| kept)?;
            return Some(T::refill(kept, text));
        }
        self.scan(data)
    }

    /// The delta text of `data` when it has the last delta's shape; the
    /// first such match settles the shape (see [`Shape::settle`]). The
    /// text borrows `data` only, so a miss leaves `self` free to keep the
    /// new shape.
    pub(super) fn refill_text<'d>(&mut self, data: &'d str) -> Option<Cow<'d, str>> {
        let (shape, _) = self.last.as_mut()?;
        if shape.settled {
            return shape.fill(data);
        }
        let (text, settled) = shape.settle(data)?;
        *shape = settled;
        Some(text)
    }

    /// Reads `data` with the scanner, keeping it (when it is a delta) for
    /// the next event to be rebuilt from; `None` when the scanner leaves
    /// it to serde.
    pub(crate) fn scan<'a, T: Refill<'a, Kept = K>>(&mut self, data: &'a str) -> Option<T> {
        let mut scanner = Scanner::recording(data);
        let event = T::read(&mut scanner)?;
        if let Some(shape) = scanner.shape() {
            self.last = Some((shape, event.keep()));
        }
        Some(event)
    }
}

impl Scanner<'_> {
    /// The shape of the text just read: its literal pieces around the
    /// tokens that may change. `None` unless exactly one delta text was
    /// read (see [`Scanner::text_hole`]).
    pub(crate) fn shape(self) -> Option<Shape> {
        let holes = self.holes?;
        let texts = holes.iter().filter(|h| h.2 == HoleKind::Text).count();
        if texts != 1 {
            return None;
        }
        let mut pieces = Vec::with_capacity(holes.len());
        let mut from = 0;
        for (start, end, kind) in holes {
            pieces.push((from..start, kind));
            from = end;
        }
        Some(Shape {
            text: self.text.into(),
            holes: pieces,
            tail: from..self.text.len(),
            settled: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Equal bytes compare equal at every length, and a difference in any
    /// one byte (in a whole word or in the bytes after the last) is seen.
    #[test]
    fn same_bytes_sees_a_difference_anywhere() {
        for length in 0..40 {
            let a: Vec<u8> = (0..length).map(|i| b'a' + (i % 26) as u8).collect();
            assert!(same_bytes(&a, &a.clone()), "length {length}");
            for at in 0..length {
                let mut b = a.clone();
                b[at] = b'#';
                assert!(!same_bytes(&a, &b), "length {length}, byte {at}");
            }
            assert!(!same_bytes(&a, &a[..length.saturating_sub(1)]) || length == 0);
        }
    }

    /// A shape takes another event only when every literal piece matches
    /// byte for byte and each hole holds a valid token of its kind.
    #[test]
    fn a_shape_takes_only_events_that_match_it_outside_its_holes() {
        let template = r#"{"id":"a1","n":7,"model":"m","text":"word ","end":true}"#;
        let mut scanner = Scanner::recording(template);
        scanner
            .object(|s, key| match key {
                "text" => s.text_hole().map(drop),
                "model" => s.optional_string().map(drop),
                _ => s.skip(),
            })
            .expect("the template reads");
        let shape = scanner.shape().expect("one text hole");
        let fill = |data| shape.fill(data).map(Cow::into_owned);
        assert_eq!(fill(template).as_deref(), Some("word "));
        let same = r#"{"id":"b-22","n":-1.5e3,"model":"m","text":"new\ntext","end":true}"#;
        assert_eq!(
            fill(same).as_deref(),
            Some("new\ntext"),
            "skipped values and the text may change"
        );
        for other in [
            r#"{"id":"a1","n":7,"model":"M","text":"x","end":true}"#,
            r#"{"id":"a1","n":7,"model":"m","text":"x","end":false}"#,
            r#"{"id":"a1","n":7,"model":"m","text":"x","end":true} "#,
            r#"{"id":"a1","n":7,"model":"m","text":"x","end":true}}"#,
            r#"{"id":7,"n":7,"model":"m","text":"x","end":true}"#,
            r#"{"id":"a1","n":"7","model":"m","text":"x","end":true}"#,
            r#"{"id":"a1","n":7,"model":"m","text":null,"end":true}"#,
            r#"{"id":"a1","n":7,"model":"m","text":"caf\u00e9","end":true}"#,
            r#"{"id":"a1","n":7,"model":"m","text":"x"#,
        ] {
            assert_eq!(fill(other), None, "{other}");
        }
        let mut two = Scanner::recording(r#"{"a":"x","b":"y"}"#);
        two.object(|s, _| s.text_hole().map(drop)).expect("reads");
        assert!(two.shape().is_none(), "two texts: no shape");
    }

    /// Once a shape has matched a second event, the tokens the two share
    /// are literal: an event differing in one of them is read afresh,
    /// while the text and the tokens that did change stay holes.
    #[test]
    fn a_settled_shape_keeps_holes_only_where_events_differed() {
        let first = r#"{"id":"a1","n":7,"seq":1,"text":"word ","end":true}"#;
        let mut scanner = Scanner::recording(first);
        scanner
            .object(|s, key| match key {
                "text" => s.text_hole().map(drop),
                _ => s.skip(),
            })
            .expect("the template reads");
        let shape = scanner.shape().expect("one text hole");
        assert_eq!(shape.holes.len(), 4, "id, n, seq and the text");
        let second = r#"{"id":"a1","n":7,"seq":2,"text":"more","end":true}"#;
        let (text, settled) = shape.settle(second).expect("the second event matched");
        assert_eq!(text, "more");
        let kinds: Vec<HoleKind> = settled.holes.iter().map(|(_, kind)| *kind).collect();
        assert_eq!(
            kinds,
            [HoleKind::Number, HoleKind::Text],
            "seq and the text"
        );
        let fill = |data| settled.fill(data).map(Cow::into_owned);
        assert_eq!(
            fill(r#"{"id":"a1","n":7,"seq":30,"text":"x\ny","end":true}"#).as_deref(),
            Some("x\ny")
        );
        for other in [
            r#"{"id":"a2","n":7,"seq":3,"text":"x","end":true}"#,
            r#"{"id":"a1","n":8,"seq":3,"text":"x","end":true}"#,
            r#"{"id":"a1","n":7,"seq":"3","text":"x","end":true}"#,
        ] {
            assert_eq!(fill(other), None, "{other}");
            assert!(shape.fill(other).is_some() || other.contains(r#""3""#));
        }
    }
}
