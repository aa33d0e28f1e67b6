//! The bad-input corpus: each file is broken in one way; opening it gives a
//! typed error whose text names the file, the line and the field, nothing
//! panics, and the file's bytes are unchanged (a torn tail too: it is
//! reported, and only `set_aside_torn` moves it, to a sidecar).

use std::io::Write;
use std::path::Path;

use abridge_llm::Message;
use abridge_session::Draft;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::LoadReport;
use abridge_session::Session;
use abridge_session::SessionError;
use abridge_session::SkippedLine;
use abridge_session::StoreError;
use abridge_session::TornTail;

use crate::support;
use crate::support::TIME;

/// A valid session of four events; returns its lines, header first.
///
/// ```text
/// 1 header
/// 2 seq 0  user "hello"
/// 3 seq 1  assistant calling c1
/// 4 seq 2  tool result for c1
/// 5 seq 3  user "next"
/// ```
fn base(path: &Path) -> Vec<String> {
    let mut session = support::create(path);
    let drafts = vec![
        Draft::message(Message::user("hello")),
        Draft::message(support::parallel_calls("reading", &["c1".into()])),
        Draft::message(Message::tool_result("c1", "ok", false)),
        Draft::message(Message::user("next")),
    ];
    session
        .append_batch(drafts.into_iter().map(|d| d.with_time(TIME)).collect())
        .unwrap();
    drop(session);
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn write_lines(path: &Path, lines: &[String]) {
    let mut text = lines.join("\n");
    text.push('\n');
    std::fs::write(path, text).unwrap();
}

/// Opens for writing (the mode that could change the file) and returns the
/// error, checking the bytes did not change.
fn open_error(path: &Path) -> SessionError {
    let before = support::file_hash(path);
    let result = JsonlStore::open(path, JsonlOptions::default())
        .map_err(SessionError::from)
        .and_then(|store| Session::open(Box::new(store)));
    assert_eq!(
        support::file_hash(path),
        before,
        "a failed open changed the file"
    );
    match result {
        Ok(_) => panic!("the broken file opened"),
        Err(e) => e,
    }
}

/// Replaces `from` with `to` in line `line` (1-based) of the base session.
fn corrupt(line: usize, from: &str, to: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let (dir, path) = support::temp_session();
    let mut lines = base(&path);
    assert!(
        lines[line - 1].contains(from),
        "{} has no {from}",
        lines[line - 1]
    );
    lines[line - 1] = lines[line - 1].replacen(from, to, 1);
    write_lines(&path, &lines);
    (dir, path)
}

/// The end of a corrupt line's message: what to run, naming the file.
fn salvage_advice(path: &Path) -> String {
    format!(
        "; nothing was changed: `abridge repair {} --salvage-to NEW` copies the lines that parse into a new session",
        path.display()
    )
}

fn column_of(path: &Path, line: usize, needle: &str) -> usize {
    let text = std::fs::read(path).unwrap();
    let line_text = text.split(|b| *b == b'\n').nth(line - 1).unwrap();
    line_text
        .windows(needle.len())
        .position(|w| w == needle.as_bytes())
        .unwrap()
}

/// Opens `path` read-only: the report and how many events it holds.
fn read(path: &Path) -> (LoadReport, usize) {
    let options = JsonlOptions {
        read_only: true,
        ..JsonlOptions::default()
    };
    let (session, report) =
        Session::open(Box::new(JsonlStore::open(path, options).unwrap())).unwrap();
    (report, session.len())
}

/// A torn tail: a reader reports it and reads what is before it; a writer
/// refuses it with an error naming the line, the bytes and what to run,
/// and changes nothing; set aside, the torn bytes move to a sidecar whole
/// and the log opens for writing. Regression test for "a torn tail is
/// cut on open" (issue 27: one torn byte cost an imported session).
#[test]
fn a_torn_last_line_is_reported_refused_to_writers_and_set_aside() {
    let (_dir, path) = support::temp_session();
    base(&path);
    let good = std::fs::read(&path).unwrap();
    let torn =
        r#"{"seq":4,"parent":3,"time":"2026-11-30T00:00:00.000Z","type":"message","data":{"mess"#;
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(torn.as_bytes())
        .unwrap();
    let cut = std::fs::read(&path).unwrap();
    let expected = TornTail {
        line: 6,
        bytes: torn.len() as u64,
        events: 0,
    };

    let (report, events) = read(&path);
    assert_eq!(report.torn_tail.as_ref(), Some(&expected));
    assert_eq!(events, 4);
    assert_eq!(std::fs::read(&path).unwrap(), cut);

    let error = open_error(&path);
    assert!(
        matches!(&error, SessionError::Store(StoreError::Torn { torn, .. }) if *torn == expected),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!(
            "{}: the log ends in a write a crash cut short (line 6 on, {} bytes cut short); nothing was written: `abridge repair {}` moves those bytes to a `.torn-N` file beside it, then the log opens",
            path.display(),
            torn.len(),
            path.display()
        )
    );

    let mut store = JsonlStore::open(&path, JsonlOptions::default()).unwrap();
    let aside = store.set_aside_torn().unwrap().expect("a torn tail");
    assert_eq!(aside.torn, expected);
    assert!(aside.complete.is_empty());
    assert_eq!(aside.sidecar, path.with_file_name("session.jsonl.torn-1"));
    assert_eq!(std::fs::read(&aside.sidecar).unwrap(), torn.as_bytes());
    assert_eq!(std::fs::read(&path).unwrap(), good);
    let (mut session, report) = Session::open(Box::new(store)).unwrap();
    assert_eq!(report, LoadReport::default());
    session.append_message(Message::user("after")).unwrap();
    drop(session);
    let (session, report) =
        Session::open(support::jsonl(&path, abridge_session::FsyncPolicy::Never)).unwrap();
    assert_eq!(report, LoadReport::default());
    assert_eq!(session.len(), 5);
}

/// The base session with a three-event batch appended, cut after its
/// second line: every line left is whole, but the batch is not. Returns
/// the file before the batch and the cut file.
fn cut_after_two_of_three(path: &Path) -> (Vec<u8>, Vec<u8>) {
    base(path);
    let good = std::fs::read(path).unwrap();
    let mut session = support::open(path);
    let drafts = ["a", "b", "c"]
        .iter()
        .map(|t| Draft::message(Message::user(*t)).with_time(TIME))
        .collect();
    session.append_batch(drafts).unwrap();
    drop(session);
    let full = std::fs::read(path).unwrap();
    let batch_lines: Vec<&[u8]> = full[good.len()..]
        .split_inclusive(|b| *b == b'\n')
        .collect();
    assert_eq!(batch_lines.len(), 3);
    assert!(batch_lines[0].starts_with(br#"{"batch":3,"seq":4,"#));
    let cut = good.len() + batch_lines[0].len() + batch_lines[1].len();
    std::fs::write(path, &full[..cut]).unwrap();
    (good, full[..cut].to_vec())
}

/// A crash can stop a large write at a line boundary: every line left is
/// whole, but the batch is not. The batch's first line says how many
/// lines it has, so the partial batch is the torn tail, whole: left out of
/// what is read, refused to a writer, and set aside whole.
#[test]
fn a_batch_cut_at_a_line_boundary_is_torn_whole() {
    let (_dir, path) = support::temp_session();
    let (good, cut) = cut_after_two_of_three(&path);
    let expected = TornTail {
        line: 6,
        bytes: (cut.len() - good.len()) as u64,
        events: 2,
    };
    let (report, events) = read(&path);
    assert_eq!(report.torn_tail, Some(expected.clone()));
    assert_eq!(events, 4);
    assert!(matches!(
        open_error(&path),
        SessionError::Store(StoreError::Torn { torn, .. }) if torn == expected
    ));

    let mut store = JsonlStore::open(&path, JsonlOptions::default()).unwrap();
    let aside = store.set_aside_torn().unwrap().expect("a torn tail");
    assert_eq!(std::fs::read(&path).unwrap(), good);
    assert_eq!(std::fs::read(&aside.sidecar).unwrap(), &cut[good.len()..]);
    let texts: Vec<String> = aside
        .complete
        .iter()
        .map(|e| e.message().unwrap().plain_text())
        .collect();
    assert_eq!(texts, ["a", "b"]);
}

/// `keep_torn_events` appends the complete events of a torn batch again,
/// at the seqs they had, in one batch; the sidecar keeps its copy.
#[test]
fn the_complete_events_of_a_torn_batch_can_be_kept() {
    let (_dir, path) = support::temp_session();
    let (good, cut) = cut_after_two_of_three(&path);
    let mut store = JsonlStore::open(&path, JsonlOptions::default()).unwrap();
    let aside = store.set_aside_torn().unwrap().expect("a torn tail");
    let (mut session, _) = Session::open(Box::new(store)).unwrap();
    assert_eq!(
        abridge_session::keep_torn_events(&mut session, &aside).unwrap(),
        [4, 5]
    );
    drop(session);
    let (report, events) = read(&path);
    assert_eq!(report, LoadReport::default());
    assert_eq!(events, 6);
    let kept = std::fs::read(&path).unwrap();
    assert!(kept.starts_with(&good));
    // Written again as a batch of two; the second line is as it was.
    let lines: Vec<&[u8]> = kept[good.len()..]
        .split_inclusive(|b| *b == b'\n')
        .collect();
    assert!(lines[0].starts_with(br#"{"batch":2,"seq":4,"#));
    assert!(cut.ends_with(lines[1]));
    assert_eq!(std::fs::read(&aside.sidecar).unwrap(), &cut[good.len()..]);
}

/// A second torn tail goes to `.torn-2`: a sidecar is never overwritten,
/// and each is private (0600).
#[test]
fn sidecars_count_up_and_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let (_dir, path) = support::temp_session();
    base(&path);
    let mut sidecars = Vec::new();
    for torn in ["{\"seq\":4,", "{\"seq\":4,\"par"] {
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(torn.as_bytes())
            .unwrap();
        let mut store = JsonlStore::open(&path, JsonlOptions::default()).unwrap();
        let aside = store.set_aside_torn().unwrap().expect("a torn tail");
        assert_eq!(std::fs::read(&aside.sidecar).unwrap(), torn.as_bytes());
        let mode = std::fs::metadata(&aside.sidecar)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, abridge_session::PRIVATE_FILE_MODE);
        sidecars.push(aside.sidecar);
    }
    assert_eq!(
        sidecars,
        [
            path.with_file_name("session.jsonl.torn-1"),
            path.with_file_name("session.jsonl.torn-2")
        ]
    );
    // A log without a torn tail has nothing to set aside.
    let mut store = JsonlStore::open(&path, JsonlOptions::default()).unwrap();
    assert_eq!(store.set_aside_torn().unwrap(), None);
}

#[test]
fn invalid_utf8_in_a_middle_line() {
    let (_dir, path) = support::temp_session();
    let lines = base(&path);
    let mut bytes = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if i == 1 {
            bytes.extend_from_slice(line.replacen("hello", "he\u{1}llo", 1).as_bytes());
        } else {
            bytes.extend_from_slice(line.as_bytes());
        }
        bytes.push(b'\n');
    }
    // Swap the marker for a byte that is never valid UTF-8.
    let at = bytes.iter().position(|b| *b == 1).unwrap();
    bytes[at] = 0xFF;
    std::fs::write(&path, &bytes).unwrap();
    let column = column_of(&path, 2, "he") + 3;
    let error = open_error(&path);
    assert!(matches!(
        error,
        SessionError::Store(StoreError::Corrupt { line: 2, .. })
    ));
    assert_eq!(
        error.to_string(),
        format!(
            "{}:2:{column}: field `data.message.content[0].text`: invalid UTF-8; nothing was changed: `abridge repair {} --salvage-to NEW` copies the lines that parse into a new session",
            path.display(),
            path.display()
        )
    );
}

#[test]
fn seq_as_a_string() {
    let (_dir, path) = corrupt(4, r#""seq":2,"#, r#""seq":"2","#);
    let column = column_of(&path, 4, r#""2""#) + 3;
    assert_eq!(
        open_error(&path).to_string(),
        format!(
            "{}:4:{column}: field `seq`: invalid type: string \"2\", expected u64; nothing was changed: `abridge repair {} --salvage-to NEW` copies the lines that parse into a new session",
            path.display(),
            path.display()
        )
    );
}

#[test]
fn content_text_as_a_number() {
    let (_dir, path) = corrupt(5, r#""text":"next""#, r#""text":42"#);
    let error = open_error(&path);
    assert!(matches!(
        error,
        SessionError::Store(StoreError::Corrupt { line: 5, .. })
    ));
    let text = error.to_string();
    let prefix = format!("{}:5:", path.display());
    assert!(text.starts_with(&prefix), "{text}");
    assert!(
        text.ends_with(&format!(": field `data.message.content[0].text`: invalid type: integer `42`, expected a string{}", salvage_advice(&path))),
        "{text}"
    );
}

#[test]
fn json_nested_past_the_depth_limit() {
    // serde_json stops at 128 levels: a typed error with line and column,
    // never a stack overflow.
    let nested = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
    let (_dir, path) = corrupt(5, r#""text":"next""#, &format!(r#""text":{nested}"#));
    let error = open_error(&path);
    assert!(matches!(
        error,
        SessionError::Store(StoreError::Corrupt { line: 5, .. })
    ));
    // The column is where the depth ran out: the 1-based column of the
    // first `[` is one past its 0-based offset, and the line itself is a
    // level (the message and its content add more), so the limit of 128
    // is hit within the first 128 brackets.
    let first = column_of(&path, 5, "[[[") + 1;
    let text = error.to_string();
    let prefix = format!("{}:5:", path.display());
    let column: usize = text[prefix.len()..]
        .split(':')
        .next()
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("no column in {text}"));
    assert!(column > first && column < first + 128, "{text}");
    assert!(
        text.ends_with(&format!(
            ": recursion limit exceeded{}",
            salvage_advice(&path)
        )),
        "{text}"
    );
}

#[test]
fn tool_call_id_as_a_number_in_a_nested_block() {
    let (_dir, path) = corrupt(4, r#""call_id":"c1""#, r#""call_id":7"#);
    let text = open_error(&path).to_string();
    assert!(
        text.contains(": field `data.message.content[0].call_id`: invalid type: integer `7`"),
        "{text}"
    );
}

#[test]
fn duplicate_seq() {
    let (_dir, path) = corrupt(5, r#""seq":3,"#, r#""seq":2,"#);
    assert_eq!(
        open_error(&path).to_string(),
        format!(
            "{}:5: field `seq`: expected seq 3, found 2 (seqs must be contiguous from 0)",
            path.display()
        )
    );
}

#[test]
fn out_of_order_seq() {
    let (_dir, path) = support::temp_session();
    let mut lines = base(&path);
    lines.swap(3, 4);
    write_lines(&path, &lines);
    assert_eq!(
        open_error(&path).to_string(),
        format!(
            "{}:4: field `seq`: expected seq 2, found 3 (seqs must be contiguous from 0)",
            path.display()
        )
    );
}

#[test]
fn parent_pointing_forward() {
    let (_dir, path) = corrupt(4, r#""parent":1,"#, r#""parent":3,"#);
    assert_eq!(
        open_error(&path).to_string(),
        format!(
            "{}:4: field `parent`: parent 3 does not point to an earlier event (seq 2)",
            path.display()
        )
    );
}

#[test]
fn parent_pointing_at_itself() {
    let (_dir, path) = corrupt(4, r#""parent":1,"#, r#""parent":2,"#);
    assert_eq!(
        open_error(&path).to_string(),
        format!(
            "{}:4: field `parent`: parent 2 does not point to an earlier event (seq 2)",
            path.display()
        )
    );
}

/// A line for seq 4 on parent 3, with this message data.
fn extra_line(data: &str) -> String {
    format!(r#"{{"seq":4,"parent":3,"time":"{TIME}","type":"message","data":{data}}}"#)
}

#[test]
fn replace_span_not_on_the_surface() {
    let (_dir, path) = support::temp_session();
    let mut lines = base(&path);
    lines.push(extra_line(
        r#"{"message":{"role":"user","content":[]},"op":{"kind":"replace","start":1,"end":9},"sources":[1,2,3]}"#,
    ));
    write_lines(&path, &lines);
    assert_eq!(
        open_error(&path).to_string(),
        format!(
            "{}:6: field `data.op`: span 1..=9 is not on the surface of 4 messages",
            path.display()
        )
    );
}

#[test]
fn replace_that_hides_more_than_it_lists() {
    let (_dir, path) = support::temp_session();
    let mut lines = base(&path);
    lines.push(extra_line(
        r#"{"message":{"role":"user","content":[]},"op":{"kind":"replace","start":0,"end":2},"sources":[0,2]}"#,
    ));
    write_lines(&path, &lines);
    assert_eq!(
        open_error(&path).to_string(),
        format!(
            "{}:6: field `data.sources`: a replace must list every seq it hides; 1 is missing",
            path.display()
        )
    );
}

#[test]
fn rewrite_of_a_non_tool_message() {
    let (_dir, path) = support::temp_session();
    let mut lines = base(&path);
    lines.push(extra_line(
        r#"{"message":{"role":"tool","content":[{"type":"tool_result","call_id":"c1","content":[]}]},"op":{"kind":"rewrite","target":0},"sources":[0]}"#,
    ));
    write_lines(&path, &lines);
    assert_eq!(
        open_error(&path).to_string(),
        format!(
            "{}:6: field `data.op.target`: rewrite target seq 0 is not a tool result",
            path.display()
        )
    );
}

#[test]
fn rewrite_that_changes_the_call_id() {
    let (_dir, path) = support::temp_session();
    let mut lines = base(&path);
    lines.push(extra_line(
        r#"{"message":{"role":"tool","content":[{"type":"tool_result","call_id":"c9","content":[]}]},"op":{"kind":"rewrite","target":2},"sources":[2]}"#,
    ));
    write_lines(&path, &lines);
    assert_eq!(
        open_error(&path).to_string(),
        format!(
            "{}:6: field `data.message.content`: a rewrite must keep the call id \"c1\", got \"c9\"",
            path.display()
        )
    );
}

#[test]
fn message_without_data() {
    let (_dir, path) = corrupt(5, r#","data":{"#, r#","nodata":{"#);
    assert_eq!(
        open_error(&path).to_string(),
        format!(
            "{}:5:0: field `data`: missing field; nothing was changed: `abridge repair {} --salvage-to NEW` copies the lines that parse into a new session",
            path.display(),
            path.display()
        )
    );
}

/// A 200 MB line, written in pieces so the test never holds it.
#[test]
fn a_200_mb_line_is_refused_without_reading_it_whole() {
    let (_dir, path) = support::temp_session();
    let lines = base(&path);
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    for line in &lines[..3] {
        writeln!(file, "{line}").unwrap();
    }
    let head = format!(
        r#"{{"seq":2,"parent":1,"time":"{TIME}","type":"message","data":{{"message":{{"role":"user","content":[{{"type":"text","text":""#
    );
    let tail = r#""}]}}}"#;
    let chunk = vec![b'a'; 1 << 20];
    let body = 200 * (1 << 20);
    file.write_all(head.as_bytes()).unwrap();
    for _ in 0..200 {
        file.write_all(&chunk).unwrap();
    }
    file.write_all(tail.as_bytes()).unwrap();
    file.write_all(b"\n").unwrap();
    for line in &lines[4..] {
        writeln!(file, "{line}").unwrap();
    }
    drop(file);
    let len = head.len() + body + tail.len();
    let error = open_error(&path);
    assert!(matches!(
        error,
        SessionError::Store(StoreError::LineTooLong { line: 4, .. })
    ));
    assert_eq!(
        error.to_string(),
        format!(
            "{}:4: line is {len} bytes, over the limit of 67108864 bytes",
            path.display()
        )
    );

    // Salvage skips it and keeps the rest.
    let options = JsonlOptions {
        salvage: true,
        ..JsonlOptions::default()
    };
    let before = support::file_hash(&path);
    let (session, report) =
        Session::open(Box::new(JsonlStore::open(&path, options).unwrap())).unwrap();
    assert_eq!(support::file_hash(&path), before);
    assert_eq!(report.skipped.len(), 1);
    assert_eq!(report.skipped[0].line, 4);
    assert_eq!(session.len(), 3);
}

#[test]
fn a_line_over_the_limit_is_refused_on_append_too() {
    let (_dir, path) = support::temp_session();
    let options = JsonlOptions {
        max_line_bytes: 1000,
        fsync: abridge_session::FsyncPolicy::Never,
        ..JsonlOptions::default()
    };
    let store = JsonlStore::open(&path, options).unwrap();
    let mut session = Session::create(Box::new(store), support::header("x")).unwrap();
    session.append_message(Message::user("short")).unwrap();
    let before = support::file_hash(&path);
    let error = session
        .append_message(Message::user("x".repeat(2000)))
        .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with(&format!("{}:3: line is ", path.display())),
        "{error}"
    );
    assert_eq!(support::file_hash(&path), before);
    assert_eq!(session.len(), 1);
}

#[test]
fn header_that_is_not_json() {
    let (_dir, path) = support::temp_session();
    let mut lines = base(&path);
    lines[0] = "hello".into();
    write_lines(&path, &lines);
    assert_eq!(
        open_error(&path).to_string(),
        format!("{}:1: bad header: column 1: expected value", path.display())
    );
}

#[test]
fn header_with_a_field_of_the_wrong_type() {
    let (_dir, path) = corrupt(1, r#""format":1"#, r#""format":"one""#);
    let column = column_of(&path, 1, r#""one""#) + 5;
    assert_eq!(
        open_error(&path).to_string(),
        format!(
            "{}:1: bad header: column {column}: field `format`: invalid type: string \"one\", expected u32",
            path.display()
        )
    );
}

#[test]
fn event_where_the_header_should_be() {
    let (_dir, path) = support::temp_session();
    let lines = base(&path);
    write_lines(&path, &lines[1..]);
    let text = open_error(&path).to_string();
    assert!(
        text.starts_with(&format!("{}:1: bad header: ", path.display())),
        "{text}"
    );
}

#[test]
fn empty_file() {
    let (_dir, path) = support::temp_session();
    std::fs::write(&path, "").unwrap();
    assert_eq!(
        open_error(&path).to_string(),
        format!("{}:1: bad header: the file is empty", path.display())
    );
}

#[test]
fn newer_format_version() {
    let (_dir, path) = corrupt(1, r#""format":1"#, r#""format":2"#);
    assert_eq!(
        open_error(&path).to_string(),
        format!(
            "{}:1: bad header: field `format`: format version 2 is newer than this build understands (1); upgrade abridge",
            path.display()
        )
    );
}

/// Salvage keeps every line that parses, lists the rest, renumbers what
/// follows a gap so the log is contiguous again, and never writes.
#[test]
fn salvage_keeps_what_parses_and_lists_what_it_skipped() {
    let (_dir, path) = support::temp_session();
    let mut lines = base(&path);
    lines[2] = lines[2].replacen(r#""seq":1,"#, r#""seq":"#, 1);
    // A rewrite of the tool result (seq 2) after the broken line.
    lines.push(extra_line(
        r#"{"message":{"role":"tool","content":[{"type":"tool_result","call_id":"c1","content":[]}]},"op":{"kind":"rewrite","target":2},"sources":[2]}"#,
    ));
    write_lines(&path, &lines);
    let error = open_error(&path);
    assert!(
        matches!(
            error,
            SessionError::Store(StoreError::Corrupt { line: 3, .. })
        ),
        "{error}"
    );

    let options = JsonlOptions {
        salvage: true,
        ..JsonlOptions::default()
    };
    let before = support::file_hash(&path);
    let store = JsonlStore::open(&path, options).unwrap();
    let (mut session, report) = Session::open(Box::new(store)).unwrap();
    assert_eq!(support::file_hash(&path), before);
    assert_eq!(report.skipped.len(), 1);
    let SkippedLine { line, reason } = &report.skipped[0];
    assert_eq!(*line, 3);
    assert!(reason.starts_with("column "), "{reason}");
    // Four events survive; the one after the gap hangs on the last kept
    // event before it, so the conversation is still one branch.
    assert_eq!(session.len(), 4);
    assert_eq!(session.active_path(), vec![0, 1, 2, 3]);
    let texts: Vec<String> = session
        .surface_messages()
        .iter()
        .map(|m| m.plain_text())
        .collect();
    assert_eq!(texts, vec!["hello", "", "next"]);
    assert_eq!(session.surface().seqs(), &[0, 3, 2]);
    // A salvaged store is read-only: write the result elsewhere.
    assert!(session.append_message(Message::user("x")).is_err());
}
