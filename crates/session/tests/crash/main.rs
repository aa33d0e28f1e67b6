//! Crash recovery and durability, in a test binary of its own: it spawns
//! child processes, and a child forked while another test in the same
//! process holds a session's lock holds that lock too until it execs,
//! which would make an unrelated test's reopen see `Locked`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

mod crash;
mod fsync;
mod strace;
#[allow(dead_code)]
#[path = "../log/support.rs"]
mod support;
