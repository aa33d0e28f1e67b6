//! The proxy between an agent and a fake upstream on loopback.

mod common;
mod compaction;
mod passing;
mod replay;
