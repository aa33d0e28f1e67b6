//! Recall references: short, stable names for what compaction hid.
//!
//! Compaction never deletes: a checkpoint's `replace` lists the seqs it
//! hides, a rewrite keeps the original event. A reference names those
//! originals by seq, so it survives reopening the log, later compactions
//! (seqs never change) and branch navigation (a seq names one event
//! whatever branch is active). Every placeholder and checkpoint that hides
//! something carries one, and one tool (`recall`) reads all of them.
//!
//! Three forms, all under [`SCHEME`]:
//!
//! - `recall://17`: the event at seq 17 (a hidden message, or the original
//!   of a rewritten tool result).
//! - `recall://17-42`: the messages with seqs 17 to 42 on the branch that
//!   hid them (what one checkpoint replaced).
//! - `recall://17#120-480`: characters 120 to 480 (end exclusive) of the
//!   text of the event at seq 17 (a block moved out of a tool result).

use std::fmt;
use std::str::FromStr;

use crate::event::Seq;

/// The prefix every recall reference starts with.
pub const SCHEME: &str = "recall://";

/// The line a checkpoint carries to name what it hides
/// (prompts/checkpoint_reference.md). Slot: `{reference}`. It lives here,
/// beside [`Reference`], because checkpoints are written both by the
/// compaction seam and by importers, and both must read the same.
pub const HIDDEN_NOTE: &str = include_str!("../prompts/checkpoint_reference.md");

/// What a reference names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reference {
    /// One event.
    Event(Seq),
    /// The messages with seqs `first..=last` on one branch.
    Range {
        /// The first seq, inclusive.
        first: Seq,
        /// The last seq, inclusive.
        last: Seq,
    },
    /// Characters `start..end` of one event's text.
    Part {
        /// The event.
        seq: Seq,
        /// The first character, inclusive.
        start: usize,
        /// The end, exclusive.
        end: usize,
    },
}

/// Why a string is not a recall reference, said so a model can correct
/// itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{text:?} is not a recall reference: {reason} (expected recall://SEQ, recall://FIRST-LAST or recall://SEQ#START-END)"
)]
pub struct ReferenceError {
    /// What was given.
    pub text: String,
    /// What is wrong with it.
    pub reason: String,
}

impl Reference {
    /// The range `first..=last`, or the single event when they are equal.
    pub fn range(first: Seq, last: Seq) -> Self {
        if first == last {
            Reference::Event(first)
        } else {
            Reference::Range {
                first: first.min(last),
                last: first.max(last),
            }
        }
    }

    /// The [`HIDDEN_NOTE`] line naming this reference, as a checkpoint
    /// shows it to the model.
    pub fn hidden_note(&self) -> String {
        HIDDEN_NOTE
            .trim_end()
            .replace("{reference}", &self.to_string())
    }

    /// The reference a [`HIDDEN_NOTE`] line names, or `None` when `text`
    /// is not such a line.
    pub fn in_hidden_note(text: &str) -> Option<Self> {
        let (before, after) = HIDDEN_NOTE.trim_end().split_once("{reference}")?;
        let inner = text.strip_prefix(before)?.strip_suffix(after)?;
        inner.parse().ok()
    }

    /// The seqs it spans, first and last inclusive.
    pub fn seqs(&self) -> (Seq, Seq) {
        match *self {
            Reference::Event(seq) | Reference::Part { seq, .. } => (seq, seq),
            Reference::Range { first, last } => (first, last),
        }
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reference::Event(seq) => write!(f, "{SCHEME}{seq}"),
            Reference::Range { first, last } => write!(f, "{SCHEME}{first}-{last}"),
            Reference::Part { seq, start, end } => write!(f, "{SCHEME}{seq}#{start}-{end}"),
        }
    }
}

impl FromStr for Reference {
    type Err = ReferenceError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |reason: &str| ReferenceError {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let body = text
            .trim()
            .strip_prefix(SCHEME)
            .ok_or_else(|| bad("it does not start with recall://"))?;
        let number = |s: &str, what: &str| -> Result<u64, ReferenceError> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad(&format!("{what} {s:?} is not a number")));
            }
            s.parse::<u64>()
                .map_err(|_| bad(&format!("{what} {s:?} is too large")))
        };
        if let Some((seq, part)) = body.split_once('#') {
            let seq = number(seq, "the seq")?;
            let (start, end) = part
                .split_once('-')
                .ok_or_else(|| bad("the part after # must be START-END"))?;
            let start = number(start, "the start")? as usize;
            let end = number(end, "the end")? as usize;
            if end <= start {
                return Err(bad("the part's end must be after its start"));
            }
            return Ok(Reference::Part { seq, start, end });
        }
        if let Some((first, last)) = body.split_once('-') {
            let first = number(first, "the first seq")?;
            let last = number(last, "the last seq")?;
            if last < first {
                return Err(bad("the last seq comes before the first"));
            }
            return Ok(Reference::range(first, last));
        }
        Ok(Reference::Event(number(body, "the seq")?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_round_trips() {
        for reference in [
            Reference::Event(7),
            Reference::Range { first: 3, last: 90 },
            Reference::Part {
                seq: 12,
                start: 0,
                end: 400,
            },
        ] {
            let text = reference.to_string();
            assert_eq!(text.parse::<Reference>().unwrap(), reference, "{text}");
        }
        assert_eq!(Reference::range(5, 5), Reference::Event(5));
        assert_eq!("recall://9-9".parse(), Ok(Reference::Event(9)));
    }

    #[test]
    fn the_hidden_note_names_its_reference_and_parses_back() {
        let reference = Reference::range(4, 19);
        let note = reference.hidden_note();
        assert!(note.starts_with("[hidden: recall://4-19]"), "{note}");
        assert!(note.contains("`recall` tool"), "{note}");
        assert!(!note.contains('\n'));
        assert_eq!(Reference::in_hidden_note(&note), Some(reference));
        assert_eq!(Reference::in_hidden_note("## Goal"), None);
    }

    #[test]
    fn bad_references_say_what_is_wrong() {
        let cases = [
            ("artifact://x", "it does not start with recall://"),
            ("recall://", "the seq \"\" is not a number"),
            ("recall://9-3", "the last seq comes before the first"),
            ("recall://4#9-2", "the part's end must be after its start"),
            ("recall://4#9", "the part after # must be START-END"),
            ("recall://-1", "the first seq \"\" is not a number"),
        ];
        for (text, reason) in cases {
            let error = text.parse::<Reference>().unwrap_err();
            assert_eq!(error.reason, reason, "{text}");
            assert!(error.to_string().contains("expected recall://SEQ"));
        }
    }
}
