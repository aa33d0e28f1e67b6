//! Where fenced and XML blocks start and end, at the edges the older tests
//! left open.

use crate::regions::RegionKind;
use crate::regions::find_regions;

fn found(text: &str) -> Vec<(&str, RegionKind)> {
    find_regions(text)
        .into_iter()
        .map(|r| (&text[r.range], r.kind))
        .collect()
}

fn fence(info: &str) -> RegionKind {
    RegionKind::Fence(info.to_string())
}

#[test]
fn a_fence_without_info_is_named_plainly() {
    assert_eq!(fence("").describe(), "fenced code block");
    assert_eq!(fence("rust").describe(), "fenced rust code block");
}

#[test]
fn a_fence_may_be_indented_up_to_three_spaces() {
    let text = "   ```\nx\n   ```\n";
    assert_eq!(found(text), vec![("   ```\nx\n   ```", fence(""))]);
}

#[test]
fn four_spaces_of_indent_make_indented_code_not_a_fence() {
    assert_eq!(found("    ```\nx\n    ```\n"), vec![]);
    // Nor does a four-space line close an open fence.
    let text = "```\nx\n    ```\ny\n```";
    assert_eq!(found(text), vec![(text, fence(""))]);
}

#[test]
fn a_backtick_info_string_with_a_backtick_is_inline_code() {
    assert_eq!(found("```a`b\nx\n```\n"), vec![]);
    // A tilde fence may have one.
    let text = "~~~a`b\nx\n~~~";
    assert_eq!(found(text), vec![(text, fence("a`b"))]);
}

#[test]
fn an_element_may_start_with_an_underscore_but_not_a_digit() {
    let text = "<_note>\nx\n</_note>";
    assert_eq!(found(text), vec![(text, RegionKind::Xml("_note".into()))]);
    assert_eq!(found("<1a>\nx\n</1a>"), vec![]);
}

#[test]
fn a_close_before_a_reopen_on_one_line_ends_the_element() {
    let text = "<note>\nx\n</note> then <note>\nlater\n";
    assert_eq!(
        found(text),
        vec![("<note>\nx\n</note>", RegionKind::Xml("note".into()))]
    );
}

#[test]
fn every_nested_open_on_the_first_line_needs_its_own_close() {
    let text = "<note> <note> <note>\n</note>\n</note>\n</note>\nafter";
    assert_eq!(
        found(text),
        vec![(
            "<note> <note> <note>\n</note>\n</note>\n</note>",
            RegionKind::Xml("note".into())
        )]
    );
}
