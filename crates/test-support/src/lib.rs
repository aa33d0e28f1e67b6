//! What abridge's tests share, so that each test builder has one owner.
//!
//! A dev-dependency only (like codex-rs's `core_test_support`): no library
//! crate depends on it at build time, and `cargo xtask lint-arch` checks
//! that. It holds:
//!
//! - [`samples`]: where the bundled real sessions are, by name.
//! - [`messages`]: builders for the message shapes tests need most.
//! - [`scripted`]: an [`LlmClient`](abridge_llm::LlmClient) that answers
//!   from a script and records every request.
//! - [`cli`]: running the `abridge` binary and reading what it printed.
//! - [`http`]: reading a request on a blocking loopback fake server.
//! - [`fixtures`]: provider answers in their documented shapes.
//! - [`secrets`]: the redaction test session, one fake secret of every
//!   kind, and the checks that none leaked.
//!
//! Helpers panic on setup failures with a message naming what failed:
//! a test that cannot set up has nothing else to report.

#![allow(clippy::expect_used, clippy::unwrap_used)]

pub mod cli;
pub mod fixtures;
pub mod http;
pub mod logs;
pub mod messages;
pub mod samples;
pub mod scripted;
pub mod secrets;
pub mod sessions;
