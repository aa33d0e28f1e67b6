//! Every string this crate puts in front of a model, as public constants.
//!
//! Templates hold `{name}` slots filled by the functions below; tests
//! compare whole rendered strings, so a change here is a visible change.
//! Every placeholder starts with [`PLACEHOLDER_PREFIX`], which is how a
//! later pass knows a result was already elided and leaves it alone, and
//! every one that hides something names it by a recall reference
//! (`recall://SEQ`, or `recall://SEQ#START-END` for part of a result) and
//! the [`RECALL_TOOL`] that reads it back.

use abridge_session::Reference;
use abridge_session::Seq;

/// How every placeholder begins.
pub const PLACEHOLDER_PREFIX: &str = "[abridge: ";

/// The tool every placeholder points to: it reads a `recall://`
/// reference back (built in `abridge`'s recall module).
pub const RECALL_TOOL: &str = "recall";

/// An old tool result replaced by pruning. Slots: `{tokens}`,
/// `{reference}` (`recall://SEQ` of the result), `{tool}`.
pub const PRUNED: &str = include_str!("../prompts/placeholder_pruned.txt");

/// An old tool result replaced by `mask` (all but the newest N). Slots:
/// `{tokens}`, `{reference}`, `{tool}`.
pub const MASKED: &str = include_str!("../prompts/placeholder_masked.txt");

/// A file read made stale by a later read of the same file. Slots:
/// `{path}`, `{tokens}`, `{reference}`, `{tool}`.
pub const SUPERSEDED: &str = include_str!("../prompts/placeholder_superseded.txt");

/// A result the tool itself flagged as carrying nothing useful. Slots:
/// `{reference}`, `{tool}`. Shorter than the others: such output is
/// often short itself, and the placeholder must cost less.
pub const USELESS: &str = include_str!("../prompts/placeholder_useless.txt");

/// Put between the head and the tail of a trimmed result. Slot: `{chars}`.
pub const TRIM_MARKER: &str = include_str!("../prompts/placeholder_trim_marker.txt");

/// A region moved out of a result by shake. Slots: `{what}`,
/// `{reference}` (`recall://SEQ#START-END`: characters of the result's
/// text), `{tokens}`, `{tool}`.
pub const SHAKEN: &str = include_str!("../prompts/placeholder_shaken.txt");

/// An image block moved out of a result by shake (image policy
/// `record`). Slots: `{what}`, `{reference}` (`recall://SEQ`: the whole
/// original result), `{tool}`.
pub const SHAKEN_IMAGE: &str = include_str!("../prompts/placeholder_shaken_image.txt");

/// Fills `{name}` slots of a template.
fn fill(template: &str, slots: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (name, value) in slots {
        out = out.replace(&format!("{{{name}}}"), value);
    }
    out
}

/// The [`PRUNED`] placeholder for the result at `seq` of `tokens` tokens.
pub fn pruned(seq: Seq, tokens: u64) -> String {
    with_reference(
        PRUNED,
        Reference::Event(seq),
        &[("tokens", &tokens.to_string())],
    )
}

/// The [`MASKED`] placeholder for the result at `seq` of `tokens` tokens.
pub fn masked(seq: Seq, tokens: u64) -> String {
    with_reference(
        MASKED,
        Reference::Event(seq),
        &[("tokens", &tokens.to_string())],
    )
}

/// The [`SUPERSEDED`] placeholder for the read of `path` at `seq`.
pub fn superseded(seq: Seq, path: &str, tokens: u64) -> String {
    // The path is data from the log; keep it on one line and short, so
    // the placeholder cannot grow past what it replaces.
    let path = one_line(path, 200);
    with_reference(
        SUPERSEDED,
        Reference::Event(seq),
        &[("path", &path), ("tokens", &tokens.to_string())],
    )
}

/// The [`USELESS`] placeholder for the result at `seq`.
pub fn useless(seq: Seq) -> String {
    with_reference(USELESS, Reference::Event(seq), &[])
}

/// The [`TRIM_MARKER`] for `chars` removed characters.
pub fn trim_marker(chars: usize) -> String {
    fill(TRIM_MARKER, &[("chars", &chars.to_string())])
}

/// The [`SHAKEN`] placeholder for a region moved out of a result.
pub fn shaken(what: &str, reference: Reference, tokens: u64) -> String {
    with_reference(
        SHAKEN,
        reference,
        &[("what", what), ("tokens", &tokens.to_string())],
    )
}

/// The [`SHAKEN_IMAGE`] placeholder for an image of a result.
pub fn shaken_image(what: &str, reference: Reference) -> String {
    with_reference(SHAKEN_IMAGE, reference, &[("what", what)])
}

/// Fills `template` with `slots`, the reference and the recall tool's name.
fn with_reference(template: &str, reference: Reference, slots: &[(&str, &str)]) -> String {
    let reference = reference.to_string();
    let mut all = vec![("reference", reference.as_str()), ("tool", RECALL_TOOL)];
    all.extend_from_slice(slots);
    fill(template, &all)
}

/// The recall reference a placeholder carries, or `None` for other text
/// (and for placeholders written before references existed).
pub fn placeholder_reference(text: &str) -> Option<Reference> {
    if !text.starts_with(PLACEHOLDER_PREFIX) {
        return None;
    }
    text.split(|c: char| c.is_whitespace() || c == ']' || c == ';')
        .find(|word| word.starts_with(abridge_session::RECALL_SCHEME))
        .and_then(|word| word.parse().ok())
}

/// True when `text` is one of this crate's whole-result placeholders (one
/// line, bracketed), so a later pass leaves it alone.
pub fn is_placeholder(text: &str) -> bool {
    text.starts_with(PLACEHOLDER_PREFIX) && text.ends_with(']') && !text.contains('\n')
}

fn one_line(text: &str, max_chars: usize) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if flat.chars().count() <= max_chars {
        flat
    } else {
        let mut cut: String = flat.chars().take(max_chars).collect();
        cut.push('…');
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_render_exactly() {
        assert_eq!(
            pruned(17, 1234),
            "[abridge: old tool output (1234 tokens) pruned, kept as recall://17 (the recall tool reads it)]"
        );
        assert_eq!(
            masked(17, 1234),
            "[abridge: older tool output (1234 tokens) masked, kept as recall://17 (the recall tool reads it)]"
        );
        assert_eq!(
            superseded(3, "src/a.rs", 77),
            "[abridge: stale read of src/a.rs (77 tokens), superseded by a later read of the same file; kept as recall://3 (the recall tool reads it)]"
        );
        assert_eq!(
            useless(9),
            "[abridge: output omitted as not useful; recall: recall://9]"
        );
        assert_eq!(
            trim_marker(4000),
            "\n[abridge: 4000 characters trimmed from the middle of this output]\n"
        );
        let part = Reference::Part {
            seq: 11,
            start: 0,
            end: 10,
        };
        assert_eq!(
            shaken("tool output", part, 9),
            "[abridge: tool output (9 tokens) moved to recall://11#0-10 (the recall tool reads it)]"
        );
        assert_eq!(
            shaken_image("image (image/png, 2x3)", Reference::Event(11)),
            "[abridge: image (image/png, 2x3) moved to recall://11 (the recall tool reads it)]"
        );
    }

    #[test]
    fn every_placeholder_is_recognised_and_names_its_reference() {
        let part = Reference::Part {
            seq: 4,
            start: 2,
            end: 8,
        };
        for (text, reference) in [
            (pruned(4, 1), Reference::Event(4)),
            (masked(4, 1), Reference::Event(4)),
            (superseded(4, "a b;c]", 1), Reference::Event(4)),
            (useless(4), Reference::Event(4)),
            (shaken("x", part, 1), part),
            (shaken_image("x", Reference::Event(4)), Reference::Event(4)),
        ] {
            assert!(is_placeholder(&text), "{text}");
            assert_eq!(placeholder_reference(&text), Some(reference), "{text}");
        }
        assert!(!is_placeholder("fn main() {}"));
        assert!(!is_placeholder(&format!("{}\nmore output", pruned(1, 1))));
        assert_eq!(placeholder_reference("see recall://4"), None);
    }

    #[test]
    fn superseded_path_is_flattened_and_capped() {
        let long = "a/".repeat(300);
        let text = superseded(1, &format!("x\ny{long}"), 1);
        assert!(!text.contains('\n'));
        assert!(text.chars().count() < SUPERSEDED.len() + 210);
    }
}
