//! Splitting text into search terms.
//!
//! A word is a run of letters, digits and underscores. Each word is kept
//! whole (lower-cased), so a rare identifier such as `parse_frame_header`
//! matches exactly and ranks high; when it has parts (snake_case pieces,
//! camelCase humps, a switch between letters and digits) the parts are
//! kept too, so `frame` also finds it.

/// Words longer than this are skipped: base64, hashes and minified code
/// would fill the index with terms nobody searches for.
pub(super) const MAX_TERM_BYTES: usize = 64;

/// How much a piece of a compound query word counts against the whole
/// word: `color_index` should rank the message holding that identifier
/// above one that merely says "color" and "index" many times.
pub(super) const PIECE_WEIGHT: f32 = 0.25;

/// Calls `emit` with every term of `text`, in order, and whether it is a
/// whole word (`true`) or a piece of one; a term may repeat.
pub(super) fn terms(text: &str, mut emit: impl FnMut(&str, bool)) {
    let mut whole = String::new();
    let mut piece = String::new();
    for word in text.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        let word = word.trim_matches('_');
        if word.is_empty() || word.len() > MAX_TERM_BYTES {
            continue;
        }
        whole.clear();
        whole.extend(word.chars().flat_map(char::to_lowercase));
        emit(&whole, true);
        if !has_parts(word) {
            continue;
        }
        pieces(word, &mut piece, &mut emit);
    }
}

/// Whether `word` splits into more than one piece.
fn has_parts(word: &str) -> bool {
    let mut chars = word.chars().peekable();
    let mut previous: Option<char> = None;
    while let Some(c) = chars.next() {
        if let Some(p) = previous
            && boundary(p, c, chars.peek().copied())
        {
            return true;
        }
        previous = Some(c);
    }
    false
}

/// A piece ends between `p` and `c` (`next` decides `HTTPServer`: the
/// boundary falls before the `S` because an `e` follows it).
fn boundary(p: char, c: char, next: Option<char>) -> bool {
    c == '_'
        || p == '_'
        || (p.is_lowercase() && c.is_uppercase())
        || (p.is_alphabetic() != c.is_alphabetic())
        || (p.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase))
}

fn pieces(word: &str, buffer: &mut String, emit: &mut impl FnMut(&str, bool)) {
    let chars: Vec<char> = word.chars().collect();
    buffer.clear();
    for (i, &c) in chars.iter().enumerate() {
        if i > 0 && boundary(chars[i - 1], c, chars.get(i + 1).copied()) && !buffer.is_empty() {
            emit(buffer, false);
            buffer.clear();
        }
        if c != '_' {
            buffer.extend(c.to_lowercase());
        }
    }
    if !buffer.is_empty() {
        emit(buffer, false);
    }
}

/// The distinct terms of a query with their weights (1 for a whole word,
/// a quarter for a piece; a term that is both keeps the larger), in
/// first-seen order.
pub fn query_terms(query: &str) -> Vec<(String, f32)> {
    let mut out: Vec<(String, f32)> = Vec::new();
    terms(query, |term, whole| {
        let weight = if whole { 1.0 } else { PIECE_WEIGHT };
        match out.iter_mut().find(|(t, _)| t == term) {
            Some((_, w)) => *w = w.max(weight),
            None => out.push((term.to_string(), weight)),
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        terms(text, |t, _| out.push(t.to_string()));
        out
    }

    #[test]
    fn identifiers_are_kept_whole_and_in_pieces() {
        assert_eq!(
            all("parse_frame_header(x)"),
            ["parse_frame_header", "parse", "frame", "header", "x"]
        );
        assert_eq!(all("HTTPServer"), ["httpserver", "http", "server"]);
        assert_eq!(all("readFile2"), ["readfile2", "read", "file", "2"]);
        assert_eq!(all("__init__ plain"), ["init", "plain"]);
        assert_eq!(all("a.b-c"), ["a", "b", "c"]);
    }

    #[test]
    fn long_words_are_skipped_and_queries_deduplicated() {
        assert!(all(&"x".repeat(MAX_TERM_BYTES + 1)).is_empty());
        assert_eq!(
            query_terms("Foo foo_bar bar"),
            [
                ("foo".into(), 1.0),
                ("foo_bar".into(), 1.0),
                ("bar".into(), 1.0)
            ]
        );
        assert_eq!(query_terms("x_y")[1], ("x".into(), PIECE_WEIGHT));
    }
}
