//! The passes' behaviour, their properties, and the guards mutation
//! testing asked for (docs/mutants.md), over the public API with one
//! shared session builder.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod guards;
mod methods;
mod passes;
mod props;
mod testkit;
