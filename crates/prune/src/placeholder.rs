//! Every string this crate puts in front of a model, as public constants.
//!
//! Templates hold `{name}` slots filled by the functions below; tests
//! compare whole rendered strings, so a change here is a visible change.
//! Every placeholder starts with [`PLACEHOLDER_PREFIX`], which is how a
//! later pass knows a result was already elided and leaves it alone.

/// How every placeholder begins.
pub const PLACEHOLDER_PREFIX: &str = "[abridge: ";

/// An old tool result replaced by pruning. Slot: `{tokens}`.
pub const PRUNED: &str = "[abridge: old tool output pruned, {tokens} tokens removed; the original is kept in the session log]";

/// A file read made stale by a later read of the same file. Slots:
/// `{path}`, `{tokens}`.
pub const SUPERSEDED: &str = "[abridge: stale read of {path}, superseded by a later read of the same file; {tokens} tokens removed]";

/// A result the tool itself flagged as carrying nothing useful.
pub const USELESS: &str = "[abridge: output omitted, the tool marked it as not useful]";

/// Put between the head and the tail of a trimmed result. Slot: `{chars}`.
pub const TRIM_MARKER: &str =
    "\n[abridge: {chars} characters trimmed from the middle of this output]\n";

/// A region moved into an artifact by shake. Slots: `{what}`,
/// `{reference}`, `{tokens}`, `{tool}`.
pub const SHAKEN: &str =
    "[abridge: {what} ({tokens} tokens) moved to {reference}; read it back with the {tool} tool]";

/// An image block moved into an artifact by shake (image policy
/// `record`). Slots: `{what}`, `{reference}`, `{tool}`.
pub const SHAKEN_IMAGE: &str =
    "[abridge: {what} moved to {reference}; read it back with the {tool} tool]";

/// The name of the tool that reads an `artifact://` reference back.
pub const ARTIFACT_TOOL: &str = "read_artifact";

/// The description of that tool, for its [`abridge_llm::ToolSpec`].
pub const ARTIFACT_TOOL_DESCRIPTION: &str = "Read back content that was moved out of the conversation to save context. Pass the artifact:// reference exactly as it appears in the placeholder.";

/// Fills `{name}` slots of a template.
fn fill(template: &str, slots: &[(&str, &str)]) -> String {
    let mut out = template.to_string();
    for (name, value) in slots {
        out = out.replace(&format!("{{{name}}}"), value);
    }
    out
}

/// The [`PRUNED`] placeholder for a result of `tokens` tokens.
pub fn pruned(tokens: u64) -> String {
    fill(PRUNED, &[("tokens", &tokens.to_string())])
}

/// The [`SUPERSEDED`] placeholder for a read of `path`.
pub fn superseded(path: &str, tokens: u64) -> String {
    // The path is data from the log; keep it on one line and short, so
    // the placeholder cannot grow past what it replaces.
    let path = one_line(path, 200);
    fill(
        SUPERSEDED,
        &[("path", &path), ("tokens", &tokens.to_string())],
    )
}

/// The [`TRIM_MARKER`] for `chars` removed characters.
pub fn trim_marker(chars: usize) -> String {
    fill(TRIM_MARKER, &[("chars", &chars.to_string())])
}

/// The [`SHAKEN`] placeholder.
pub fn shaken(what: &str, reference: &str, tokens: u64) -> String {
    fill(
        SHAKEN,
        &[
            ("what", what),
            ("tokens", &tokens.to_string()),
            ("reference", reference),
            ("tool", ARTIFACT_TOOL),
        ],
    )
}

/// The [`SHAKEN_IMAGE`] placeholder.
pub fn shaken_image(what: &str, reference: &str) -> String {
    fill(
        SHAKEN_IMAGE,
        &[
            ("what", what),
            ("reference", reference),
            ("tool", ARTIFACT_TOOL),
        ],
    )
}

/// True when `text` is one of this crate's whole-result placeholders (one
/// line, bracketed), so a later pass leaves it alone.
pub fn is_placeholder(text: &str) -> bool {
    text.starts_with(PLACEHOLDER_PREFIX) && text.ends_with(']') && !text.contains('\n')
}

/// The tool a host registers so the model can follow `artifact://`
/// references (see [`crate::read_reference`]).
pub fn artifact_tool_spec() -> abridge_llm::ToolSpec {
    abridge_llm::ToolSpec {
        name: ARTIFACT_TOOL.to_string(),
        description: ARTIFACT_TOOL_DESCRIPTION.to_string(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "reference": {
                    "type": "string",
                    "description": "An artifact:// reference, for example artifact://0123abcd#0-100"
                }
            },
            "required": ["reference"]
        }),
    }
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
            pruned(1234),
            "[abridge: old tool output pruned, 1234 tokens removed; the original is kept in the session log]"
        );
        assert_eq!(
            superseded("src/a.rs", 77),
            "[abridge: stale read of src/a.rs, superseded by a later read of the same file; 77 tokens removed]"
        );
        assert_eq!(
            USELESS,
            "[abridge: output omitted, the tool marked it as not useful]"
        );
        assert_eq!(
            trim_marker(4000),
            "\n[abridge: 4000 characters trimmed from the middle of this output]\n"
        );
        assert_eq!(
            shaken("tool output", "artifact://0011#0-10", 9),
            "[abridge: tool output (9 tokens) moved to artifact://0011#0-10; read it back with the read_artifact tool]"
        );
        assert_eq!(
            shaken_image("image (image/png, 2x3)", "artifact://0011#10-20"),
            "[abridge: image (image/png, 2x3) moved to artifact://0011#10-20; read it back with the read_artifact tool]"
        );
    }

    #[test]
    fn every_placeholder_is_recognised() {
        for text in [
            pruned(1),
            superseded("a", 1),
            USELESS.to_string(),
            shaken("x", "artifact://0#0-1", 1),
            shaken_image("x", "artifact://0#0-1"),
        ] {
            assert!(is_placeholder(&text), "{text}");
        }
        assert!(!is_placeholder("fn main() {}"));
        assert!(!is_placeholder(&format!("{}\nmore output", pruned(1))));
    }

    #[test]
    fn superseded_path_is_flattened_and_capped() {
        let long = "a/".repeat(300);
        let text = superseded(&format!("x\ny{long}"), 1);
        assert!(!text.contains('\n'));
        assert!(text.chars().count() < SUPERSEDED.len() + 210);
    }
}
