//! The seam's small shared vocabulary: where a compaction applies
//! ([`Span`]), why it runs ([`Trigger`]) and which files it touched
//! ([`FileOps`]).
//!
//! These types sit below every other module of the crate (plans, methods,
//! events and the service all speak them), so they live on their own and
//! import nothing from the rest of the crate.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::Serialize;

/// An inclusive span of surface positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Span {
    /// First position, inclusive.
    pub start: usize,
    /// Last position, inclusive.
    pub end: usize,
}

impl Span {
    /// Number of positions.
    pub fn len(&self) -> usize {
        self.end + 1 - self.start
    }

    /// Never true: a span holds at least one position. Present for
    /// symmetry with `len`.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// Why a compaction was asked for. Methods and hooks may behave
/// differently per trigger (an overflow wants the most reduction, idle
/// time allows a slow model).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// The context crossed the threshold between turns.
    Threshold,
    /// The context crossed the threshold inside a turn (between tool
    /// calls): the cut will likely split the turn.
    MidTurn,
    /// The provider refused a request as too large.
    Overflow,
    /// The model's answer was cut by the output limit because the context
    /// left too little room.
    IncompleteOutput,
    /// The user is away; there is time for a slow, careful method.
    Idle,
    /// Someone asked (a command, an API call).
    Manual,
}

impl Trigger {
    /// The snake_case name used in events.
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Threshold => "threshold",
            Trigger::MidTurn => "mid_turn",
            Trigger::Overflow => "overflow",
            Trigger::IncompleteOutput => "incomplete_output",
            Trigger::Idle => "idle",
            Trigger::Manual => "manual",
        }
    }
}

/// What a file operation did to a path, for the `<files>` list a
/// checkpoint carries forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileAccess {
    /// Only read.
    Read,
    /// Only written (created, edited, patched).
    Write,
    /// Both.
    ReadWrite,
}

impl FileAccess {
    /// Combines two accesses to the same path.
    pub fn merge(self, other: FileAccess) -> FileAccess {
        if self == other {
            self
        } else {
            FileAccess::ReadWrite
        }
    }

    /// The mark shown in a `<files>` list.
    pub fn mark(self) -> &'static str {
        match self {
            FileAccess::Read => "read",
            FileAccess::Write => "write",
            FileAccess::ReadWrite => "read-write",
        }
    }
}

/// The files a stretch of history touched, cumulative across checkpoints
/// (each checkpoint merges the previous one's), path to access, sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FileOps {
    /// Path to what was done to it.
    pub paths: BTreeMap<String, FileAccess>,
}

impl FileOps {
    /// Records one access.
    pub fn record(&mut self, path: impl Into<String>, access: FileAccess) {
        let path = path.into();
        let merged = match self.paths.get(&path) {
            Some(old) => old.merge(access),
            None => access,
        };
        self.paths.insert(path, merged);
    }

    /// Merges another set into this one.
    pub fn merge(&mut self, other: &FileOps) {
        for (path, access) in &other.paths {
            self.record(path.clone(), *access);
        }
    }

    /// True when no file was touched.
    pub fn is_empty(&self) -> bool {
        self.paths.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_access_merges_to_read_write() {
        let mut ops = FileOps::default();
        ops.record("a.rs", FileAccess::Read);
        ops.record("a.rs", FileAccess::Write);
        ops.record("b.rs", FileAccess::Write);
        assert_eq!(ops.paths["a.rs"], FileAccess::ReadWrite);
        assert_eq!(ops.paths["b.rs"], FileAccess::Write);
        assert_eq!(
            serde_json::to_string(&ops).unwrap(),
            r#"{"a.rs":"read_write","b.rs":"write"}"#
        );
    }
}
