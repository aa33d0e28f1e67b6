//! The size rule: a non-test source file holds at most [`LIMIT`] lines.
//!
//! How test code is told apart, so that tests beside the code cost
//! nothing:
//! - a file is wholly test code when the module tree reaches it only
//!   through a `mod` declared under `#[cfg(test)]` (`mod tests;` with a
//!   `tests.rs`, `mod pass_tests;`, ...), or when it opens with
//!   `#![cfg(test)]`: such files are exempt;
//! - in any other file, the lines of inline `#[cfg(test)]` modules (from
//!   the attribute to the closing brace) are not counted. With the usual
//!   single test module at the end, that is "the lines up to the first
//!   `#[cfg(test)]` module".
//!
//! A file under `src/` that no crate target reaches is counted whole.

use super::items::FileScan;

/// The most lines a non-test source file may have.
pub(crate) const LIMIT: usize = 600;

/// The number of non-test lines of a file with `total` lines, and the line
/// that is the first one over [`LIMIT`], if any.
pub(crate) fn non_test_lines(total: usize, scan: &FileScan) -> (usize, Option<usize>) {
    let mut counted = 0;
    let mut first_over = None;
    for line in 1..=total {
        if scan
            .test_modules
            .iter()
            .any(|(start, end)| (*start..=*end).contains(&line))
        {
            continue;
        }
        counted += 1;
        if counted == LIMIT + 1 {
            first_over = Some(line);
        }
    }
    (counted, first_over)
}

#[cfg(test)]
mod tests {
    use super::LIMIT;
    use super::non_test_lines;
    use crate::arch::items::scan;

    fn measure(code_lines: usize, test_lines: usize) -> (usize, Option<usize>) {
        let mut text = "fn f() {}\n".repeat(code_lines);
        if test_lines >= 3 {
            text.push_str("#[cfg(test)]\nmod tests {\n");
            text.push_str(&"    // t\n".repeat(test_lines - 3));
            text.push_str("}\n");
        }
        non_test_lines(text.lines().count(), &scan(&text))
    }

    #[test]
    fn six_hundred_lines_pass_and_six_hundred_and_one_fail() {
        assert_eq!(measure(LIMIT, 0), (600, None));
        assert_eq!(measure(LIMIT + 1, 0), (601, Some(601)));
    }

    #[test]
    fn inline_test_modules_do_not_count() {
        assert_eq!(measure(LIMIT, 400), (600, None));
        assert_eq!(measure(LIMIT + 1, 400), (601, Some(601)));
    }
}
