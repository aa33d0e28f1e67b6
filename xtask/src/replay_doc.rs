//! Keeps docs/replay.md in step with the code: every row of its replay
//! table names one test, and that test exists.

use crate::fuzz_doc::rows;
use crate::fuzz_targets::root;

#[test]
fn every_row_of_the_replay_table_names_a_test_that_exists() {
    let text = std::fs::read_to_string(root().join("docs/replay.md")).unwrap();
    let table = &rows(&text)[0];
    assert!(table.len() >= 10, "the replay table lost rows: {table:#?}");
    let mut missing = Vec::new();
    for row in table {
        let cell = row.last().unwrap().trim_matches('`');
        let (file, test) = cell
            .split_once("::")
            .unwrap_or_else(|| panic!("no FILE::TEST in {cell:?}"));
        let source = std::fs::read_to_string(root().join(file)).unwrap_or_default();
        if !source.contains(&format!("fn {test}()")) {
            missing.push(cell.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "named in docs/replay.md but not found: {missing:#?}"
    );
}
