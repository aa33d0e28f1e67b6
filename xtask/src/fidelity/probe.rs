//! What the benchmark asks: a probe is one fact of the hidden span, in one
//! category, with the words a model would search for it by.

use std::fmt;

/// The kinds of fact a checkpoint should keep (issue 32's list).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Category {
    /// The first and the latest request the user typed.
    Task,
    /// The user's imperative sentences and injected instruction files.
    Constraints,
    /// Every path a tool call wrote.
    FilesChanged,
    /// Every path a tool call read.
    FilesRead,
    /// The last failing command and the line that says why.
    LastError,
    /// Commands that build or test.
    Commands,
    /// Names defined in what the agent wrote (functions, types, tests).
    Identifiers,
    /// Work not finished: the latest request when its turn had not ended,
    /// and plan items not marked done.
    OpenItems,
}

impl Category {
    /// Every category, in the order tables print them.
    pub(crate) const ALL: [Category; 8] = [
        Category::Task,
        Category::Constraints,
        Category::FilesChanged,
        Category::FilesRead,
        Category::LastError,
        Category::Commands,
        Category::Identifiers,
        Category::OpenItems,
    ];

    /// The column heading.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Category::Task => "task",
            Category::Constraints => "constraints",
            Category::FilesChanged => "files changed",
            Category::FilesRead => "files read",
            Category::LastError => "last error",
            Category::Commands => "build/test",
            Category::Identifiers => "identifiers",
            Category::OpenItems => "open items",
        }
    }
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// One fact to look for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Probe {
    /// Which kind of fact.
    pub(crate) category: Category,
    /// The fact as it appeared, clipped; what a reader of the table sees.
    pub(crate) text: String,
    /// The fact [`normalise`]d and clipped to [`NEEDLE_CHARS`]: what must
    /// occur in the context.
    pub(crate) needle: String,
}

/// Normalised characters a probe must match. Long enough that a match is
/// not chance; short enough that a summary quoting the start of a request
/// still counts.
pub(crate) const NEEDLE_CHARS: usize = 60;

/// Shortest needle kept: under this a match is chance (`main`, `src`).
pub(crate) const MIN_NEEDLE_CHARS: usize = 5;

impl Probe {
    /// A probe of `text`, or `None` when its needle would be too short to
    /// mean anything.
    pub(crate) fn new(category: Category, text: &str) -> Option<Probe> {
        Probe::with_needle(category, text, text)
    }

    /// A probe of a file path: its needle is the last two components
    /// (`parse/list.rs`), since a summary names a file relative to the
    /// project, and the absolute prefix is the same for every file.
    pub(crate) fn path(category: Category, path: &str) -> Option<Probe> {
        let tail: Vec<&str> = path.rsplit(['/', '\\']).take(2).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        Probe::with_needle(category, path, &tail.join("/"))
    }

    fn with_needle(category: Category, text: &str, matched: &str) -> Option<Probe> {
        // A redacted sample's markers are not facts.
        if text.contains("[REDACTED_") {
            return None;
        }
        let needle: String = normalise(matched).chars().take(NEEDLE_CHARS).collect();
        (needle.chars().count() >= MIN_NEEDLE_CHARS).then(|| Probe {
            category,
            text: text.chars().take(120).collect(),
            needle,
        })
    }

    /// The words to ask the recall tool for: the probe's longest words,
    /// up to four (a model searching for a fact names its rare words).
    pub(crate) fn query(&self) -> String {
        let mut words: Vec<&str> = self
            .text
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| w.chars().count() >= 3)
            .collect();
        words.sort_by_key(|w| std::cmp::Reverse(w.chars().count()));
        words.dedup();
        words.truncate(4);
        words.join(" ")
    }
}

/// Letters and digits only, lower case: the match ignores case, spaces,
/// punctuation and markup, so a fact quoted in a list, in backticks or
/// across a line break still counts.
pub(crate) fn normalise(text: &str) -> String {
    text.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn needles_ignore_case_and_punctuation_and_are_clipped() {
        let probe = Probe::new(Category::Task, "Fix `parse_list()` in src/Parse.rs!").unwrap();
        assert_eq!(probe.needle, "fixparselistinsrcparsers");
        let long = "word ".repeat(40);
        assert_eq!(
            Probe::new(Category::Task, &long).unwrap().needle.len(),
            NEEDLE_CHARS
        );
        assert!(Probe::new(Category::FilesRead, "a/b").is_none());
        assert!(Probe::new(Category::Task, "[REDACTED_TEXT len=32 sha=8]").is_none());
    }

    #[test]
    fn a_paths_needle_is_its_last_two_components() {
        let probe = Probe::path(Category::FilesChanged, "/home/u/app/lib/parse/list.ex").unwrap();
        assert_eq!(probe.needle, "parselistex");
        assert_eq!(probe.text, "/home/u/app/lib/parse/list.ex");
    }

    #[test]
    fn the_query_is_the_longest_words() {
        let probe = Probe::new(
            Category::LastError,
            "error[E0308]: mismatched types in parse_frame_header",
        )
        .unwrap();
        assert_eq!(probe.query(), "parse_frame_header mismatched error E0308");
    }
}
