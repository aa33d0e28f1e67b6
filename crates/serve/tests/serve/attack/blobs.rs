//! Blob references: a client never names one; a log that holds a bad one
//! still opens; on PostgreSQL a tenant cannot borrow another's image.

use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_llm::Message;
use abridge_llm::Meta;
use abridge_llm::Role;
use serde_json::json;

use super::code;
use crate::common::Setup;
use crate::common::TOKEN_A;
use crate::common::TOKEN_B;
use crate::common::small;

fn blob(sha256: &str) -> serde_json::Value {
    json!({"type": "image", "source": {"kind": "blob", "media_type": "image/png", "sha256": sha256, "len": 10}})
}

// Issue 28: `S=/etc/passwd`, `../../team-b/main.jsonl`, `/dev/zero`, `/etc`
// were joined to the blob directory and read; the session then answered
// 500 on every route.
#[tokio::test]
async fn a_client_cannot_name_a_blob() {
    let dir = tempfile::tempdir().expect("dir");
    let server = Setup::new(dir.path()).start().await;
    let a = server.client(TOKEN_A);
    a.create(&small("main", &["digest"])).await;
    let hex = "0".repeat(64);
    for sha256 in [
        "/etc/passwd",
        "../../team-b/main.jsonl",
        "/dev/zero",
        "/etc",
        hex.as_str(),
    ] {
        for (messages, path) in [
            (
                json!([{"role": "user", "content": [{"type": "text", "text": "look"}, blob(sha256)]}]),
                "messages[0].content[1]",
            ),
            (
                json!([
                    {"role": "assistant", "content": [{"type": "tool_call", "id": "c1", "name": "shot", "arguments": {}}]},
                    {"role": "tool", "content": [{"type": "tool_result", "call_id": "c1", "content": [blob(sha256)]}]}
                ]),
                "messages[1].content[0].content[0]",
            ),
        ] {
            let (status, body) = a
                .post("/v1/sessions/main/messages", &json!({"messages": messages}))
                .await;
            assert_eq!(status, 422, "{sha256}: {body}");
            assert_eq!(code(status, &body), "rejected");
            let message = body["error"]["message"].as_str().unwrap_or_default();
            assert!(message.starts_with(path), "{message}");
            assert!(
                !message.contains("/etc") && !message.contains(".jsonl"),
                "{message}"
            );
        }
    }
    for route in ["stats", "context", "request", "report"] {
        let (status, _) = a.get_text(&format!("/v1/sessions/main/{route}")).await;
        assert_eq!(status, 200, "{route}");
    }
    let (_, context) = a.get("/v1/sessions/main/context").await;
    assert_eq!(context["messages"], json!([]), "nothing was written");
    server.shutdown().await;
}

// Issue 28: a session whose log held a bad reference answered 500 on
// every route from then on. It opens now, the image replaced by a marker.
#[tokio::test]
async fn a_session_holding_a_bad_reference_still_opens() {
    let dir = tempfile::tempdir().expect("dir");
    let setup = Setup::new(dir.path());
    let server = setup.start().await;
    server
        .client(TOKEN_A)
        .create(&small("old", &["digest"]))
        .await;
    server.shutdown().await;
    // What a client could write before the fix, straight into the log.
    {
        let path = dir.path().join("team-a").join("old.jsonl");
        let store =
            abridge_session::JsonlStore::open(&path, abridge_session::JsonlOptions::default())
                .expect("store");
        let (mut session, _) = abridge_session::Session::open(Box::new(store)).expect("open");
        for sha256 in ["/etc/passwd", "../../team-b/main.jsonl", "/dev/zero"] {
            let image = Block::Image {
                source: ImageSource::Blob {
                    media_type: "image/png".into(),
                    sha256: sha256.into(),
                    len: 10,
                },
                width: None,
                height: None,
            };
            session
                .append_message(Message {
                    role: Role::User,
                    content: vec![Block::text("look"), image],
                    meta: Meta::default(),
                })
                .expect("the library writes what it is given");
        }
    }
    let server = setup.start().await;
    let a = server.client(TOKEN_A);
    for route in ["stats", "request", "report"] {
        let (status, body) = a.get_text(&format!("/v1/sessions/old/{route}")).await;
        assert_eq!(status, 200, "{route}: {body}");
    }
    let (status, context) = a.get("/v1/sessions/old/context").await;
    assert_eq!(status, 200, "{context}");
    let messages = context["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 3);
    for message in messages {
        assert_eq!(
            message["message"]["content"][1]["text"],
            abridge_session::BAD_BLOB_REFERENCE,
            "{message}"
        );
    }
    server.shutdown().await;
}

// Issue 28: on PostgreSQL the blobs table was shared by all tenants, so
// tenant B named the hash of tenant A's image and read it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL (ABRIDGE_TEST_POSTGRES)"]
async fn on_postgres_a_tenant_cannot_borrow_another_tenants_image() {
    let db = crate::pg::PgSchema::new("attack_blobs");
    let mut setup = Setup::new(std::path::Path::new("unused"));
    setup.pg = Some(db.connect(std::time::Duration::from_secs(30)));
    let server = setup.start().await;
    let (a, b) = (server.client(TOKEN_A), server.client(TOKEN_B));
    a.create(&small("main", &["digest"])).await;
    b.create(&small("main", &["digest"])).await;
    // Over the blob threshold, so it is kept in A's blob rows.
    let data = "QUJD".repeat(abridge_session::BLOB_THRESHOLD / 4 + 256);
    let image = json!({"type": "image", "source": {"kind": "base64", "media_type": "image/png", "data": data}});
    let (status, body) = a
        .post(
            "/v1/sessions/main/messages",
            &json!({"messages": [{"role": "user", "content": [image]}]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let hash = abridge_session::blob_sha256(data.as_bytes());
    let (status, body) = b
        .post(
            "/v1/sessions/main/messages",
            &json!({"messages": [{"role": "user", "content": [blob(&hash)]}]}),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    let (_, context) = b.get_text("/v1/sessions/main/context").await;
    assert!(!context.contains(&data[..200]), "B reads none of A's image");
    // A reads its own image back, resolved from its own blob row.
    let (_, context) = a.get_text("/v1/sessions/main/context").await;
    assert!(context.contains(&data[..200]));
    server.shutdown().await;
}
