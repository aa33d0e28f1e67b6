//! Large images kept as content-addressed files beside the session.

use std::path::Path;
use std::path::PathBuf;
use std::sync::Arc;

use abridge_llm::Block;
use abridge_llm::ImageSource;
use abridge_llm::Message;
use sha2::Digest;
use sha2::Sha256;

use super::fs::sync_parent;
use crate::error::StoreError;
use crate::event::Event;
use crate::event::EventBody;
use crate::event::MessageEvent;

/// Base64 image data longer than this (64 KiB) is written to a blob file
/// instead of the session line, keeping lines short and the log fast to
/// scan.
pub const BLOB_THRESHOLD: usize = 64 * 1024;

/// `event` with its large inline images moved into blob files under
/// `dir`; `None` when it has none (the common case: no copy).
pub(crate) fn externalize(event: &Event, dir: &Path) -> Result<Option<Event>, StoreError> {
    externalize_event(event, &mut |sha256, data| {
        write_blob(dir, sha256, data.as_bytes())
    })
}

/// Replaces blob references in `message` with their data. Returns how many
/// were resolved (0: the message is untouched).
pub(crate) fn resolve(message: &mut Arc<Message>, dir: &Path) -> Result<usize, StoreError> {
    resolve_with(message, &mut |sha256| read_blob(dir, sha256))
}

/// A copy of `event` whose inline images over [`BLOB_THRESHOLD`] are
/// blob references, handing `put` each image's SHA-256 (lower-case hex of
/// the base64 text) and its base64 first, so a store keeps the data
/// wherever it likes (files, a table). `None` when nothing was large: the
/// event is written as it is.
///
/// # Errors
/// Whatever `put` returns; nothing is then rewritten.
pub fn externalize_event(
    event: &Event,
    put: &mut dyn FnMut(&str, &str) -> Result<(), StoreError>,
) -> Result<Option<Event>, StoreError> {
    let EventBody::Message(m) = &event.body else {
        return Ok(None);
    };
    let Some(smaller) = externalize_with(&m.message, put)? else {
        return Ok(None);
    };
    let mut copy = event.clone();
    copy.body = EventBody::Message(MessageEvent {
        message: Arc::new(smaller),
        op: m.op,
        sources: m.sources.clone(),
    });
    Ok(Some(copy))
}

fn externalize_with(
    message: &Arc<Message>,
    put: &mut dyn FnMut(&str, &str) -> Result<(), StoreError>,
) -> Result<Option<Message>, StoreError> {
    if !has_large_image(&message.content) {
        return Ok(None);
    }
    let mut copy = (**message).clone();
    rewrite_blocks(&mut copy.content, &mut |source| {
        if let ImageSource::Base64 { media_type, data } = source
            && data.len() > BLOB_THRESHOLD
        {
            let sha256 = hex_sha256(data.as_bytes());
            put(&sha256, data)?;
            *source = ImageSource::Blob {
                media_type: media_type.clone(),
                sha256,
                len: data.len() as u64,
            };
        }
        Ok(())
    })?;
    Ok(Some(copy))
}

/// Swaps every blob reference in `message` back for its base64, which
/// `get` fetches by SHA-256. Returns how many were resolved (0: the
/// message is untouched, not even copied).
///
/// A log may come from anywhere (a file someone edited, a client of a
/// service that wrote what it was sent), so a reference is checked before
/// it names a file or a row: one whose key is not a blob key
/// ([`is_blob_key`]) is never handed to `get`; its image is replaced by a
/// text block saying so ([`BAD_BLOB_REFERENCE`]), with a warning, and the
/// rest of the log reads as usual. The log itself is not changed.
///
/// # Errors
/// Whatever `get` returns (a missing or damaged blob).
pub fn resolve_with(
    message: &mut Arc<Message>,
    get: &mut dyn FnMut(&str) -> Result<String, StoreError>,
) -> Result<usize, StoreError> {
    if !has_blob(&message.content) {
        return Ok(0);
    }
    let mut count = 0;
    let inner = Arc::make_mut(message);
    resolve_blocks(&mut inner.content, get, &mut count)?;
    Ok(count)
}

fn resolve_blocks(
    blocks: &mut [Block],
    get: &mut dyn FnMut(&str) -> Result<String, StoreError>,
    count: &mut usize,
) -> Result<(), StoreError> {
    for block in blocks {
        match block {
            Block::Image {
                source: ImageSource::Blob { sha256, .. },
                ..
            } if !is_blob_key(sha256) => {
                tracing::warn!(
                    reference = %shown_key(sha256),
                    "an image's blob reference is not a blob key; the image is left out"
                );
                *block = Block::text(BAD_BLOB_REFERENCE);
            }
            Block::Image { source, .. } => {
                if let ImageSource::Blob {
                    media_type, sha256, ..
                } = source
                {
                    let data = get(sha256)?;
                    *source = ImageSource::Base64 {
                        media_type: media_type.clone(),
                        data,
                    };
                    *count += 1;
                }
            }
            Block::ToolResult { content, .. } => resolve_blocks(content, get, count)?,
            _ => {}
        }
    }
    Ok(())
}

/// Hex digits in a blob key: a SHA-256 is 32 bytes.
const BLOB_KEY_LEN: usize = 64;

/// True for a key a blob can be kept under: exactly the lower-case hex of
/// a SHA-256 (64 of `0-9a-f`), the only form [`externalize_event`] writes.
/// Anything else (a path, `..`, upper case, another length) names no blob.
pub fn is_blob_key(key: &str) -> bool {
    key.len() == BLOB_KEY_LEN && key.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// What an image becomes when a log is read whose blob reference to it
/// is not a blob key ([`is_blob_key`]): the image is unreadable, the rest
/// of the session is not.
pub const BAD_BLOB_REFERENCE: &str =
    "[image left out: its reference in the log is not a valid blob key]";

/// A bad key as a log line may show it: at most 80 characters, escaped.
fn shown_key(key: &str) -> String {
    let cut: String = key.chars().take(80).collect();
    format!("{cut:?}")
}

/// Lower-case hex SHA-256 of `bytes`: the name a blob is kept under.
pub fn blob_sha256(bytes: &[u8]) -> String {
    hex_sha256(bytes)
}

fn rewrite_blocks(
    blocks: &mut [Block],
    f: &mut dyn FnMut(&mut ImageSource) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    for block in blocks {
        match block {
            Block::Image { source, .. } => f(source)?,
            Block::ToolResult { content, .. } => rewrite_blocks(content, f)?,
            _ => {}
        }
    }
    Ok(())
}

fn has_large_image(blocks: &[Block]) -> bool {
    blocks.iter().any(|block| match block {
        Block::Image {
            source: ImageSource::Base64 { data, .. },
            ..
        } => data.len() > BLOB_THRESHOLD,
        Block::ToolResult { content, .. } => has_large_image(content),
        _ => false,
    })
}

fn has_blob(blocks: &[Block]) -> bool {
    blocks.iter().any(|block| match block {
        Block::Image {
            source: ImageSource::Blob { .. },
            ..
        } => true,
        Block::ToolResult { content, .. } => has_blob(content),
        _ => false,
    })
}

fn hex_sha256(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for byte in digest {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// The file of blob `sha256` under `dir`; `None` when `sha256` is not a
/// blob key, so no reference reaches outside `dir` (`/etc/passwd`,
/// `../other.jsonl`, `/dev/zero` are all refused here).
fn blob_path(dir: &Path, sha256: &str) -> Option<PathBuf> {
    is_blob_key(sha256).then(|| dir.join(sha256))
}

/// The error for a key that is not a blob key, naming the directory only.
fn not_a_key(dir: &Path, sha256: &str) -> StoreError {
    StoreError::Blob {
        path: dir.to_path_buf(),
        sha256: shown_key(sha256),
        reason: "not a blob key (64 lower-case hex digits)".to_string(),
    }
}

fn write_blob(dir: &Path, sha256: &str, data: &[u8]) -> Result<(), StoreError> {
    let path = blob_path(dir, sha256).ok_or_else(|| not_a_key(dir, sha256))?;
    let io = |op, source| StoreError::Io {
        path: path.clone(),
        op,
        source,
    };
    if path.exists() {
        // A writer killed between its rename and its directory sync left
        // a name that may not be durable yet; the line about to refer to
        // it must not outlive it.
        return sync_parent(&path).map_err(|e| io("sync the blob directory", e));
    }
    if !dir.is_dir() {
        std::fs::create_dir_all(dir).map_err(|e| io("create the blob directory", e))?;
        // The directory's own name, in the session's directory.
        sync_parent(dir).map_err(|e| io("sync the session's directory", e))?;
    }
    // Write to a temporary name then rename, so a crash never leaves a
    // blob whose content does not match its name.
    let tmp = dir.join(format!("{sha256}.tmp"));
    // A crash between create and rename leaves this name behind; the
    // session lock means no one else is writing it, so start over.
    let _ = std::fs::remove_file(&tmp);
    let mut file = super::fs::create_private(&tmp).map_err(|e| io("create a blob", e))?;
    std::io::Write::write_all(&mut file, data).map_err(|e| io("write a blob", e))?;
    file.sync_data().map_err(|e| io("sync a blob", e))?;
    std::fs::rename(&tmp, &path).map_err(|e| io("rename a blob", e))?;
    // Make the new name durable before the line that refers to it.
    sync_parent(&path).map_err(|e| io("sync the blob directory", e))
}

fn read_blob(dir: &Path, sha256: &str) -> Result<String, StoreError> {
    let path = blob_path(dir, sha256).ok_or_else(|| not_a_key(dir, sha256))?;
    let bytes = std::fs::read(&path).map_err(|e| StoreError::Blob {
        path: path.clone(),
        sha256: sha256.to_string(),
        reason: e.to_string(),
    })?;
    if hex_sha256(&bytes) != sha256 {
        return Err(StoreError::Blob {
            path,
            sha256: sha256.to_string(),
            reason: "content does not match its hash".to_string(),
        });
    }
    String::from_utf8(bytes).map_err(|_| StoreError::Blob {
        path,
        sha256: sha256.to_string(),
        reason: "not base64 text".to_string(),
    })
}

#[cfg(test)]
mod tests {
    use abridge_llm::Role;

    use super::*;

    fn blob_image(sha256: &str) -> Block {
        Block::Image {
            source: ImageSource::Blob {
                media_type: "image/png".to_string(),
                sha256: sha256.to_string(),
                len: 10,
            },
            width: None,
            height: None,
        }
    }

    #[test]
    fn only_lower_case_sha256_hex_is_a_blob_key() {
        assert!(is_blob_key(&hex_sha256(b"x")));
        assert!(is_blob_key(&"0".repeat(64)));
        for bad in [
            "/etc/passwd".to_string(),
            "../../team-b/main.jsonl".to_string(),
            "/dev/zero".to_string(),
            "/etc".to_string(),
            String::new(),
            "A".repeat(64),
            "0".repeat(63),
            "0".repeat(65),
            format!("{}/", "0".repeat(63)),
        ] {
            assert!(!is_blob_key(&bad), "{bad}");
        }
    }

    // Issue 28: a reference naming a path outside the blob directory was
    // joined to it and read (`/dev/zero` until memory ran out).
    #[test]
    fn a_reference_that_is_not_a_key_is_never_read_and_becomes_a_marker() {
        let dir = tempfile::tempdir().expect("dir");
        let good = hex_sha256(b"aGVsbG8=");
        write_blob(dir.path(), &good, b"aGVsbG8=").expect("write");
        let mut message = Arc::new(Message {
            role: Role::Tool,
            content: vec![
                blob_image("/dev/zero"),
                Block::ToolResult {
                    call_id: "c".to_string(),
                    content: vec![blob_image("../../team-b/main.jsonl"), blob_image(&good)],
                    is_error: false,
                },
                blob_image("/etc/passwd"),
            ],
            meta: abridge_llm::Meta::default(),
        });
        let mut asked = Vec::new();
        let resolved = resolve_with(&mut message, &mut |sha256| {
            asked.push(sha256.to_string());
            read_blob(dir.path(), sha256)
        })
        .expect("a bad reference does not fail the read");
        assert_eq!(resolved, 1);
        assert_eq!(asked, vec![good]);
        let marker = Block::text(BAD_BLOB_REFERENCE);
        assert_eq!(message.content[0], marker);
        assert_eq!(message.content[2], marker);
        let Block::ToolResult { content, .. } = &message.content[1] else {
            panic!("{:?}", message.content[1]);
        };
        assert_eq!(content[0], marker);
        assert!(matches!(
            &content[1],
            Block::Image { source: ImageSource::Base64 { data, .. }, .. } if data == "aGVsbG8="
        ));
    }

    #[test]
    fn the_file_store_refuses_a_key_that_is_not_one() {
        let dir = tempfile::tempdir().expect("dir");
        for bad in ["/etc/passwd", "../x", "/dev/zero"] {
            let error = read_blob(dir.path(), bad).unwrap_err();
            let text = error.to_string();
            assert!(text.contains("not a blob key"), "{text}");
            assert!(write_blob(dir.path(), bad, b"x").is_err());
        }
    }
}
