//! The JSONL store's promises: one writer, private files, unknown events
//! kept byte for byte, large images in blobs.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::path::PathBuf;

use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Role;
use abridge_session::BLOB_THRESHOLD;
use abridge_session::Draft;
use abridge_session::FsyncPolicy;
use abridge_session::JsonlOptions;
use abridge_session::JsonlStore;
use abridge_session::Session;
use abridge_session::SessionError;
use abridge_session::StoreError;

use crate::support;
use crate::support::TIME;

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn a_second_writer_is_locked_out_until_the_first_is_dropped() {
    let (_dir, path) = support::temp_session();
    let first = support::create(&path);
    let error = JsonlStore::open(&path, JsonlOptions::default()).unwrap_err();
    assert!(matches!(error, StoreError::Locked { .. }));
    assert_eq!(
        error.to_string(),
        format!(
            "{}: another process is writing this session (lock {}.lock is held); close it or open read-only",
            path.display(),
            path.display()
        )
    );
    // A viewer may still read it.
    let options = JsonlOptions {
        read_only: true,
        ..JsonlOptions::default()
    };
    let (viewer, _) = Session::open(Box::new(JsonlStore::open(&path, options).unwrap())).unwrap();
    assert!(viewer.is_empty());
    drop(first);
    let mut second = support::open(&path);
    second.append_message(Message::user("mine now")).unwrap();
}

#[test]
fn a_read_only_store_refuses_appends() {
    let (_dir, path) = support::temp_session();
    drop(support::create(&path));
    let options = JsonlOptions {
        read_only: true,
        ..JsonlOptions::default()
    };
    let (mut viewer, _) =
        Session::open(Box::new(JsonlStore::open(&path, options).unwrap())).unwrap();
    let before = support::file_hash(&path);
    assert!(matches!(
        viewer.append_message(Message::user("no")),
        Err(SessionError::Store(StoreError::Io { .. }))
    ));
    assert!(viewer.is_empty());
    assert_eq!(support::file_hash(&path), before);
}

fn image(len: usize) -> (String, Block) {
    // Different lengths give different data from the first byte on.
    let mut state = len as u64 | 1;
    let data: String = (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef"[(state % 32) as usize])
        })
        .collect();
    let block = Block::Image {
        source: ImageSource::Base64 {
            media_type: "image/png".into(),
            data: data.clone(),
        },
        width: Some(640),
        height: Some(480),
    };
    (data, block)
}

fn blob_files(path: &Path) -> Vec<PathBuf> {
    let dir = PathBuf::from(format!("{}.blobs", path.display()));
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
            files.sort();
            files
        }
        Err(_) => Vec::new(),
    }
}

#[test]
fn files_are_private() {
    let (_dir, path) = support::temp_session();
    let mut session = support::create(&path);
    let (_, block) = image(BLOB_THRESHOLD + 1);
    session
        .append_message(Message {
            role: Role::User,
            content: vec![block],
            meta: Meta::default(),
        })
        .unwrap();
    assert_eq!(mode(&path), 0o600, "session file");
    assert_eq!(
        mode(Path::new(&format!("{}.lock", path.display()))),
        0o600,
        "lock file"
    );
    let blobs = blob_files(&path);
    assert_eq!(blobs.len(), 1);
    assert_eq!(mode(&blobs[0]), 0o600, "blob file");
}

#[test]
fn large_images_go_to_blobs_and_come_back() {
    let (_dir, path) = support::temp_session();
    let mut session = support::create(&path);
    let (small_data, small) = image(1000);
    let (big_data, big) = image(BLOB_THRESHOLD + 1);
    let (nested_data, nested) = image(3 * BLOB_THRESHOLD);
    let user = Message {
        role: Role::User,
        content: vec![Block::text("look"), small, big.clone()],
        meta: Meta::default(),
    };
    let tool = Message {
        role: Role::Tool,
        content: vec![Block::ToolResult {
            call_id: "c1".into(),
            content: vec![Block::text("screenshot"), nested],
            is_error: false,
        }],
        meta: Meta::default(),
    };
    session.append_message(user.clone()).unwrap();
    session.append_message(tool.clone()).unwrap();
    // The same image again is stored once.
    session
        .append_message(Message {
            role: Role::User,
            content: vec![big],
            meta: Meta::default(),
        })
        .unwrap();
    drop(session);

    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.len() < 8 * 1024,
        "the session file keeps only references"
    );
    assert!(text.contains(&small_data), "small images stay inline");
    assert!(!text.contains(&big_data[..1000]));
    assert!(!text.contains(&nested_data[..1000]));
    assert_eq!(blob_files(&path).len(), 2);

    let (session, report) = Session::open(support::jsonl(&path, FsyncPolicy::Never)).unwrap();
    assert_eq!(report.blobs_resolved, 3);
    assert_eq!(**session.message(0).unwrap(), user);
    assert_eq!(**session.message(1).unwrap(), tool);
}

#[test]
fn a_missing_blob_is_a_clear_error() {
    let (_dir, path) = support::temp_session();
    let mut session = support::create(&path);
    let (_, big) = image(BLOB_THRESHOLD + 10);
    session
        .append_message(Message {
            role: Role::User,
            content: vec![big],
            meta: Meta::default(),
        })
        .unwrap();
    drop(session);
    let blob = blob_files(&path).remove(0);
    let sha = blob.file_name().unwrap().to_str().unwrap().to_string();

    std::fs::write(&blob, "not the image").unwrap();
    let error = Session::open(support::jsonl(&path, FsyncPolicy::Never)).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "{}: blob {sha} is missing or damaged: content does not match its hash",
            blob.display()
        )
    );

    std::fs::remove_file(&blob).unwrap();
    let before = support::file_hash(&path);
    let error = Session::open(support::jsonl(&path, FsyncPolicy::Never)).unwrap_err();
    assert!(matches!(
        error,
        SessionError::Store(StoreError::Blob { .. })
    ));
    assert_eq!(
        error.to_string(),
        format!(
            "{}: blob {sha} is missing or damaged: No such file or directory (os error 2)",
            blob.display()
        )
    );
    assert_eq!(support::file_hash(&path), before);
}

#[test]
fn a_blob_left_half_written_by_a_crash_does_not_block_the_next_write() {
    let (_dir, path) = support::temp_session();
    let mut session = support::create(&path);
    let (data, big) = image(BLOB_THRESHOLD + 10);
    // What a crash between creating the temporary file and renaming it
    // leaves behind.
    let dir = PathBuf::from(format!("{}.blobs", path.display()));
    std::fs::create_dir_all(&dir).unwrap();
    let sha = {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(data.as_bytes());
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    std::fs::write(dir.join(format!("{sha}.tmp")), "half").unwrap();
    session
        .append_message(Message {
            role: Role::User,
            content: vec![big],
            meta: Meta::default(),
        })
        .unwrap();
    drop(session);
    let (session, _) = Session::open(support::jsonl(&path, FsyncPolicy::Never)).unwrap();
    assert_eq!(session.len(), 1);
}

/// A file with event types this crate does not know, with odd spacing,
/// key order and extra fields, copied event by event into a new session:
/// the copy is the same file, byte for byte.
#[test]
fn unknown_event_types_are_written_back_byte_for_byte() {
    let (dir, path) = support::temp_session();
    let mut session = support::create(&path);
    session
        .append(Draft::message(Message::user("hi")).with_time(TIME))
        .unwrap();
    drop(session);
    let odd = [
        r#"{"type":"x/plugin-state","seq":1,"parent":0,"time":"2026-11-30T00:00:00.000Z","data":{"b":[1, 2 ,3],"a":{"nested":"é\u00e9"}},"extra":true}"#,
        r#"{"seq":2,"parent":1,"time":"2026-11-30T00:00:00.000Z","type":"model_change","data":{"model":"m"}}"#,
        r#"{"seq":3, "parent":2, "time":"2026-11-30T00:00:00.000Z", "type":"x/no-data"}"#,
    ];
    let mut text = std::fs::read_to_string(&path).unwrap();
    for line in odd {
        text.push_str(line);
        text.push('\n');
    }
    std::fs::write(&path, &text).unwrap();

    let (source, _) = Session::open(support::jsonl(&path, FsyncPolicy::Never)).unwrap();
    let copy_path = dir.path().join("copy.jsonl");
    let store = support::jsonl(&copy_path, FsyncPolicy::Never);
    let mut copy = Session::create(store, source.header().clone()).unwrap();
    for event in source.events() {
        let draft = Draft::body(event.body.clone())
            .with_parent(event.parent)
            .with_time(event.time.clone());
        copy.append(draft).unwrap();
    }
    drop(copy);
    assert_eq!(std::fs::read_to_string(&copy_path).unwrap(), text);

    // Appended somewhere else, the kept line would lie about its seq: it
    // is written fresh instead, and the file still opens.
    let moved_path = dir.path().join("moved.jsonl");
    let mut moved = support::create(&moved_path);
    moved.append_message(Message::user("first")).unwrap();
    moved.append_message(Message::user("second")).unwrap();
    for event in &source.events()[1..] {
        moved.append(Draft::body(event.body.clone())).unwrap();
    }
    let live = support::lines(moved.events());
    drop(moved);
    let (reopened, _) = Session::open(support::jsonl(&moved_path, FsyncPolicy::Never)).unwrap();
    assert_eq!(support::lines(reopened.events()), live);
    assert_eq!(reopened.events()[2].log().unwrap().kind, "x/plugin-state");
    assert_eq!(
        reopened.events()[2].log().unwrap().data,
        serde_json::json!({"b":[1,2,3],"a":{"nested":"éé"}})
    );
}

#[test]
fn create_refuses_an_existing_session() {
    let (_dir, path) = support::temp_session();
    drop(support::create(&path));
    let before = support::file_hash(&path);
    let error = Session::create(
        support::jsonl(&path, FsyncPolicy::Never),
        support::header("again"),
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("{}: a session already exists here", path.display())
    );
    assert_eq!(support::file_hash(&path), before);
}
