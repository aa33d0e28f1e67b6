//! Which lines count as a required section's heading.

use super::*;

#[test]
fn markdown_and_bold_headings_count_whatever_their_case_or_suffix() {
    assert!(is_heading_of("## Goal", "Goal"));
    assert!(is_heading_of(
        "### build and test commands",
        "Build and test"
    ));
    assert!(is_heading_of("**Files read:**", "Files read"));
    assert!(is_heading_of("  # NEXT STEPS", "Next steps"));
}

#[test]
fn prose_and_other_headings_do_not() {
    assert!(!is_heading_of("Goal: fix the parser", "Goal"));
    assert!(!is_heading_of("## Files changed", "Files read"));
    assert!(!is_heading_of(
        "## Constraints are what the user said about the parser and its tests, in full",
        "Constraints"
    ));
}

#[test]
fn missing_lists_the_absent_sections_in_the_prompts_order() {
    let summary = "## Goal\nx\n## Files read\nnone\n**Next steps**\n- y";
    assert_eq!(
        missing(summary),
        ["Constraints", "Files changed", "Build and test"]
    );
    assert_eq!(missing("no sections at all"), REQUIRED);
}
