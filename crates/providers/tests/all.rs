//! Integration tests of abridge-providers' clients, as one
//! binary over `suite/`.
// Helpers outside `#[test]` functions are test code too; clippy.toml's
// test allowance does not reach them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
