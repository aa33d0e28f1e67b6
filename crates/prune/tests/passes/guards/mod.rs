//! Tests of behaviour that mutation testing found unguarded (see
//! docs/mutants.md): each fails when the code it names is broken in the
//! way cargo-mutants broke it.

mod artifact;
mod prune;
