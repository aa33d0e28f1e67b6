//! Other agents' session files in their documented shapes, built to show
//! one awkward case, for importer and command tests that must agree on
//! one fixture.

use serde_json::json;

/// The first line of a pi (v3) session file: its header.
pub const PI_HEADER_LINE: &str =
    r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00Z","cwd":"/"}"#;

/// A pi user message holding only an inline PNG whose header claims
/// `width` x `height` pixels (the bytes are a header alone: cheap to
/// build, however many pixels they claim).
pub fn pi_image_line(width: u32, height: u32) -> String {
    json!({
        "type": "message", "id": "m1", "parentId": null, "timestamp": "2026-01-01T00:00:01Z",
        "message": {"role": "user", "timestamp": 1, "content": [
            {"type": "image", "mimeType": "image/png",
                "data": abridge_llm::png_header_base64(width, height)},
        ]},
    })
    .to_string()
}

/// A whole pi session file: the header, then [`pi_image_line`] on line 2.
pub fn pi_session_with_image(width: u32, height: u32) -> String {
    format!("{PI_HEADER_LINE}\n{}\n", pi_image_line(width, height))
}
