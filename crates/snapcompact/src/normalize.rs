//! Text normalization before printing: what each character becomes on a frame.
//!
//! A frame is a grid of cells, and every cell costs the same pixels. So the
//! text is made to spend cells on meaning: terminal colour codes vanish,
//! indentation and blank lines collapse into one newline glyph (a filled
//! cell, see [`NEWLINE`]) instead of the rest of a row, typographic
//! punctuation and box drawing become the ASCII a model reads best, emoji
//! become short tags, and anything with no visible form becomes `?`.

/// The character that stands for a line break in normalized text. The
/// renderer draws it as a filled cell, so a break costs one cell instead of
/// the rest of a row.
pub(crate) const NEWLINE: char = '\n';

/// The replacement for a character that has no visible form.
pub(crate) const UNPRINTABLE: char = '?';

/// Normalizes `text` for printing. Pure and deterministic: the same input
/// always gives the same output, which keeps frames cacheable by content.
///
/// - ANSI escape sequences (CSI, OSC, two-byte escapes) are removed.
/// - A run of whitespace holding at least one line break becomes one
///   a newline; other whitespace runs (tabs included) become one space.
/// - Typographic punctuation and box drawing fold to ASCII.
/// - Common emoji become short tags like `[ok]`; other pictographs `[emoji]`.
/// - Control characters, private-use and unassigned-looking code points,
///   and zero-width marks become `?` or vanish (joiners and variation
///   selectors vanish, since they only modify a neighbour).
pub fn normalize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    // Pending whitespace: None, Some(false) = spaces only, Some(true) = a break.
    let mut pending: Option<bool> = None;
    while let Some(ch) = chars.next() {
        if ch == '\u{1b}' {
            skip_escape(&mut chars);
            continue;
        }
        if ch.is_whitespace() {
            let is_break = matches!(
                ch,
                '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
            );
            pending = Some(pending.unwrap_or(false) || is_break);
            continue;
        }
        if is_invisible_modifier(ch) {
            continue;
        }
        if let Some(is_break) = pending.take() {
            // Whitespace at the very start is dropped: a frame's first cell
            // should be text.
            if !out.is_empty() {
                out.push(if is_break { NEWLINE } else { ' ' });
            }
        }
        push_folded(ch, &mut out);
    }
    out
}

/// Skips one escape sequence after its ESC.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.peek() {
        Some('[') => {
            chars.next();
            // CSI: parameters and intermediates, ended by a byte in @..~.
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
        Some(']') => {
            chars.next();
            // OSC: ended by BEL or ESC \.
            while let Some(c) = chars.next() {
                if c == '\u{07}' {
                    break;
                }
                if c == '\u{1b}' {
                    if chars.peek() == Some(&'\\') {
                        chars.next();
                    }
                    break;
                }
            }
        }
        Some(_) => {
            chars.next();
        }
        None => {}
    }
}

/// Zero-width characters that only modify a neighbour.
fn is_invisible_modifier(ch: char) -> bool {
    matches!(ch,
        '\u{200b}'..='\u{200f}' | '\u{2060}'..='\u{2064}' | '\u{feff}'
        | '\u{fe00}'..='\u{fe0f}' | '\u{e0100}'..='\u{e01ef}'
        | '\u{1f3fb}'..='\u{1f3ff}' | '\u{e0020}'..='\u{e007f}'
        | '\u{034f}' | '\u{00ad}')
}

fn push_folded(ch: char, out: &mut String) {
    if ch.is_ascii() {
        out.push(if ch.is_ascii_control() {
            UNPRINTABLE
        } else {
            ch
        });
        return;
    }
    if let Some(folded) = fold_punctuation(ch) {
        out.push_str(folded);
        return;
    }
    if let Some(folded) = fold_box_drawing(ch) {
        out.push(folded);
        return;
    }
    if let Some(tag) = emoji_tag(ch) {
        out.push_str(tag);
        return;
    }
    if ch.is_control() || is_private_or_special(ch) {
        out.push(UNPRINTABLE);
        return;
    }
    out.push(ch);
}

fn is_private_or_special(ch: char) -> bool {
    matches!(ch,
        '\u{e000}'..='\u{f8ff}' | '\u{f0000}'..='\u{10ffff}'
        | '\u{fff0}'..='\u{fffd}')
}

/// Typographic punctuation to ASCII.
fn fold_punctuation(ch: char) -> Option<&'static str> {
    Some(match ch {
        '\u{2018}' | '\u{2019}' | '\u{201a}' | '\u{201b}' | '\u{2032}' | '\u{00b4}'
        | '\u{02bc}' => "'",
        '\u{201c}' | '\u{201d}' | '\u{201e}' | '\u{201f}' | '\u{2033}' | '\u{00ab}'
        | '\u{00bb}' => "\"",
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2212}' | '\u{2043}' => "-",
        '\u{2014}' | '\u{2015}' => "--",
        '\u{2026}' => "...",
        '\u{2022}' | '\u{00b7}' | '\u{2219}' | '\u{25cf}' | '\u{25e6}' | '\u{2023}' => "*",
        '\u{2190}' | '\u{27f5}' => "<-",
        '\u{2192}' | '\u{27f6}' | '\u{279c}' | '\u{27a1}' => "->",
        '\u{2194}' => "<->",
        '\u{21d2}' | '\u{27f9}' => "=>",
        '\u{2264}' => "<=",
        '\u{2265}' => ">=",
        '\u{2260}' => "!=",
        '\u{2248}' => "~=",
        '\u{00d7}' => "x",
        '\u{2039}' => "<",
        '\u{203a}' => ">",
        '\u{2713}' | '\u{2714}' => "[ok]",
        '\u{2717}' | '\u{2718}' => "[x]",
        '\u{00a0}' | '\u{2007}' | '\u{202f}' => " ",
        _ => return None,
    })
}

/// Box drawing and block elements to the ASCII that draws the same line.
fn fold_box_drawing(ch: char) -> Option<char> {
    let code = u32::from(ch);
    if !(0x2500..=0x259f).contains(&code) {
        return None;
    }
    Some(match ch {
        '─' | '━' | '┄' | '┅' | '┈' | '┉' | '╌' | '╍' | '═' | '╴' | '╶' | '╸' | '╺' => {
            '-'
        }
        '│' | '┃' | '┆' | '┇' | '┊' | '┋' | '╎' | '╏' | '║' | '╵' | '╷' | '╹' | '╻' => {
            '|'
        }
        '╱' => '/',
        '╲' => '\\',
        '╳' => 'X',
        '\u{2580}'..='\u{259f}' => '#',
        _ => '+',
    })
}

/// Short tags for the pictographs agents and tools print most; any other
/// pictograph becomes `[emoji]`.
fn emoji_tag(ch: char) -> Option<&'static str> {
    let tag = match ch {
        '\u{2705}' | '\u{2611}' | '\u{1f7e2}' => "[ok]",
        '\u{274c}' | '\u{274e}' | '\u{1f534}' => "[x]",
        '\u{26a0}' | '\u{1f7e1}' => "[warn]",
        '\u{2139}' => "[info]",
        '\u{2753}' | '\u{2754}' => "[?]",
        '\u{2757}' | '\u{2755}' => "[!]",
        '\u{1f680}' => "[rocket]",
        '\u{1f41b}' => "[bug]",
        '\u{1f4dd}' => "[memo]",
        '\u{1f4c1}' | '\u{1f4c2}' => "[dir]",
        '\u{1f4c4}' | '\u{1f4c3}' => "[file]",
        '\u{1f50d}' | '\u{1f50e}' => "[search]",
        '\u{1f527}' | '\u{1f6e0}' => "[tool]",
        '\u{1f4a1}' => "[idea]",
        '\u{1f389}' | '\u{1f38a}' => "[party]",
        '\u{1f525}' => "[fire]",
        '\u{2728}' => "[sparkles]",
        '\u{1f44d}' => "[+1]",
        '\u{1f44e}' => "[-1]",
        '\u{1f642}' | '\u{1f600}' | '\u{1f603}' | '\u{1f604}' | '\u{1f60a}' => "[smile]",
        '\u{1f914}' => "[thinking]",
        '\u{23f3}' | '\u{231b}' => "[wait]",
        '\u{1f512}' => "[lock]",
        '\u{1f4e6}' => "[package]",
        '\u{1f9ea}' => "[test]",
        '\u{2b50}' | '\u{1f31f}' => "[star]",
        '\u{2764}' => "[heart]",
        '\u{1f6a8}' => "[alert]",
        '\u{1f4ca}' | '\u{1f4c8}' | '\u{1f4c9}' => "[chart]",
        '\u{1f916}' => "[bot]",
        _ => {
            let code = u32::from(ch);
            let pictograph = (0x1f300..=0x1faff).contains(&code)
                || (0x1f000..=0x1f2ff).contains(&code)
                || (0x2600..=0x27bf).contains(&code);
            return pictograph.then_some("[emoji]");
        }
    };
    Some(tag)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ansi_colour_codes_vanish() {
        assert_eq!(normalize("\u{1b}[1;31merror\u{1b}[0m: bad"), "error: bad");
        assert_eq!(normalize("a\u{1b}]0;title\u{07}b"), "ab");
        assert_eq!(normalize("a\u{1b}]8;;http://x\u{1b}\\b"), "ab");
    }

    #[test]
    fn whitespace_with_a_break_becomes_one_newline_glyph() {
        assert_eq!(
            normalize("fn main() {\n    let x = 1;\n\n\n}"),
            "fn main() {\nlet x = 1;\n}"
        );
        assert_eq!(normalize("a \t  b"), "a b");
        assert_eq!(normalize("a\r\nb"), "a\nb");
        assert_eq!(normalize("\n\n  start"), "start");
    }

    #[test]
    fn punctuation_and_box_drawing_fold_to_ascii() {
        assert_eq!(
            normalize("\u{201c}quoted\u{201d} \u{2014} it\u{2019}s\u{2026}"),
            "\"quoted\" -- it's..."
        );
        assert_eq!(normalize("┌──┐\n│ab│\n└──┘"), "+--+\n|ab|\n+--+");
        assert_eq!(normalize("a → b ≤ c"), "a -> b <= c");
    }

    #[test]
    fn emoji_become_short_tags() {
        assert_eq!(
            normalize("✅ passed ❌ failed 🦀"),
            "[ok] passed [x] failed [emoji]"
        );
        assert_eq!(normalize("👍🏽"), "[+1]");
        assert_eq!(normalize("⚠\u{fe0f} careful"), "[warn] careful");
    }

    #[test]
    fn unprintable_becomes_question_mark() {
        assert_eq!(normalize("a\u{0}b\u{7f}c\u{e000}d"), "a?b?c?d");
        assert_eq!(normalize("zero\u{200b}width"), "zerowidth");
    }

    #[test]
    fn letters_outside_ascii_are_kept() {
        assert_eq!(normalize("café 東京"), "café 東京");
    }

    proptest! {
        #[test]
        fn normalized_text_is_a_fixed_point(text in "\\PC{0,200}") {
            let once = normalize(&text);
            prop_assert_eq!(normalize(&once), once);
        }

        #[test]
        fn normalized_text_has_no_control_or_double_whitespace(text in any::<String>()) {
            let out = normalize(&text);
            prop_assert!(!out.contains("  "));
            prop_assert!(!out.contains("\n\n"));
            prop_assert!(!out.starts_with([' ', '\n']));
            prop_assert!(out.chars().all(|c| c == NEWLINE || !c.is_control()));
            prop_assert!(out.chars().all(|c| c == NEWLINE || c == ' ' || !c.is_whitespace()));
        }
    }
}
