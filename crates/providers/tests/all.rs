//! Integration tests of abridge-llm's provider clients and wrappers, as one
//! binary over `suite/`.
#![cfg(feature = "providers")]
// Helpers outside `#[test]` functions are test code too; clippy.toml's
// test allowance does not reach them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
