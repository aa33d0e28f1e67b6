//! How project-instruction sections of a system prompt are recognised:
//! the markers that open and close them and the conventions known by
//! default. Both the inline configuration (which carries the markers) and
//! the instruction imager (which applies them) read this module.

/// Where a section that a [`SectionMarker`] opened ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SectionEnd {
    /// Just after the first occurrence of this string after the opening
    /// line. Without one the text is not taken as a section (a wrapper that
    /// never closes may not be what it seems).
    Close(String),
    /// Before the first later line, outside ```` ``` ```` fences, that
    /// starts with one of these prefixes or opens another section; else at
    /// the end of the text block. Trailing blank lines stay outside.
    BeforeLine(Vec<String>),
}

/// How a project-instruction section is recognised: a line starting with
/// `start` (and containing `line_contains`, when set) opens it; `end`
/// closes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionMarker {
    /// Prefix of the opening line, compared exactly at the line's start.
    pub start: String,
    /// Text the opening line must also contain, to tell an instruction
    /// header from ordinary prose that starts the same way.
    pub line_contains: Option<String>,
    /// Where the section ends.
    pub end: SectionEnd,
}

impl SectionMarker {
    /// Whether `line` opens a section of this kind.
    pub(crate) fn opens(&self, line: &str) -> bool {
        line.starts_with(&self.start)
            && self
                .line_contains
                .as_ref()
                .is_none_or(|needle| line.contains(needle.as_str()))
    }
}

/// The conventions recognised by default, in the order tried:
///
/// | opening line | end | where it comes from |
/// |---|---|---|
/// | `# AGENTS.md instructions for <dir>` | `</INSTRUCTIONS>` | Codex CLI: each AGENTS.md is injected as this heading followed by an `<INSTRUCTIONS>` ... `</INSTRUCTIONS>` block. |
/// | `Contents of <path> (... instructions ...):` | next `Contents of ` line, or a line starting `</` | Claude Code: each CLAUDE.md (project, local, user) is injected as `Contents of <path> (project instructions, checked into the codebase):` and a blank line, then the file; the files follow one another and the block may close a `<system-reminder>` wrapper. Memory files (`(user's auto-memory ...)`) are not instructions and are left alone. |
/// | `Instructions from: <path>` | next such line | opencode: each AGENTS.md/CLAUDE.md or configured instruction file is one system string starting with this line. |
/// | `<project_instructions` | `</project_instructions>` | generic XML-style wrapper used by hand-written harnesses; no single source. |
/// | `<instructions` | `</instructions>` | generic, as above (for example `<instructions path="...">`). |
/// | `# AGENTS.md`, `# CLAUDE.md`, `# .cursorrules`, `# Project instructions` | next level-1 heading (`# `) | a Markdown heading naming the file, as harnesses that paste a file under its name do; no single source. |
pub(crate) fn default_markers() -> Vec<SectionMarker> {
    let close = |start: &str, close: &str| SectionMarker {
        start: start.to_string(),
        line_contains: None,
        end: SectionEnd::Close(close.to_string()),
    };
    let before = |start: &str, contains: Option<&str>, stops: &[&str]| SectionMarker {
        start: start.to_string(),
        line_contains: contains.map(str::to_string),
        end: SectionEnd::BeforeLine(stops.iter().map(|s| (*s).to_string()).collect()),
    };
    vec![
        close("# AGENTS.md instructions for ", "</INSTRUCTIONS>"),
        before(
            "Contents of ",
            Some("instructions"),
            &["Contents of ", "</"],
        ),
        before("Instructions from: ", None, &["Instructions from: "]),
        close("<project_instructions", "</project_instructions>"),
        close("<instructions", "</instructions>"),
        before("# AGENTS.md", None, &["# "]),
        before("# CLAUDE.md", None, &["# "]),
        before("# .cursorrules", None, &["# "]),
        before("# Project instructions", None, &["# "]),
    ]
}
