//! What an inline image's header says about its size, and the cap on the
//! pixels an image may claim.
//!
//! One reader for every crate: the meter bills by this size, and the
//! places images enter abridge (the session's append, the importers, the
//! service's append) refuse an image claiming more than a cap. Only the
//! first bytes are decoded (the header); no image is ever decoded whole,
//! so a hostile header costs nothing to read, and the cap exists for what
//! comes after abridge: a provider or a viewer that would decode it.

use base64::Engine;

use crate::message::Block;
use crate::message::ImageSource;
use crate::message::Message;

/// The default cap on the pixels an image may claim: 50 megapixels.
/// Past every provider's limit (Anthropic and OpenAI scale anything above
/// about 2 to 10 megapixels down, and reject files over 20 to 32 MB,
/// which no honest 50-megapixel screenshot fits); decoded as RGBA it is
/// 200 MB, the most one image should make a reader allocate.
pub const DEFAULT_MAX_IMAGE_PIXELS: u64 = 50_000_000;

/// An image claims more pixels than allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: the image claims {width}x{height} pixels, over the limit of {limit} pixels")]
pub struct ImageTooLarge {
    /// Where the image is in its message, as a path
    /// (`content[1]`, `content[0].content[2]` inside a tool result).
    pub field: String,
    /// Width it claims.
    pub width: u32,
    /// Height it claims.
    pub height: u32,
    /// The cap.
    pub limit: u64,
}

/// Refuses the first image in `message` that claims more than `limit`
/// pixels: by its inline header when one can be read, else by its stated
/// width and height.
///
/// # Errors
/// [`ImageTooLarge`] naming where the image is and what it claims.
pub fn check_image_pixels(message: &Message, limit: u64) -> Result<(), ImageTooLarge> {
    check_blocks(&message.content, "content", limit)
}

fn check_blocks(blocks: &[Block], path: &str, limit: u64) -> Result<(), ImageTooLarge> {
    for (index, block) in blocks.iter().enumerate() {
        match block {
            Block::Image {
                source,
                width,
                height,
            } => {
                let stated = width.zip(*height);
                let Some((w, h)) = sniff_size(source).or(stated) else {
                    continue;
                };
                if u64::from(w) * u64::from(h) > limit {
                    return Err(ImageTooLarge {
                        field: format!("{path}[{index}]"),
                        width: w,
                        height: h,
                        limit,
                    });
                }
            }
            Block::ToolResult { content, .. } => {
                check_blocks(content, &format!("{path}[{index}].content"), limit)?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Base64 characters decoded when looking for a header: 64 KiB of image,
/// enough to pass the EXIF block that precedes a JPEG's frame header.
const SNIFF_BASE64_CHARS: usize = 87_384;

/// The pixel size in an inline image's header (PNG, GIF, JPEG, WebP),
/// if it has one we read; `None` for blobs and remote addresses.
pub fn sniff_size(source: &ImageSource) -> Option<(u32, u32)> {
    let data = match source {
        ImageSource::Base64 { data, .. } => data.as_str(),
        ImageSource::Url { url } => url.strip_prefix("data:")?.split_once(";base64,")?.1,
        ImageSource::Blob { .. } => return None,
    };
    let mut take = data.len().min(SNIFF_BASE64_CHARS);
    take -= take % 4;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.get(..take)?)
        .ok()?;
    header_size(&bytes)
}

fn be16(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from(u16::from_be_bytes([*b.get(i)?, *b.get(i + 1)?])))
}

fn le16(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from(u16::from_le_bytes([*b.get(i)?, *b.get(i + 1)?])))
}

fn be32(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(i..i + 4)?.try_into().ok()?))
}

fn le24(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from(*b.get(i)?) | u32::from(*b.get(i + 1)?) << 8 | u32::from(*b.get(i + 2)?) << 16)
}

/// Width and height from the first bytes of a PNG, GIF, JPEG or WebP.
fn header_size(b: &[u8]) -> Option<(u32, u32)> {
    if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Some((be32(b, 16)?, be32(b, 20)?));
    }
    if b.starts_with(b"GIF87a") || b.starts_with(b"GIF89a") {
        return Some((le16(b, 6)?, le16(b, 8)?));
    }
    if b.starts_with(b"RIFF") && b.get(8..12) == Some(b"WEBP") {
        return match b.get(12..16)? {
            b"VP8X" => Some((le24(b, 24)? + 1, le24(b, 27)? + 1)),
            b"VP8 " => Some((le16(b, 26)? & 0x3fff, le16(b, 28)? & 0x3fff)),
            b"VP8L" => {
                let bits = u32::from_le_bytes(b.get(21..25)?.try_into().ok()?);
                Some(((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1))
            }
            _ => None,
        };
    }
    if b.starts_with(&[0xff, 0xd8]) {
        return jpeg_size(b);
    }
    None
}

/// Walks JPEG segments to the first start-of-frame marker.
fn jpeg_size(b: &[u8]) -> Option<(u32, u32)> {
    let mut i = 2;
    while i + 4 <= b.len() {
        if b[i] != 0xff {
            return None;
        }
        let marker = b[i + 1];
        if marker == 0xff {
            i += 1;
            continue;
        }
        let len = usize::try_from(be16(b, i + 2)?).ok()?;
        let is_sof = matches!(marker, 0xc0..=0xcf) && !matches!(marker, 0xc4 | 0xc8 | 0xcc);
        if is_sof {
            return Some((be16(b, i + 7)?, be16(b, i + 5)?));
        }
        i += 2 + len;
    }
    None
}

/// A base64 PNG whose header claims `width` x `height` (the header only:
/// enough for every reader here). For tests and fuzzers of the cap.
pub fn png_header_base64(width: u32, height: u32) -> String {
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.extend(width.to_be_bytes());
    png.extend(height.to_be_bytes());
    png.extend([8, 6, 0, 0, 0]);
    base64::engine::general_purpose::STANDARD.encode(png)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(bytes: &[u8]) -> ImageSource {
        ImageSource::Base64 {
            media_type: "image/png".into(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    fn png(width: u32, height: u32) -> Block {
        Block::Image {
            source: ImageSource::Base64 {
                media_type: "image/png".into(),
                data: png_header_base64(width, height),
            },
            width: None,
            height: None,
        }
    }

    #[test]
    fn sizes_are_read_from_headers() {
        let png = base64::engine::general_purpose::STANDARD
            .decode(png_header_base64(640, 480))
            .unwrap();
        assert_eq!(sniff_size(&b64(&png)), Some((640, 480)));
        let gif = b"GIF89a\x20\x03\x58\x02\0\0";
        assert_eq!(sniff_size(&b64(gif)), Some((800, 600)));
        // SOI, an APP0 segment of 16 bytes, then SOF0 with 300 x 200.
        let mut jpeg = vec![0xff, 0xd8, 0xff, 0xe0, 0, 16];
        jpeg.extend([0; 14]);
        jpeg.extend([0xff, 0xc0, 0, 17, 8, 0, 200, 1, 44, 3]);
        assert_eq!(sniff_size(&b64(&jpeg)), Some((300, 200)));
        let data_url = ImageSource::Url {
            url: format!("data:image/png;base64,{}", png_header_base64(640, 480)),
        };
        assert_eq!(sniff_size(&data_url), Some((640, 480)));
    }

    #[test]
    fn an_image_claiming_past_the_cap_is_named_by_its_place() {
        let nested = Message::tool_result("c1", "shot", false);
        let mut nested = nested;
        if let Some(Block::ToolResult { content, .. }) = nested.content.first_mut() {
            content.push(png(100_000, 100_000));
        }
        assert_eq!(
            check_image_pixels(&nested, DEFAULT_MAX_IMAGE_PIXELS),
            Err(ImageTooLarge {
                field: "content[0].content[1]".into(),
                width: 100_000,
                height: 100_000,
                limit: DEFAULT_MAX_IMAGE_PIXELS,
            })
        );
        let user = Message {
            content: vec![Block::text("look"), png(5000, 10_000)],
            ..Message::user("")
        };
        assert_eq!(check_image_pixels(&user, 50_000_000), Ok(()));
        assert_eq!(
            check_image_pixels(&user, 49_999_999)
                .unwrap_err()
                .to_string(),
            "content[1]: the image claims 5000x10000 pixels, over the limit of 49999999 pixels"
        );
    }

    #[test]
    fn a_stated_size_counts_when_there_is_no_header() {
        let message = Message {
            content: vec![Block::Image {
                source: ImageSource::Url {
                    url: "https://example.com/a.png".into(),
                },
                width: Some(20_000),
                height: Some(20_000),
            }],
            ..Message::user("")
        };
        assert!(check_image_pixels(&message, DEFAULT_MAX_IMAGE_PIXELS).is_err());
        assert!(check_image_pixels(&message, 400_000_000).is_ok());
    }
}
