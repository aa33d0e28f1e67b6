use super::*;
use serde_json::json;

#[allow(clippy::needless_pass_by_value)]
fn read(name: &str, args: Value) -> Option<FileRead> {
    classify(&default_read_tools(), name, &args)
}

fn lines(start: u64, end: Option<u64>) -> Selector {
    Selector::Lines { start, end }
}

#[test]
fn full_read_covers_ranged_but_not_the_reverse() {
    assert!(Selector::Full.covers(&lines(10, Some(20))));
    assert!(Selector::Full.covers(&Selector::Full));
    assert!(!lines(1, None).covers(&Selector::Full));
    assert!(!lines(10, Some(20)).covers(&Selector::Full));
    assert!(!Selector::Other("tail 5".into()).covers(&Selector::Full));
}

#[test]
fn ranges_cover_only_what_they_contain() {
    assert!(lines(10, Some(20)).covers(&lines(10, Some(20))));
    assert!(lines(1, Some(50)).covers(&lines(10, Some(20))));
    assert!(lines(5, None).covers(&lines(10, Some(20))));
    assert!(!lines(11, Some(20)).covers(&lines(10, Some(20))));
    assert!(!lines(10, Some(19)).covers(&lines(10, Some(20))));
    assert!(!lines(10, Some(20)).covers(&lines(10, None)));
    assert!(!lines(1, None).covers(&Selector::Other("tail 5".into())));
    assert!(Selector::Other("tail 5".into()).covers(&Selector::Other("tail 5".into())));
}

#[test]
fn path_selector_is_stripped() {
    assert_eq!(
        read("read", json!({"path": "src/a.rs:10-20"})),
        Some(FileRead {
            path: "src/a.rs".into(),
            selector: lines(10, Some(20))
        })
    );
    assert_eq!(
        read("read", json!({"path": "./src/a.rs:7"})).map(|r| r.selector),
        Some(lines(7, Some(7)))
    );
    assert_eq!(
        read("read", json!({"path": "C:notanumber"})).map(|r| r.path),
        Some("C:notanumber".into())
    );
}

#[test]
fn offset_and_limit_make_a_ranged_read() {
    assert_eq!(
        read("Read", json!({"file_path": "/r/a.ex"})).map(|r| r.selector),
        Some(Selector::Full)
    );
    assert_eq!(
        read(
            "Read",
            json!({"file_path": "/r/a.ex", "offset": 100, "limit": 50})
        )
        .map(|r| r.selector),
        Some(lines(100, Some(149)))
    );
    assert_eq!(
        read("read", json!({"path": "a", "offset": 30})).map(|r| r.selector),
        Some(lines(30, None))
    );
    assert_eq!(
        read("read", json!({"path": "a", "offset": null})).map(|r| r.selector),
        Some(Selector::Full)
    );
}

#[test]
fn swe_agent_view_and_open() {
    assert_eq!(
        read(
            "str_replace_editor",
            json!({"command": "view", "path": "/t/f.py", "view_range": [5, -1]})
        )
        .map(|r| r.selector),
        Some(lines(5, None))
    );
    assert_eq!(
        read(
            "str_replace_editor",
            json!({"command": "create", "path": "/t/f.py"})
        ),
        None
    );
    assert_eq!(
        read("open", json!({"path": "setup.py"})).map(|r| r.selector),
        Some(Selector::Other("window".into()))
    );
    assert_eq!(
        read("open", json!({"path": "f.py", "line_number": 1474})).map(|r| r.selector),
        Some(Selector::Other("line_number=1474".into()))
    );
}

#[test]
fn shell_reads() {
    let shell = |cmd: &str| read("bash", json!({ "command": cmd }));
    assert_eq!(
        shell("cat src/lib.rs"),
        Some(FileRead {
            path: "src/lib.rs".into(),
            selector: Selector::Full
        })
    );
    assert_eq!(
        shell("sed -n '10,20p' 'my file.rs'"),
        Some(FileRead {
            path: "my file.rs".into(),
            selector: lines(10, Some(20))
        })
    );
    assert_eq!(
        shell("head -n 5 a").map(|r| r.selector),
        Some(lines(1, Some(5)))
    );
    assert_eq!(
        shell("head -20 a").map(|r| r.selector),
        Some(lines(1, Some(20)))
    );
    assert_eq!(
        shell("tail -n 5 a").map(|r| r.selector),
        Some(Selector::Other("tail 5".into()))
    );
    for not_a_read in [
        "cat a b",
        "cat a | grep x",
        "cat a > b",
        "cat $F",
        "sed -i 's/a/b/' f",
        "ls",
        "cat 'unclosed",
    ] {
        assert_eq!(shell(not_a_read), None, "{not_a_read}");
    }
    assert_eq!(
        read("shell", json!({"command": ["bash", "-lc", "cat x.rs"]})).map(|r| r.path),
        Some("x.rs".into())
    );
    assert_eq!(
        read("shell", json!({"command": ["sed", "-n", "1,9p", "x.rs"]})).map(|r| r.selector),
        Some(lines(1, Some(9)))
    );
    assert_eq!(
        read("exec_command", json!({"cmd": "nl -ba x.rs"})).map(|r| r.selector),
        Some(Selector::Full)
    );
}
