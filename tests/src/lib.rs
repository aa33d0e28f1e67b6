//! Cross-crate integration suites live in tests/tests/.
