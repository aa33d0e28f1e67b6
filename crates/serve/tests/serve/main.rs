//! The service driven over loopback HTTP: every route, auth, limits,
//! event streams, shutdown, a remote method pointed at it, a killed and
//! restarted server process, and the attack suite (`attack/`).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

mod api;
mod attack;
mod auth;
mod events;
mod kill;
mod pg;
mod remote;
mod shutdown;
mod stalls;
mod triggers;
mod workers;
