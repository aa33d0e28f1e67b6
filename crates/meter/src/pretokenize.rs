//! tiktoken's pre-tokenizer split patterns, as hand-written scanners.
//!
//! tiktoken cuts text into pieces with a regular expression before running
//! BPE on each piece. The o200k and cl100k patterns use look-ahead and
//! possessive repetition, which forces a backtracking engine
//! (`fancy-regex`) that dominates tokenizing time. The scanners below
//! reproduce the same leftmost-first match, alternative by alternative,
//! with the backtracking worked out by hand; `tests` compares them with
//! the regex on random text. The patterns, for reference:
//!
//! o200k: `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?`
//! `|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?`
//! `|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
//!
//! cl100k: `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+`
//! `| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s`
//!
//! Unicode classes come from `regex-syntax`, the tables the regex crate
//! itself matches with.

use std::sync::OnceLock;

/// The general-category class of one character, as far as the patterns
/// distinguish them. Categories are disjoint, and White_Space characters
/// are none of L, M, N.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Class {
    /// Anything else (punctuation, symbols, controls that are not space).
    Other = 0,
    /// Lu, Lt: in the "upper" class only.
    Upper = 1,
    /// Ll: in the "lower" class only.
    Lower = 2,
    /// Lm, Lo: letters in both classes.
    Both = 3,
    /// M: marks, in both o200k letter classes but not `\p{L}`.
    Mark = 4,
    /// N.
    Number = 5,
    /// White_Space other than `\r` and `\n`.
    Space = 6,
    /// `\r` or `\n`.
    Newline = 7,
}

impl Class {
    fn from_u8(v: u8) -> Class {
        match v {
            1 => Class::Upper,
            2 => Class::Lower,
            3 => Class::Both,
            4 => Class::Mark,
            5 => Class::Number,
            6 => Class::Space,
            7 => Class::Newline,
            _ => Class::Other,
        }
    }
    fn letter(self) -> bool {
        matches!(self, Class::Upper | Class::Lower | Class::Both)
    }
    /// `[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]`
    fn upper_ish(self) -> bool {
        matches!(self, Class::Upper | Class::Both | Class::Mark)
    }
    /// `[\p{Ll}\p{Lm}\p{Lo}\p{M}]`
    fn lower_ish(self) -> bool {
        matches!(self, Class::Lower | Class::Both | Class::Mark)
    }
    /// `[^\r\n\p{L}\p{N}]`
    fn prefix(self) -> bool {
        matches!(self, Class::Other | Class::Mark | Class::Space)
    }
    /// `[^\s\p{L}\p{N}]`
    fn other(self) -> bool {
        matches!(self, Class::Other | Class::Mark)
    }
    fn space(self) -> bool {
        matches!(self, Class::Space | Class::Newline)
    }
}

/// One class byte per code point: 1.1 MB, built once per process from
/// regex-syntax's tables.
fn table() -> &'static [u8] {
    static TABLE: OnceLock<Vec<u8>> = OnceLock::new();
    TABLE.get_or_init(build_table)
}

fn build_table() -> Vec<u8> {
    let mut table = vec![Class::Other as u8; 0x11_0000];
    let classes = [
        (r"[\p{Lu}\p{Lt}]", Class::Upper),
        (r"\p{Ll}", Class::Lower),
        (r"[\p{Lm}\p{Lo}]", Class::Both),
        (r"\p{M}", Class::Mark),
        (r"\p{N}", Class::Number),
        (r"\s", Class::Space),
    ];
    for (pattern, class) in classes {
        for (start, end) in unicode_ranges(pattern) {
            for cp in start..=end {
                if let Some(slot) = table.get_mut(cp as usize) {
                    *slot = class as u8;
                }
            }
        }
    }
    table[usize::from(b'\r')] = Class::Newline as u8;
    table[usize::from(b'\n')] = Class::Newline as u8;
    table
}

/// The code point ranges of a one-class pattern, empty if it fails to
/// parse (it cannot: the patterns are fixed and tested).
fn unicode_ranges(pattern: &str) -> Vec<(u32, u32)> {
    use regex_syntax::hir::Class as HirClass;
    use regex_syntax::hir::HirKind;
    let Ok(hir) = regex_syntax::Parser::new().parse(pattern) else {
        return Vec::new();
    };
    match hir.kind() {
        HirKind::Class(HirClass::Unicode(class)) => class
            .ranges()
            .iter()
            .map(|r| (u32::from(r.start()), u32::from(r.end())))
            .collect(),
        _ => Vec::new(),
    }
}

/// A cursor over the text with class lookups.
struct Text<'a> {
    s: &'a str,
    bytes: &'a [u8],
    table: &'a [u8],
}

impl<'a> Text<'a> {
    fn new(s: &'a str) -> Self {
        Text {
            s,
            bytes: s.as_bytes(),
            table: table(),
        }
    }

    /// The class and byte length of the character at `i`, which must be a
    /// char boundary below the length.
    #[inline]
    fn at(&self, i: usize) -> (Class, usize) {
        let b = self.bytes[i];
        if b < 0x80 {
            return (Class::from_u8(self.table[usize::from(b)]), 1);
        }
        match self.s[i..].chars().next() {
            Some(c) => (
                Class::from_u8(self.table.get(c as usize).copied().unwrap_or(0)),
                c.len_utf8(),
            ),
            None => (Class::Other, 1),
        }
    }

    /// The char at `i`, if any.
    fn char_at(&self, i: usize) -> Option<char> {
        self.s.get(i..).and_then(|rest| rest.chars().next())
    }

    fn len(&self) -> usize {
        self.bytes.len()
    }

    /// End of the run of characters satisfying `pred` from `i`.
    #[inline]
    fn run(&self, mut i: usize, pred: impl Fn(Class) -> bool) -> usize {
        while i < self.len() {
            let (c, l) = self.at(i);
            if !pred(c) {
                break;
            }
            i += l;
        }
        i
    }

    /// `(?i:'s|'t|'re|'ve|'m|'ll|'d)` at `i`: the end of the contraction, or
    /// `i`. Case-insensitive matching in Unicode mode also folds `ſ` (U+017F)
    /// to `s`.
    fn contraction(&self, i: usize) -> usize {
        if self.bytes.get(i) != Some(&b'\'') {
            return i;
        }
        let j = i + 1;
        let Some(c1) = self.char_at(j) else {
            return i;
        };
        let k = j + c1.len_utf8();
        let lower = |c: char| c.to_ascii_lowercase();
        match c1 {
            's' | 'S' | 'ſ' => return k,
            _ => {}
        }
        match lower(c1) {
            't' | 'm' | 'd' => k,
            'r' | 'v' if self.char_at(k).map(lower) == Some('e') => k + 1,
            'l' if self.char_at(k).map(lower) == Some('l') => k + 1,
            _ => i,
        }
    }

    /// The whitespace run from `i`: its end, the start of its last
    /// character and the end of its last newline, if any.
    fn space_run(&self, i: usize) -> (usize, usize, Option<usize>) {
        let mut p = i;
        let mut last = i;
        let mut newline_end = None;
        while p < self.len() {
            let (c, l) = self.at(p);
            if !c.space() {
                break;
            }
            if c == Class::Newline {
                newline_end = Some(p + l);
            }
            last = p;
            p += l;
        }
        (p, last, newline_end)
    }
}

/// o200k alternative 1 after the optional prefix, from `s`:
/// `[upper-ish]*[lower-ish]+`. Greedy `*` backtracks to the last character
/// that is also lower-ish when the character after the run is not.
fn o200k_upper_then_lower(t: &Text<'_>, s: usize) -> Option<usize> {
    let mut p = s;
    let mut last_lower = None;
    while p < t.len() {
        let (c, l) = t.at(p);
        if !c.upper_ish() {
            break;
        }
        if c.lower_ish() {
            last_lower = Some(p + l);
        }
        p += l;
    }
    if p < t.len() && t.at(p).0.lower_ish() {
        return Some(t.run(p, Class::lower_ish));
    }
    last_lower
}

/// o200k alternative 2 after the optional prefix: `[upper-ish]+[lower-ish]*`.
fn o200k_upper_plus(t: &Text<'_>, s: usize) -> Option<usize> {
    let q = t.run(s, Class::upper_ish);
    (q > s).then(|| t.run(q, Class::lower_ish))
}

/// The end of the o200k piece starting at `i` (< length).
fn o200k_next(t: &Text<'_>, i: usize) -> usize {
    let (c0, l0) = t.at(i);
    let prefixed = c0.prefix() && i + l0 < t.len();
    if prefixed && let Some(e) = o200k_upper_then_lower(t, i + l0) {
        return t.contraction(e);
    }
    if let Some(e) = o200k_upper_then_lower(t, i) {
        return t.contraction(e);
    }
    if prefixed && let Some(e) = o200k_upper_plus(t, i + l0) {
        return t.contraction(e);
    }
    if let Some(e) = o200k_upper_plus(t, i) {
        return t.contraction(e);
    }
    if c0 == Class::Number {
        return number_run(t, i);
    }
    let s = if t.bytes[i] == b' ' { i + 1 } else { i };
    let e = t.run(s, Class::other);
    if e > s {
        let mut p = e;
        while p < t.len() && matches!(t.bytes[p], b'\r' | b'\n' | b'/') {
            p += 1;
        }
        return p;
    }
    if c0.space() {
        let (end, last, newline_end) = t.space_run(i);
        if let Some(n) = newline_end {
            return n;
        }
        if end == t.len() || last > i {
            return if end == t.len() { end } else { last };
        }
        return end;
    }
    i + l0
}

/// `\p{N}{1,3}` from `i`.
fn number_run(t: &Text<'_>, i: usize) -> usize {
    let mut p = i;
    for _ in 0..3 {
        if p >= t.len() {
            break;
        }
        let (c, l) = t.at(p);
        if c != Class::Number {
            break;
        }
        p += l;
    }
    p
}

/// The end of the cl100k piece starting at `i` (< length).
fn cl100k_next(t: &Text<'_>, i: usize) -> usize {
    if t.bytes[i] == b'\'' {
        // `'(?i:[sdmt]|ll|ve|re)`: the same contractions as o200k's.
        let e = t.contraction(i);
        if e > i {
            return e;
        }
    }
    let (c0, l0) = t.at(i);
    // `[^\r\n\p{L}\p{N}]?+\p{L}++`: the prefix, once taken, is kept.
    if c0.prefix() {
        if i + l0 < t.len() && t.at(i + l0).0.letter() {
            return t.run(i + l0, Class::letter);
        }
    } else if c0.letter() {
        return t.run(i, Class::letter);
    }
    if c0 == Class::Number {
        return number_run(t, i);
    }
    let s = if t.bytes[i] == b' ' { i + 1 } else { i };
    let e = t.run(s, Class::other);
    if e > s {
        let mut p = e;
        while p < t.len() && matches!(t.bytes[p], b'\r' | b'\n') {
            p += 1;
        }
        return p;
    }
    if c0.space() {
        let (end, last, newline_end) = t.space_run(i);
        // `\s++$`
        if end == t.len() {
            return end;
        }
        // `\s*[\r\n]`
        if let Some(n) = newline_end {
            return n;
        }
        // `\s+(?!\S)`, else `\s`
        if last > i {
            return last;
        }
        return i + l0;
    }
    i + l0
}

/// Which split pattern to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pattern {
    /// o200k_base (and o200k_harmony).
    O200k,
    /// cl100k_base.
    Cl100k,
}

/// Calls `f` with every piece of `text`, in order.
pub(crate) fn for_each_piece(pattern: Pattern, text: &str, mut f: impl FnMut(&[u8])) {
    let t = Text::new(text);
    let mut i = 0;
    while i < t.len() {
        let end = match pattern {
            Pattern::O200k => o200k_next(&t, i),
            Pattern::Cl100k => cl100k_next(&t, i),
        };
        // Every alternative consumes at least one character; guard anyway.
        let end = end.max(i + 1).min(t.len());
        f(&t.bytes[i..end]);
        i = end;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use proptest::prelude::*;

    use super::*;

    fn ours(pattern: Pattern, text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_piece(pattern, text, |p| {
            out.push(String::from_utf8_lossy(p).into_owned())
        });
        out
    }

    /// Characters from every class the patterns distinguish, weighted
    /// towards the troublesome ones (marks, titlecase, modifier letters,
    /// non-ASCII digits and spaces, contraction letters).
    fn alphabet() -> Vec<char> {
        vec![
            'a', 'z', 'A', 'Z', 'é', 'É', 'ß', 'ǅ', 'ʰ', '中', 'ア', '\u{301}', '\u{94d}', 'क',
            '0', '9', '٣', '½', 'Ⅻ', ' ', ' ', ' ', '\t', '\n', '\r', '\u{a0}', '\u{3000}', '\'',
            's', 't', 'l', 'v', 'e', 'r', 'm', 'd', 'S', 'ſ', '/', '.', ',', '!', '{', '"', '😀',
            '\u{200d}', '-', '_', '\u{85}', '\u{2028}', '\u{1f}',
        ]
    }

    /// Random short strings over [`alphabet`], for differential tests.
    pub(crate) fn arb_text() -> impl Strategy<Value = String> {
        proptest::collection::vec(proptest::sample::select(alphabet()), 0..64)
            .prop_map(|chars| chars.into_iter().collect())
    }

    #[test]
    fn known_splits() {
        assert_eq!(
            ours(Pattern::O200k, "Hello world, it's 12345!\n\n  x"),
            [
                "Hello", " world", ",", " it's", " ", "123", "45", "!\n\n", " ", " x"
            ]
        );
        assert_eq!(
            ours(Pattern::Cl100k, "Hello world, it's 12345!\n\n  x"),
            [
                "Hello", " world", ",", " it", "'s", " ", "123", "45", "!\n\n", " ", " x"
            ]
        );
    }

    proptest! {
        #[test]
        fn pieces_concatenate_to_the_text(text in arb_text()) {
            for pattern in [Pattern::O200k, Pattern::Cl100k] {
                prop_assert_eq!(ours(pattern, &text).concat(), text.clone());
            }
        }
    }
}
