//! What a torn tail is, told to readers, writers and `repair` alike: a
//! leaf of the crate, so the store and its errors both name it.

/// The suffix of the sidecar a torn tail is set aside in, before its
/// number: `<file>.torn-N`.
pub const TORN_SUFFIX: &str = ".torn-";

/// The end of a log that a crash cut short: an unterminated last line
/// that does not parse, or a batch whose lines end before its
/// `"batch":N` said, from the batch's first line to the end of the file.
/// It is not part of the log (a batch lands whole or not at all), and it
/// stays on disk until `JsonlStore::set_aside_torn` moves it aside.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TornTail {
    /// The 1-based line where it starts.
    pub line: u64,
    /// Its length in bytes, to the end of the file.
    pub bytes: u64,
    /// The complete events in it (lines of the torn batch that parse);
    /// the cut line itself, if any, is not counted.
    pub events: usize,
}

impl std::fmt::Display for TornTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.events {
            0 => write!(f, "line {} on, {} bytes cut short", self.line, self.bytes),
            1 => write!(
                f,
                "line {} on, {} bytes holding 1 complete event of a batch cut short",
                self.line, self.bytes
            ),
            n => write!(
                f,
                "line {} on, {} bytes holding {n} complete events of a batch cut short",
                self.line, self.bytes
            ),
        }
    }
}
