//! Finding fenced code blocks and top-level XML blocks in one text block.
//!
//! A region never leaves the text it was found in (so never crosses a
//! message boundary), and an unclosed fence or element is not a region.

use std::ops::Range;

/// What kind of block a region is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RegionKind {
    /// A Markdown fence, with its info string (`rust`, or empty).
    Fence(String),
    /// An XML element starting at the beginning of a line, with its tag.
    Xml(String),
}

impl RegionKind {
    /// How a placeholder names the region.
    pub(crate) fn describe(&self) -> String {
        match self {
            RegionKind::Fence(info) if info.is_empty() => "fenced code block".to_string(),
            RegionKind::Fence(info) => format!("fenced {info} code block"),
            RegionKind::Xml(tag) => format!("<{tag}> block"),
        }
    }
}

/// A block found in a text: its byte range and kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Region {
    pub(crate) range: Range<usize>,
    pub(crate) kind: RegionKind,
}

/// Lines of `text` with their byte offsets, newline excluded.
fn lines(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        out.push((start, line.strip_suffix('\n').unwrap_or(line)));
        start += line.len();
    }
    out
}

/// The fence opened by `line`: its character and length, and info string.
fn fence_open(line: &str) -> Option<(char, usize, String)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let mark = rest.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let count = rest.chars().take_while(|c| *c == mark).count();
    if count < 3 {
        return None;
    }
    let info = rest[count..].trim();
    if mark == '`' && info.contains('`') {
        return None;
    }
    let info = info.split_whitespace().next().unwrap_or("").to_string();
    Some((mark, count, info))
}

fn fence_closes(line: &str, mark: char, count: usize) -> bool {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return false;
    }
    let rest = &line[indent..];
    let run = rest.chars().take_while(|c| *c == mark).count();
    run >= count && rest[run * mark.len_utf8()..].trim().is_empty()
}

/// The tag of an element opened at the start of `line` (not self-closing).
fn xml_open(line: &str) -> Option<String> {
    let rest = line.strip_prefix('<')?;
    let first = rest.chars().next()?;
    if !(first.is_ascii_alphabetic() || first == '_') {
        return None;
    }
    let name_len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || "_-.:".contains(c)))
        .unwrap_or(rest.len());
    let name = &rest[..name_len];
    let after = &rest[name_len..];
    let next = after.chars().next()?;
    if !(next == '>' || next.is_whitespace()) {
        return None;
    }
    let tag_end = after.find('>')?;
    if after[..tag_end].ends_with('/') {
        return None;
    }
    Some(name.to_string())
}

/// Byte offset (in `line`) just past the `</tag>` that closes depth 1,
/// updating `depth` for nested elements of the same tag.
fn xml_scan(line: &str, tag: &str, depth: &mut usize, skip: usize) -> Option<usize> {
    let open = format!("<{tag}");
    let close = format!("</{tag}>");
    let mut at = skip;
    while at < line.len() {
        let rest = &line[at..];
        let next_open = rest.find(&open).filter(|i| {
            rest[i + open.len()..]
                .chars()
                .next()
                .is_some_and(|c| c == '>' || c.is_whitespace())
        });
        let next_close = rest.find(&close);
        match (next_open, next_close) {
            (Some(o), Some(c)) if o < c => {
                *depth += 1;
                at += o + open.len();
            }
            (_, Some(c)) => {
                *depth -= 1;
                at += c + close.len();
                if *depth == 0 {
                    return Some(at);
                }
            }
            (Some(o), None) => {
                *depth += 1;
                at += o + open.len();
            }
            (None, None) => break,
        }
    }
    None
}

/// Every top-level fenced or XML block of `text`, in order, not
/// overlapping.
pub(crate) fn find_regions(text: &str) -> Vec<Region> {
    let lines = lines(text);
    let mut regions = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        let (start, line) = lines[index];
        if let Some((mark, count, info)) = fence_open(line) {
            let close = (index + 1..lines.len()).find(|j| fence_closes(lines[*j].1, mark, count));
            if let Some(j) = close {
                let (close_start, close_line) = lines[j];
                regions.push(Region {
                    range: start..close_start + close_line.len(),
                    kind: RegionKind::Fence(info),
                });
                index = j + 1;
                continue;
            }
        } else if let Some(tag) = xml_open(line) {
            let mut depth = 1;
            // Skip past the opening `<tag` itself.
            let mut end = xml_scan(line, &tag, &mut depth, tag.len() + 1).map(|e| (index, e));
            let mut j = index + 1;
            while end.is_none() && j < lines.len() {
                end = xml_scan(lines[j].1, &tag, &mut depth, 0).map(|e| (j, e));
                j += 1;
            }
            if let Some((j, offset)) = end {
                regions.push(Region {
                    range: start..lines[j].0 + offset,
                    kind: RegionKind::Xml(tag),
                });
                index = j + 1;
                continue;
            }
        }
        index += 1;
    }
    regions
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(&str, RegionKind)> {
        find_regions(text)
            .into_iter()
            .map(|r| (&text[r.range], r.kind))
            .collect()
    }

    #[test]
    fn fences_with_and_without_info() {
        let text = "intro\n```rust\nfn a() {}\n```\nmid\n~~~~\nx\n~~~\n~~~~\nend";
        assert_eq!(
            found(text),
            vec![
                ("```rust\nfn a() {}\n```", RegionKind::Fence("rust".into())),
                ("~~~~\nx\n~~~\n~~~~", RegionKind::Fence(String::new())),
            ]
        );
    }

    #[test]
    fn unclosed_fence_is_not_a_region() {
        assert_eq!(found("```\nno end\n"), vec![]);
    }

    #[test]
    fn top_level_xml_blocks_with_nesting() {
        let text = "<doc a=\"1\">\n<doc>inner</doc>\n</doc> tail\n<br/>\n<x>one line</x>\n  <indented>\n</indented>\n";
        assert_eq!(
            found(text),
            vec![
                (
                    "<doc a=\"1\">\n<doc>inner</doc>\n</doc>",
                    RegionKind::Xml("doc".into())
                ),
                ("<x>one line</x>", RegionKind::Xml("x".into())),
            ]
        );
    }

    #[test]
    fn xml_inside_a_fence_is_not_top_level() {
        let text = "```\n<a>\n</a>\n```";
        assert_eq!(found(text), vec![(text, RegionKind::Fence(String::new()))]);
    }

    #[test]
    fn unclosed_xml_is_not_a_region() {
        assert_eq!(found("<a>\nno end"), vec![]);
        assert_eq!(found("<3 hearts\n"), vec![]);
    }
}
