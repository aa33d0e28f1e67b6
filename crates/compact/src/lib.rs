//! The compaction seam: plans, the begin/run/commit transaction, method and service traits, invariant checks.
