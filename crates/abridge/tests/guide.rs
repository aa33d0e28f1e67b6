//! The method guide's last example is the example program, word for word,
//! so the page cannot drift from code CI builds.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[test]
fn the_guide_shows_the_custom_method_example_as_it_is() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let guide =
        std::fs::read_to_string(format!("{root}/docs/writing-a-compaction-method.md")).unwrap();
    let example = std::fs::read_to_string(format!(
        "{}/examples/custom_method.rs",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    assert!(
        guide.contains(&format!("```rust,ignore\n{example}```")),
        "docs/writing-a-compaction-method.md no longer holds examples/custom_method.rs"
    );
}
