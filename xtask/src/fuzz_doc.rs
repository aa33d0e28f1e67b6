//! Keeps docs/bad-input.md in step with the code: its mutation table names
//! exactly the fuzzer's mutations, and every test its corpus table names
//! exists (and every hostile-input limit test is named there).

use std::collections::BTreeSet;

use crate::fuzz_mutate::Mutation;
use crate::fuzz_targets::root;

/// The cells of the table rows of `text` whose first cell is not a
/// header or separator, per table (tables are split by blank lines).
pub(crate) fn rows(text: &str) -> Vec<Vec<Vec<String>>> {
    let mut tables = vec![Vec::new()];
    for line in text.lines() {
        if !line.starts_with('|') {
            if tables
                .last()
                .is_some_and(|t: &Vec<Vec<String>>| !t.is_empty())
            {
                tables.push(Vec::new());
            }
            continue;
        }
        let cells: Vec<String> = line
            .trim_matches('|')
            .split(" | ")
            .map(|c| c.trim().to_string())
            .collect();
        if let Some(table) = tables.last_mut() {
            table.push(cells);
        }
    }
    tables
        .into_iter()
        .filter(|t| !t.is_empty())
        // Drop each table's header and separator lines.
        .map(|t| t.into_iter().skip(2).collect())
        .collect()
}

fn doc() -> String {
    std::fs::read_to_string(root().join("docs/bad-input.md")).unwrap()
}

#[test]
fn the_mutation_table_names_every_mutation_and_no_other() {
    let tables = rows(&doc());
    let documented: BTreeSet<String> = tables[0].iter().map(|r| r[0].clone()).collect();
    let real: BTreeSet<String> = Mutation::ALL.iter().map(|m| m.name().to_string()).collect();
    assert_eq!(documented, real, "docs/bad-input.md's mutation table");
}

#[test]
fn every_test_the_corpus_table_names_exists() {
    let tables = rows(&doc());
    let mut missing = Vec::new();
    let mut named = BTreeSet::new();
    for row in &tables[1] {
        let cell = row.last().unwrap().trim_matches('`');
        let (file, test) = cell
            .split_once("::")
            .unwrap_or_else(|| panic!("no FILE::TEST in {cell:?}"));
        let source = std::fs::read_to_string(root().join(file)).unwrap_or_default();
        if !source.contains(&format!("fn {test}()")) {
            missing.push(cell.to_string());
        }
        named.insert(cell.to_string());
    }
    assert!(
        missing.is_empty(),
        "named in docs/bad-input.md but not found: {missing:#?}"
    );
    // The limit tests are this page's own: each must have a row.
    let limits = "crates/import/tests/limits.rs";
    let source = std::fs::read_to_string(root().join(limits)).unwrap();
    let unlisted: Vec<String> = source
        .split("#[test]\nfn ")
        .skip(1)
        .filter_map(|rest| {
            rest.split_once("()")
                .map(|(name, _)| format!("{limits}::{name}"))
        })
        .filter(|test| !named.contains(test))
        .collect();
    assert!(
        unlisted.is_empty(),
        "not in docs/bad-input.md: {unlisted:#?}"
    );
}
