//! Test modules; `support` holds fixtures, canned provider answers and the
//! request renderer.

mod cancel;
mod caps;
mod count_tokens;
mod faults;
mod secrets;
mod shapes;
mod support;
mod wire;
