//! Cross-crate integration suites for abridge; the tests live in
//! `tests/tests/`. This library is empty on purpose: the crate exists so the
//! suites can depend on every other crate at once, which no single crate
//! may do.
