//! Which shell and argument forms are file reads, at the edges the older
//! tests left open.

use serde_json::Value;
use serde_json::json;

use crate::reads::FileRead;
use crate::reads::Selector;
use crate::reads::classify;
use crate::reads::default_read_tools;

fn bash(command: &Value) -> Option<FileRead> {
    classify(
        &default_read_tools(),
        "bash",
        &json!({ "command": command }),
    )
}

fn read_of(path: &str, selector: Selector) -> Option<FileRead> {
    Some(FileRead {
        path: path.to_string(),
        selector,
    })
}

#[test]
fn an_argv_that_is_no_shell_is_read_as_the_words_joined() {
    assert_eq!(
        bash(&json!(["head", "-5", "a.rs"])),
        read_of(
            "a.rs",
            Selector::Lines {
                start: 1,
                end: Some(5)
            }
        )
    );
}

#[test]
fn a_shell_flag_without_c_does_not_run_its_argument_as_a_script() {
    // `bash -x FILE` runs the script file FILE; it reads nothing we track.
    assert_eq!(bash(&json!(["bash", "-x", "cat a.rs"])), None);
    assert_eq!(
        bash(&json!(["bash", "-lc", "cat a.rs"])),
        read_of("a.rs", Selector::Full)
    );
}

#[test]
fn only_a_shell_takes_a_c_flag_as_its_script() {
    assert_eq!(bash(&json!(["python3", "-c", "cat a.rs"])), None);
}

#[test]
fn head_with_a_file_alone_shows_its_first_ten_lines() {
    assert_eq!(
        bash(&json!("head a.rs")),
        read_of(
            "a.rs",
            Selector::Lines {
                start: 1,
                end: Some(10)
            }
        )
    );
}

#[test]
fn head_without_a_file_reads_standard_input() {
    assert_eq!(bash(&json!("head -5")), None);
    assert_eq!(bash(&json!("cat -")), None);
    assert_eq!(bash(&json!("sed -n 1,5p -")), None);
    assert_eq!(bash(&json!("tail -n 3 -")), None);
}

#[test]
fn head_counting_bytes_is_not_a_line_read() {
    assert_eq!(bash(&json!("head -c 100 a.rs")), None);
    assert_eq!(
        bash(&json!("head -n 100 a.rs")),
        read_of(
            "a.rs",
            Selector::Lines {
                start: 1,
                end: Some(100)
            }
        )
    );
}

#[test]
fn head_of_two_files_is_not_a_read_of_one() {
    assert_eq!(bash(&json!("head 20 a.rs")), None);
}

#[test]
fn an_unknown_range_key_makes_a_read_unmeasurable_not_a_line_range() {
    let read = classify(
        &default_read_tools(),
        "Read",
        &json!({"file_path": "doc.pdf", "pages": "1-3", "offset": 2}),
    );
    assert!(
        matches!(
            read,
            Some(FileRead {
                selector: Selector::Other(_),
                ..
            })
        ),
        "{read:?}"
    );
}
