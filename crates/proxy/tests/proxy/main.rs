//! The proxy between an agent and a fake upstream on loopback.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod background;
mod branch;
mod common;
mod compaction;
mod passing;
mod pins;
mod replay;
mod sdk;
