//! Exact counts against the Python `tiktoken` package.
//!
//! `data/reference_counts.json` was written by `data/make_reference.py`
//! (see its doc for running it offline); each case holds a text and the
//! number of tokens `tiktoken`'s `encode_ordinary` gave for it.

use abridge_meter::Tiktoken;
use abridge_meter::Tokenizer;
use pretty_assertions::assert_eq;

#[derive(serde::Deserialize)]
struct Reference {
    cases: Vec<Case>,
}

#[derive(serde::Deserialize)]
struct Case {
    name: String,
    text: String,
    counts: std::collections::BTreeMap<String, usize>,
}

fn reference() -> Result<Reference, serde_json::Error> {
    serde_json::from_str(include_str!("data/reference_counts.json"))
}

#[test]
fn counts_equal_python_tiktoken() -> Result<(), serde_json::Error> {
    let reference = reference()?;
    assert!(reference.cases.len() >= 20);
    let mut mismatches = Vec::new();
    for case in &reference.cases {
        for (encoding, tokenizer) in [
            ("o200k_base", Tiktoken::o200k()),
            ("cl100k_base", Tiktoken::cl100k()),
        ] {
            let expected = case.counts[encoding];
            let got = tokenizer.count(&case.text);
            if got != expected {
                mismatches.push(format!(
                    "{} {encoding}: expected {expected}, got {got}",
                    case.name
                ));
            }
        }
    }
    assert_eq!(mismatches, Vec::<String>::new());
    Ok(())
}

#[test]
fn the_table_covers_what_the_issue_asks_for() -> Result<(), serde_json::Error> {
    let names: Vec<String> = reference()?.cases.into_iter().map(|c| c.name).collect();
    for kind in ["ascii", "code", "json", "cjk", "emoji", "long_whitespace"] {
        assert!(names.iter().any(|n| n.starts_with(kind)), "no {kind} case");
    }
    Ok(())
}
