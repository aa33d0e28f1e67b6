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
    rewrite_blocks(&mut inner.content, &mut |source| {
        if let ImageSource::Blob {
            media_type, sha256, ..
        } = source
        {
            let data = get(sha256)?;
            *source = ImageSource::Base64 {
                media_type: media_type.clone(),
                data,
            };
            count += 1;
        }
        Ok(())
    })?;
    Ok(count)
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

fn blob_path(dir: &Path, sha256: &str) -> PathBuf {
    dir.join(sha256)
}

fn write_blob(dir: &Path, sha256: &str, data: &[u8]) -> Result<(), StoreError> {
    let path = blob_path(dir, sha256);
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
    let path = blob_path(dir, sha256);
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
