//! The names methods go by in events, records and errors, kept below
//! every module that names a method other than its own (a summarizer
//! labels its errors with the method it works for).

/// The name `soft` registers under.
pub const SOFT: &str = "soft";

/// The name `handoff` registers under.
pub const HANDOFF: &str = "handoff";

/// What a branch summary's errors name as their method.
pub(crate) const BRANCH_SUMMARY: &str = "branch-summary";
