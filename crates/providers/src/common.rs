//! What the three dialects share: configuration, the HTTP path, server-sent
//! events, stream assembly, error classification, cached fragments and the
//! wire pieces more than one encoder writes.

pub(crate) mod classify;
pub(crate) mod config;
pub(crate) mod fragments;
pub(crate) mod http;
pub(crate) mod native;
pub(crate) mod options;
pub(crate) mod sse;
pub(crate) mod stream;
pub(crate) mod wire;
