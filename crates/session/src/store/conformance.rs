//! A conformance suite for [`SessionStore`] implementations.
//!
//! Each function takes a fresh, empty store and checks one part of the
//! trait's contract, panicking with a message that names the broken rule.
//! The crate runs every function on [`MemoryStore`](super::MemoryStore),
//! on [`JsonlStore`](super::JsonlStore) under each fsync policy, and through
//! a `Box<dyn SessionStore>`; implementors of their own store can call
//! [`run_all`] from a test.
//!
//! Available with the `testing` feature (and in this crate's own tests).
//! Not a stable API: new checks may be added in any release.
//!
//! # Panics
//!
//! Every function panics when the store breaks the contract; that is its
//! purpose.

use std::fmt::Display;
use std::sync::Arc;

use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_llm::Message;

use super::SessionStore;
use crate::error::StoreError;
use crate::event::Event;
use crate::event::EventBody;
use crate::event::Header;
use crate::event::LogEvent;
use crate::event::MessageEvent;
use crate::event::Seq;
use crate::event::SurfaceOp;
use crate::store::BLOB_THRESHOLD;
use crate::store::line::encode_event;

/// Runs every check, each on a store from `fresh` (which must return an
/// empty store every time it is called).
pub fn run_all(fresh: &mut dyn FnMut() -> Box<dyn SessionStore>) {
    create_then_load(fresh().as_mut());
    append_before_create_fails(fresh().as_mut());
    append_then_load(fresh().as_mut());
    batches_keep_order(fresh().as_mut());
    unknown_events_round_trip(fresh().as_mut());
    large_images_round_trip(fresh().as_mut());
    empty_batch_is_harmless(fresh().as_mut());
    sync_after_appends(fresh().as_mut());
}

/// An empty store loads as `None`; after `create` it loads the header and
/// no events; a second `create` is refused with `AlreadyExists`.
pub fn create_then_load(store: &mut dyn SessionStore) {
    let loaded = ok(store.load(), "load an empty store");
    assert!(
        loaded.is_none(),
        "an empty store must load as None, got {loaded:?}"
    );
    let header = header();
    ok(store.create(&header), "create");
    let loaded = ok(store.load(), "load after create");
    let Some(loaded) = loaded else {
        panic!("a created store must load as Some");
    };
    assert_eq!(loaded.header, header, "the header must round-trip");
    assert!(loaded.events.is_empty(), "a new log has no events");
    match store.create(&header) {
        Err(StoreError::AlreadyExists { .. }) => {}
        other => panic!("a second create must be AlreadyExists, got {other:?}"),
    }
}

/// Appending to a store with no session is an error, and leaves the store
/// empty.
pub fn append_before_create_fails(store: &mut dyn SessionStore) {
    let result = store.append(&[user(0, None, "too early")]);
    assert!(result.is_err(), "append before create must fail");
    let loaded = ok(store.load(), "load after a refused append");
    assert!(loaded.is_none(), "a refused append must not create a log");
}

/// Events of every kind come back as written.
pub fn append_then_load(store: &mut dyn SessionStore) {
    ok(store.create(&header()), "create");
    let events = sample_events();
    ok(store.append(&events), "append");
    assert_same_events(&loaded_events(store), &events);
}

/// Several batches load in the order they were appended.
pub fn batches_keep_order(store: &mut dyn SessionStore) {
    ok(store.create(&header()), "create");
    let mut all = Vec::new();
    for batch in 0..5u64 {
        let events: Vec<Event> = (0..3)
            .map(|i| {
                let seq = batch * 3 + i;
                user(seq, seq.checked_sub(1), &format!("batch {batch} event {i}"))
            })
            .collect();
        ok(store.append(&events), "append a batch");
        all.extend(events);
    }
    assert_same_events(&loaded_events(store), &all);
}

/// An event type the crate does not know, read from a line, is written
/// back byte for byte: odd spacing, key order and unknown fields included.
pub fn unknown_events_round_trip(store: &mut dyn SessionStore) {
    ok(store.create(&header()), "create");
    let line = r#"{"seq":0,  "parent":null,"time":"2026-01-01T00:00:00.000Z","type":"x/future","data":{"z":1,"a":[true, null]},"extra":"kept"}"#;
    let event = match crate::store::line::decode_event(line) {
        Ok(event) => event,
        Err(e) => panic!("the sample unknown line must decode: {e}"),
    };
    ok(store.append(std::slice::from_ref(&event)), "append");
    let loaded = loaded_events(store);
    assert_eq!(loaded.len(), 1, "one event was written");
    let back = ok(encode_event(&loaded[0]), "encode the loaded event");
    assert_eq!(
        back, line,
        "an unknown event must be written back byte for byte"
    );
}

/// An image over [`BLOB_THRESHOLD`] comes back with exactly its data,
/// wherever the store keeps it.
pub fn large_images_round_trip(store: &mut dyn SessionStore) {
    ok(store.create(&header()), "create");
    let data = big_base64(BLOB_THRESHOLD + 1000);
    let message = Message {
        role: abridge_llm::Role::User,
        content: vec![
            Block::text("look"),
            Block::Image {
                source: ImageSource::Base64 {
                    media_type: "image/png".into(),
                    data,
                },
                width: Some(10),
                height: Some(10),
            },
        ],
        meta: abridge_llm::Meta::default(),
    };
    let event = Event {
        seq: 0,
        parent: None,
        time: TIME.into(),
        body: EventBody::Message(MessageEvent {
            message: Arc::new(message),
            op: SurfaceOp::Append,
            sources: Vec::new(),
        }),
    };
    ok(
        store.append(std::slice::from_ref(&event)),
        "append a large image",
    );
    assert_same_events(&loaded_events(store), &[event]);
}

/// An empty batch writes nothing and fails nothing.
pub fn empty_batch_is_harmless(store: &mut dyn SessionStore) {
    ok(store.create(&header()), "create");
    ok(store.append(&[]), "append an empty batch");
    ok(store.append(&[user(0, None, "one")]), "append");
    ok(store.append(&[]), "append an empty batch");
    assert_eq!(loaded_events(store).len(), 1, "empty batches add no events");
}

/// `sync` succeeds after appends and changes nothing that loads.
pub fn sync_after_appends(store: &mut dyn SessionStore) {
    ok(store.create(&header()), "create");
    ok(store.sync(), "sync an empty log");
    let events = sample_events();
    ok(store.append(&events), "append");
    ok(store.sync(), "sync");
    assert_same_events(&loaded_events(store), &events);
}

const TIME: &str = "2026-11-30T00:00:00.000Z";

fn header() -> Header {
    let mut header = Header::new("conformance");
    header.created = TIME.into();
    header.cwd = Some("/work".into());
    header
}

fn user(seq: Seq, parent: Option<Seq>, text: &str) -> Event {
    message_event(
        seq,
        parent,
        Message::user(text),
        SurfaceOp::Append,
        Vec::new(),
    )
}

fn message_event(
    seq: Seq,
    parent: Option<Seq>,
    message: Message,
    op: SurfaceOp,
    sources: Vec<Seq>,
) -> Event {
    Event {
        seq,
        parent,
        time: TIME.into(),
        body: EventBody::Message(MessageEvent {
            message: Arc::new(message),
            op,
            sources,
        }),
    }
}

/// One event of each shape: messages with each surface operation, tool
/// calls and results, text that needs escaping, a leaf, a log event.
fn sample_events() -> Vec<Event> {
    let call = Message {
        role: abridge_llm::Role::Assistant,
        content: vec![
            Block::Thinking {
                thinking: "hm".into(),
                signature: Some("sig".into()),
            },
            Block::ToolCall {
                id: "c1".into(),
                name: "read".into(),
                arguments: serde_json::json!({"path": "a \"quoted\"\nname", "n": 1.5}),
            },
        ],
        meta: abridge_llm::Meta::default(),
    };
    vec![
        user(
            0,
            None,
            "héllo \u{1F600} \"quotes\" \\ back\nslash \u{0001}",
        ),
        message_event(1, Some(0), call, SurfaceOp::Append, Vec::new()),
        message_event(
            2,
            Some(1),
            Message::tool_result("c1", "fn main() {}", false),
            SurfaceOp::Append,
            Vec::new(),
        ),
        message_event(
            3,
            Some(2),
            Message::tool_result("c1", "[pruned]", false),
            SurfaceOp::Rewrite { target: 2 },
            vec![2],
        ),
        Event {
            seq: 4,
            parent: Some(3),
            time: TIME.into(),
            body: EventBody::Log(LogEvent {
                kind: "compaction/start".into(),
                data: serde_json::json!({"id": "k1"}),
                raw: None,
            }),
        },
        message_event(
            5,
            Some(4),
            Message::user("[checkpoint]"),
            SurfaceOp::Replace { start: 0, end: 2 },
            vec![0, 1, 3, 4],
        ),
        Event {
            seq: 6,
            parent: Some(0),
            time: TIME.into(),
            body: EventBody::Leaf,
        },
    ]
}

fn big_base64(len: usize) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut state: u32 = 0x9E37_79B9;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            char::from(ALPHABET[(state % 64) as usize])
        })
        .collect()
}

fn loaded_events(store: &mut dyn SessionStore) -> Vec<Event> {
    match ok(store.load(), "load") {
        Some(loaded) => loaded.events,
        None => panic!("a created store must load as Some"),
    }
}

/// Events compare equal apart from the kept raw line (a store may keep it,
/// and must then write it back unchanged, which `encode_event` checks).
fn assert_same_events(loaded: &[Event], written: &[Event]) {
    assert_eq!(loaded.len(), written.len(), "event count");
    for (l, w) in loaded.iter().zip(written) {
        assert_eq!(
            ok(encode_event(l), "encode"),
            ok(encode_event(w), "encode"),
            "event {} changed on its way through the store",
            w.seq
        );
        match (&l.body, &w.body) {
            (EventBody::Log(a), EventBody::Log(b)) => {
                assert_eq!(
                    (&a.kind, &a.data),
                    (&b.kind, &b.data),
                    "log event {}",
                    w.seq
                );
            }
            _ => assert_eq!(l, w, "event {} changed on its way through the store", w.seq),
        }
    }
}

fn ok<T, E: Display>(result: Result<T, E>, what: &str) -> T {
    match result {
        Ok(value) => value,
        Err(e) => panic!("{what} failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::store::FsyncPolicy;
    use crate::store::JsonlOptions;
    use crate::store::JsonlStore;
    use crate::store::MemoryStore;

    #[test]
    fn memory_store_conforms() {
        run_all(&mut || Box::new(MemoryStore::new()));
    }

    fn jsonl_conforms(fsync: FsyncPolicy) {
        let dir = tempfile::tempdir().unwrap();
        let mut n = 0;
        run_all(&mut || {
            n += 1;
            let path = dir.path().join(format!("s{n}.jsonl"));
            let options = JsonlOptions {
                fsync,
                ..JsonlOptions::default()
            };
            Box::new(JsonlStore::open(path, options).unwrap())
        });
    }

    #[test]
    fn jsonl_store_conforms_with_fsync_every_batch() {
        jsonl_conforms(FsyncPolicy::EveryBatch);
    }

    #[test]
    fn jsonl_store_conforms_with_fsync_by_interval() {
        jsonl_conforms(FsyncPolicy::Interval(Duration::from_millis(5)));
    }

    #[test]
    fn jsonl_store_conforms_without_fsync() {
        jsonl_conforms(FsyncPolicy::Never);
    }

    #[test]
    fn boxed_store_conforms() {
        // A Box<Box<dyn SessionStore>> goes through the blanket impl.
        run_all(&mut || Box::new(Box::new(MemoryStore::new()) as Box<dyn SessionStore>));
    }
}
