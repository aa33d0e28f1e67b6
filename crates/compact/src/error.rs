//! The seam's errors, split by who can fail with them.
//!
//! A method's own work fails with a [`MethodError`]: no usable summary,
//! an overflowing or failed model call, an output it already knows is
//! not smaller, nothing to compact, not available, cancelled, the cost of
//! a failed attempt. The host's transaction and passes fail with a
//! [`CompactError`]: another compaction in flight, the span changed,
//! output that cannot be committed, a failed write, a landing the policy
//! refuses (too little, over the window), every method failed; and a
//! method's failure, wrapped whole as [`CompactError::Method`]. A method
//! cannot name a host failure, and the host cannot lose a method's.
//!
//! Both share one [`ErrorKind`], the stable name written into
//! `compaction/end`: wrapping a method's error keeps its kind and its
//! text, so the log reads the same whichever side failed.

mod host;
mod kind;
mod method;
#[cfg(test)]
mod tests;

pub use host::CompactError;
pub use host::MethodFailure;
pub use kind::ErrorKind;
pub use method::MethodError;
