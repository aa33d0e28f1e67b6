//! Guards that mutation testing asked for (docs/mutants.md) on private
//! helpers: the read classifier and the region finder. The rest are in
//! `tests/passes/guards`, over the public API.

mod reads;
mod regions;
