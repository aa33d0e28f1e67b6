//! Finding PEM private keys: a scanner rather than a regular expression,
//! because a block is delimited by a `BEGIN` line and an `END` line that
//! may be far apart, may be missing (a tool output cut in the middle), and
//! may repeat; a scanner that remembers the next `END` it found keeps the
//! whole text linear however many `BEGIN` lines there are.

use std::ops::Range;

const BEGIN: &str = "-----BEGIN ";
const END: &str = "-----END ";
const DASHES: &str = "-----";
const LABEL_TAIL: &str = "PRIVATE KEY";

/// The label of a marker starting at `at` (just after `BEGIN `/`END `):
/// upper-case words ending in `PRIVATE KEY`, then five dashes. Returns the
/// end of the marker.
fn marker_end(text: &str, at: usize) -> Option<usize> {
    let rest = &text[at..];
    // Labels are short: look no further than this for the closing dashes,
    // so a marker without them costs a bounded scan.
    let window = &rest.as_bytes()[..rest.len().min(80)];
    let close = window
        .windows(DASHES.len())
        .position(|w| w == DASHES.as_bytes())?;
    let label = &rest[..close];
    let words_ok = label
        .bytes()
        .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' ');
    (words_ok && label.ends_with(LABEL_TAIL) && label.len() <= 64)
        .then_some(at + close + DASHES.len())
}

/// The next `BEGIN … PRIVATE KEY-----` marker at or after `from`, as its
/// start and end.
fn next_begin(text: &str, mut from: usize) -> Option<(usize, usize)> {
    while let Some(found) = text.get(from..)?.find(BEGIN) {
        let start = from + found;
        if let Some(end) = marker_end(text, start + BEGIN.len()) {
            return Some((start, end));
        }
        from = start + BEGIN.len();
    }
    None
}

/// The next `END … PRIVATE KEY-----` marker at or after `from`.
fn next_end(text: &str, mut from: usize) -> Option<(usize, usize)> {
    while let Some(found) = text.get(from..)?.find(END) {
        let start = from + found;
        if let Some(end) = marker_end(text, start + END.len()) {
            return Some((start, end));
        }
        from = start + END.len();
    }
    None
}

/// Whether a line could belong to a key body: base64 (possibly with
/// escaped line breaks, when the key sits inside a JSON string) or an
/// encrypted key's header line.
fn key_like(line: &str) -> bool {
    let line = line.trim();
    line.starts_with("Proc-Type:")
        || line.starts_with("DEK-Info:")
        || (!line.is_empty() && line.bytes().all(key_byte))
}

/// Bytes a key body is written with: base64, plus the backslash of an
/// escaped line break when the key sits inside a JSON string.
fn key_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'\\')
}

/// Where an unterminated block ends: the key bytes left on its `BEGIN`
/// line (an escaped key goes on there), then, if that line held nothing
/// else, the key-like lines after it (blank lines between them included).
fn unterminated_end(text: &str, marker_end: usize) -> usize {
    let rest = &text[marker_end..];
    let first_line = rest.split('\n').next().unwrap_or_default();
    let on_line = first_line.bytes().take_while(|b| key_byte(*b)).count();
    if !first_line[on_line..].trim().is_empty() {
        return marker_end + on_line;
    }
    let mut end = marker_end + on_line;
    let mut at = marker_end;
    for (index, line) in rest.split_inclusive('\n').enumerate() {
        let body = line.trim_end_matches(['\r', '\n']);
        if index > 0 && !body.trim().is_empty() {
            if !key_like(body) {
                break;
            }
            end = at + body.len();
        }
        at += line.len();
    }
    end
}

/// The byte ranges of every private key block in `text`, in order and
/// disjoint.
pub(crate) fn private_key_ranges(text: &str) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut from = 0;
    // The next END marker found, remembered so that many BEGIN markers
    // without one do not each search the rest of the text again.
    let mut cached_end: Option<Option<(usize, usize)>> = None;
    while let Some((start, begin_end)) = next_begin(text, from) {
        let end_marker = match cached_end {
            Some(Some((s, _))) if s >= begin_end => cached_end.flatten(),
            Some(None) => None,
            _ => {
                let found = next_end(text, begin_end);
                cached_end = Some(found);
                found
            }
        };
        let following_begin = next_begin(text, begin_end).map(|(s, _)| s);
        let end = match end_marker {
            Some((s, e)) if following_begin.is_none_or(|b| b > s) => e,
            _ => unterminated_end(text, begin_end),
        };
        ranges.push(start..end);
        from = end.max(begin_end);
    }
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(text: &str) -> Vec<&str> {
        private_key_ranges(text)
            .into_iter()
            .map(|r| &text[r])
            .collect()
    }

    #[test]
    fn finds_whole_blocks_of_any_type() {
        let text = "a\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\nAAAA\n-----END OPENSSH PRIVATE KEY-----\nz";
        assert_eq!(
            cut(text),
            [
                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\nAAAA\n-----END OPENSSH PRIVATE KEY-----"
            ]
        );
        let rsa = "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----";
        assert_eq!(cut(rsa), [rsa]);
        let pkcs8 = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----";
        assert_eq!(cut(pkcs8), [pkcs8]);
    }

    #[test]
    fn public_keys_and_certificates_are_left_alone() {
        let text = "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----\n-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----";
        assert!(cut(text).is_empty());
    }

    #[test]
    fn an_unterminated_block_takes_its_key_lines_and_stops_at_prose() {
        let text = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\nMIIEow==\nAQAB\nthe file was cut here.\n";
        assert_eq!(
            cut(text),
            ["-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n\nMIIEow==\nAQAB"]
        );
        let escaped = r#"{"key": "-----BEGIN EC PRIVATE KEY-----\nMHcCAQ\nAoGB"}"#;
        assert_eq!(
            cut(escaped),
            [r"-----BEGIN EC PRIVATE KEY-----\nMHcCAQ\nAoGB"]
        );
    }

    #[test]
    fn a_begin_without_end_does_not_swallow_the_next_block() {
        let text = "-----BEGIN RSA PRIVATE KEY-----\nAAAA\na note.\n-----BEGIN EC PRIVATE KEY-----\nBBBB\n-----END EC PRIVATE KEY-----\nafter";
        assert_eq!(
            cut(text),
            [
                "-----BEGIN RSA PRIVATE KEY-----\nAAAA",
                "-----BEGIN EC PRIVATE KEY-----\nBBBB\n-----END EC PRIVATE KEY-----"
            ]
        );
    }
}
