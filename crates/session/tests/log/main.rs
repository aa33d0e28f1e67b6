//! The session log's integration suite, built as one test binary: random
//! operation sequences, the bad-input corpus, the store's promises, and
//! resume repair. Crash recovery is its own binary (`tests/crash`).

// Helpers outside `#[test]` functions panic on purpose, like the tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bad_input;
mod images;
mod ops;
mod pins;
mod repair;
mod store;
mod support;
