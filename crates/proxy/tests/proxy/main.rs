//! The proxy between an agent and a fake upstream on loopback.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod background;
mod common;
mod compaction;
mod passing;
mod replay;
mod sdk;
