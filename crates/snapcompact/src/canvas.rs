//! A frame's pixels as PNG scanlines, drawn a glyph row at a time, and
//! their encoding.
//!
//! The renderer never touches single pixels: a glyph row is a bit mask,
//! spread to two bits per pixel by a table and ORed into the scanline bytes
//! it covers; a frame with one ink is narrowed to one bit per pixel by a
//! second table. The encoder settings are chosen for text frames: see
//! [`DEFLATE`].

use crate::error::Error;

/// Palette: paper, ink, dim ink (RGB).
pub(crate) const PAPER: [u8; 3] = [0xff, 0xff, 0xff];
pub(crate) const INK: [u8; 3] = [0x00, 0x00, 0x00];
pub(crate) const DIM: [u8; 3] = [0x60, 0x60, 0x60];

/// A frame's pixels as PNG scanlines of two bits per pixel, most
/// significant bits first, palette indices 0 paper, 1 ink, 2 dim.
pub(crate) struct Canvas {
    width: u32,
    height: u32,
    /// Bytes per scanline.
    row_bytes: usize,
    data: Vec<u8>,
}

/// `SPREAD[b]`: the eight bits of `b` each doubled into a pair `0b01`,
/// the first bit in the top pair: a byte of a glyph row as eight two-bit
/// pixels of colour 1.
const SPREAD: [u16; 256] = spread_table();

const fn spread_table() -> [u16; 256] {
    let mut table = [0u16; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut out = 0u16;
        let mut bit = 0;
        while bit < 8 {
            if byte & (0x80 >> bit) != 0 {
                out |= 1 << (14 - 2 * bit);
            }
            bit += 1;
        }
        table[byte] = out;
        byte += 1;
    }
    table
}

/// `NARROW[b]`: a byte of four two-bit pixels as four one-bit pixels (in
/// the low nibble, the first pixel in its top bit), a pixel set when its
/// pair is not paper.
const NARROW: [u8; 256] = narrow_table();

const fn narrow_table() -> [u8; 256] {
    let mut table = [0u8; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut out = 0u8;
        let mut pixel = 0;
        while pixel < 4 {
            if (byte >> (6 - 2 * pixel)) & 0b11 != 0 {
                out |= 0b1000 >> pixel;
            }
            pixel += 1;
        }
        table[byte] = out;
        byte += 1;
    }
    table
}

impl Canvas {
    pub(crate) fn new(width: u32, height: u32) -> Canvas {
        let row_bytes = usize::try_from(width).unwrap_or(0).div_ceil(4);
        Canvas {
            width,
            height,
            row_bytes,
            data: vec![0; row_bytes * usize::try_from(height).unwrap_or(0)],
        }
    }

    /// Inks the pixels of scanline `y` from column `x0` whose bits are set
    /// in `mask` (bit 31 is column `x0`), in `colour` (1 or 2). Pixels past
    /// the frame's right or bottom edge are dropped. Returns true when any
    /// pixel was inked.
    pub(crate) fn blit_row(&mut self, y: u32, x0: u32, mask: u32, colour: u8) -> bool {
        if y >= self.height || x0 >= self.width || mask == 0 {
            return false;
        }
        // Columns past the right edge are cut from the mask.
        let room = self.width - x0;
        let mask = if room < 32 {
            mask & (u32::MAX << (32 - room))
        } else {
            mask
        };
        if mask == 0 {
            return false;
        }
        let [b0, b1, b2, b3] = mask.to_be_bytes();
        let spread = (u64::from(SPREAD[usize::from(b0)]) << 48)
            | (u64::from(SPREAD[usize::from(b1)]) << 32)
            | (u64::from(SPREAD[usize::from(b2)]) << 16)
            | u64::from(SPREAD[usize::from(b3)]);
        let pairs = if colour == 2 { spread << 1 } else { spread };
        let bit = usize::try_from(x0).unwrap_or(usize::MAX) * 2;
        let shifted = (u128::from(pairs) << 64) >> (bit % 8);
        let start = usize::try_from(y).unwrap_or(usize::MAX) * self.row_bytes + bit / 8;
        let end = (start + 9).min((usize::try_from(y).unwrap_or(0) + 1) * self.row_bytes);
        let bytes = shifted.to_be_bytes();
        if let Some(out) = self.data.get_mut(start..end) {
            for (o, b) in out.iter_mut().zip(bytes) {
                *o |= b;
            }
        }
        true
    }

    /// The scanlines at one bit per pixel: every pixel that is not paper
    /// becomes 1. For frames that use a single ink.
    fn narrowed(&self) -> (Vec<u8>, usize) {
        let width = usize::try_from(self.width).unwrap_or(0);
        let narrow_bytes = width.div_ceil(8);
        let height = usize::try_from(self.height).unwrap_or(0);
        let mut out = vec![0u8; narrow_bytes * height];
        for (row, dest) in self
            .data
            .chunks(self.row_bytes.max(1))
            .zip(out.chunks_mut(narrow_bytes.max(1)))
        {
            for (pair, d) in row.chunks(2).zip(dest.iter_mut()) {
                let high = NARROW[usize::from(pair[0])] << 4;
                let low = pair.get(1).map_or(0, |&b| NARROW[usize::from(b)]);
                *d = high | low;
            }
        }
        (out, narrow_bytes)
    }
}

/// The scanline filter: the encoder picks one per row. Text frames are
/// runs of paper with short bursts of ink; measured on full 1568 px frames,
/// choosing per row gave the smallest files at every zlib level.
const FILTER: png::Filter = png::Filter::Adaptive;

/// zlib level 4. On a full 1568x1568 frame of mixed text the encoder's
/// default (6) took about 20 ms for 74 KB; level 4 about 9 ms for 78 KB
/// (5% larger); level 1 about 4.5 ms for 91 KB. Level 4 keeps a frame well
/// inside the 60 frames/s budget on one core for a few percent of size.
pub(crate) const DEFLATE: png::DeflateCompression = png::DeflateCompression::Level(4);

/// Encodes a drawn canvas as a PNG whose palette holds only the colours
/// used: 1 bit per pixel for two colours, 2 for three.
pub(crate) fn encode_png(canvas: Canvas, used: [bool; 3]) -> Result<Vec<u8>, Error> {
    let (width, height) = (canvas.width, canvas.height);
    let colours = [PAPER, INK, DIM];
    let mut palette = Vec::with_capacity(9);
    for (index, colour) in colours.iter().enumerate() {
        if used[index] {
            palette.extend_from_slice(colour);
        }
    }
    let (depth, scanlines) = if palette.len() <= 6 {
        // Paper and at most one ink: the ink, whichever it is, is index 1.
        (png::BitDepth::One, canvas.narrowed().0)
    } else {
        (png::BitDepth::Two, canvas.data)
    };
    let fail = |detail: String| Error::Png {
        width,
        height,
        detail,
    };
    let mut bytes = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut bytes, width, height);
        encoder.set_color(png::ColorType::Indexed);
        encoder.set_depth(depth);
        encoder.set_palette(palette);
        encoder.set_filter(FILTER);
        encoder.set_deflate_compression(DEFLATE);
        let mut writer = encoder.write_header().map_err(|e| fail(e.to_string()))?;
        writer
            .write_image_data(&scanlines)
            .map_err(|e| fail(e.to_string()))?;
        writer.finish().map_err(|e| fail(e.to_string()))?;
    }
    Ok(bytes)
}
