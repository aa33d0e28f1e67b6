//! BDF pixel fonts: a small parser of our own, the faces we ship, and the
//! `0` patch.
//!
//! Frames are read by a model (or OCR) at the exact pixel size they were
//! drawn at, so the glyphs are bitmaps rather than outlines: a bitmap glyph
//! has no anti-aliasing to blur and stays 1-bit, which keeps PNGs small.
//! The X.org misc-fixed faces draw `0` and `O` almost alike; identifiers are
//! full of both, so every face gets a dot inside its `0` when it is loaded.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Deserialize;
use serde::Serialize;

use crate::error::Error;

/// One glyph as rows of pixels, left-aligned in a `u32` (bit 31 is the
/// leftmost pixel), exactly one cell tall and `width` pixels wide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glyph {
    /// Width in pixels (the face's cell width, or twice it for wide glyphs).
    pub width: u16,
    /// One entry per pixel row, top first.
    pub rows: Box<[u32]>,
}

impl Glyph {
    /// A glyph with no ink.
    pub fn blank(width: u16, height: u16) -> Self {
        Glyph {
            width,
            rows: vec![0; usize::from(height)].into_boxed_slice(),
        }
    }

    /// True when the pixel at column `x`, row `y` is ink.
    pub fn ink(&self, x: u16, y: u16) -> bool {
        let Some(row) = self.rows.get(usize::from(y)) else {
            return false;
        };
        x < 32 && row & (1 << (31 - u32::from(x))) != 0
    }

    pub(crate) fn set(&mut self, x: u16, y: u16) {
        if let Some(row) = self.rows.get_mut(usize::from(y))
            && x < 32
        {
            *row |= 1 << (31 - u32::from(x));
        }
    }

    /// Inked pixels, for tests and checks.
    pub fn ink_count(&self) -> u32 {
        self.rows.iter().map(|row| row.count_ones()).sum()
    }
}

/// A fixed-width bitmap face: every glyph fills one cell.
#[derive(Debug)]
pub struct Face {
    name: &'static str,
    width: u16,
    height: u16,
    ascent: i32,
    glyphs: HashMap<char, Glyph>,
}

impl Face {
    /// Parses a BDF file whose glyphs all fit one character cell of the
    /// font's bounding box (the misc-fixed "C" spacing), then patches `0`.
    ///
    /// # Errors
    ///
    /// [`Error::Font`] naming the face and line when the header lacks a
    /// bounding box, the cell is wider than 16 pixels, or a bitmap row is
    /// not hexadecimal.
    pub fn parse_bdf(name: &'static str, text: &str) -> Result<Face, Error> {
        let bad = |line: usize, what: &str| Error::Font {
            face: name.to_string(),
            detail: format!("line {line}: {what}"),
        };
        let mut width = 0u16;
        let mut height = 0u16;
        let mut ascent: Option<i32> = None;
        let mut box_y = 0i32;
        let mut glyphs = HashMap::new();

        let mut encoding: Option<i64> = None;
        let mut bbx = (0i32, 0i32, 0i32, 0i32);
        let mut bitmap: Option<Vec<u32>> = None;
        for (index, raw) in text.lines().enumerate() {
            let line_no = index + 1;
            let line = raw.trim();
            let mut words = line.split_ascii_whitespace();
            let Some(keyword) = words.next() else {
                continue;
            };
            if let Some(rows) = bitmap.as_mut() {
                if keyword == "ENDCHAR" {
                    let rows = std::mem::take(rows);
                    bitmap = None;
                    if let Some(code) = encoding.take()
                        && let Some(ch) = u32::try_from(code).ok().and_then(char::from_u32)
                    {
                        let top = ascent.unwrap_or(i32::from(height) + box_y);
                        if let Some(glyph) = place(&rows, bbx, width, height, top) {
                            glyphs.insert(ch, glyph);
                        }
                    }
                    continue;
                }
                let value = u32::from_str_radix(keyword, 16)
                    .map_err(|_| bad(line_no, &format!("bitmap row {keyword:?} is not hex")))?;
                // Rows are padded to whole bytes; align the first pixel to bit 31.
                let bits = u32::try_from(keyword.len() * 4).unwrap_or(32).min(32);
                rows.push(if bits == 0 { 0 } else { value << (32 - bits) });
                continue;
            }
            let numbers: Vec<i64> = words.filter_map(|w| w.parse().ok()).collect();
            match keyword {
                "FONTBOUNDINGBOX" if numbers.len() == 4 => {
                    width = u16::try_from(numbers[0]).map_err(|_| bad(line_no, "bad width"))?;
                    height = u16::try_from(numbers[1]).map_err(|_| bad(line_no, "bad height"))?;
                    box_y = i32::try_from(numbers[3]).map_err(|_| bad(line_no, "bad offset"))?;
                    if width == 0 || width > 16 || height == 0 || height > 64 {
                        return Err(bad(line_no, &format!("cell {width}x{height} unsupported")));
                    }
                }
                "FONT_ASCENT" if numbers.len() == 1 => {
                    ascent = i32::try_from(numbers[0]).ok();
                }
                "ENCODING" => encoding = numbers.first().copied(),
                "BBX" if numbers.len() == 4 => {
                    let n = |i: usize| i32::try_from(numbers[i]).unwrap_or(0);
                    bbx = (n(0), n(1), n(2), n(3));
                }
                "BITMAP" => bitmap = Some(Vec::new()),
                _ => {}
            }
        }
        if width == 0 {
            return Err(bad(0, "no FONTBOUNDINGBOX"));
        }
        let ascent = ascent.unwrap_or(i32::from(height) + box_y);
        let mut face = Face {
            name,
            width,
            height,
            ascent,
            glyphs,
        };
        face.patch_zero();
        Ok(face)
    }

    /// The face's name, for example `8x13`.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Cell width in pixels.
    pub fn width(&self) -> u16 {
        self.width
    }

    /// Cell height in pixels.
    pub fn height(&self) -> u16 {
        self.height
    }

    /// Pixels from the top of the cell to the baseline.
    pub fn ascent(&self) -> i32 {
        self.ascent
    }

    /// The glyph for `ch`, if the face has one.
    pub fn glyph(&self, ch: char) -> Option<&Glyph> {
        self.glyphs.get(&ch)
    }

    /// How many glyphs the face holds.
    pub fn len(&self) -> usize {
        self.glyphs.len()
    }

    /// True when the face holds no glyph (never for a shipped face).
    pub fn is_empty(&self) -> bool {
        self.glyphs.is_empty()
    }

    /// Puts a dot in the middle of `0`, inside its outline, so that `0` and
    /// `O` differ in every face even when the glyphs are read at a glance.
    fn patch_zero(&mut self) {
        let Some(zero) = self.glyphs.get_mut(&'0') else {
            return;
        };
        let (mut left, mut right, mut top, mut bottom) = (u16::MAX, 0u16, u16::MAX, 0u16);
        for y in 0..u16::try_from(zero.rows.len()).unwrap_or(0) {
            for x in 0..zero.width {
                if zero.ink(x, y) {
                    left = left.min(x);
                    right = right.max(x);
                    top = top.min(y);
                    bottom = bottom.max(y);
                }
            }
        }
        if left > right || bottom < top + 4 || right < left + 2 {
            return;
        }
        // The dot fills the middle of the counter: one column when the
        // inside is an odd number of pixels wide, two when even; three rows
        // tall around the vertical middle.
        let inner_w = right - left - 1;
        let first_x = left + 1 + (inner_w - 1) / 2;
        let columns = if inner_w % 2 == 0 { 2 } else { 1 };
        let middle_y = (top + bottom) / 2;
        for y in middle_y - 1..=middle_y + 1 {
            for x in first_x..first_x + columns {
                zero.set(x, y);
            }
        }
    }
}

/// Places a glyph's BBX bitmap into a full cell.
fn place(
    rows: &[u32],
    (w, h, x_off, y_off): (i32, i32, i32, i32),
    cell_w: u16,
    cell_h: u16,
    ascent: i32,
) -> Option<Glyph> {
    if w <= 0 || x_off < 0 || x_off + w > i32::from(cell_w) {
        // Blank or wider than the cell (not expected in "C" spaced faces).
        return (w == 0).then(|| Glyph::blank(cell_w, cell_h));
    }
    let mut glyph = Glyph::blank(cell_w, cell_h);
    // The bitmap's top row sits `ascent - (y_off + h)` rows below the cell top.
    let top = ascent - (y_off + h);
    for (i, row) in rows.iter().enumerate().take(usize::try_from(h).ok()?) {
        let y = top + i32::try_from(i).ok()?;
        if y < 0 || y >= i32::from(cell_h) {
            continue;
        }
        let shifted = row >> x_off;
        glyph.rows[usize::try_from(y).ok()?] = shifted;
    }
    Some(glyph)
}

/// The bitmap faces compiled into the crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FaceId {
    /// misc-fixed 8x13: the face of every shipped shape.
    #[serde(rename = "8x13")]
    Fixed8x13,
    /// misc-fixed 6x13: narrower glyphs for the densest shape.
    #[serde(rename = "6x13")]
    Fixed6x13,
}

impl FaceId {
    /// Every shipped face, for tests and the eval.
    pub const ALL: [FaceId; 2] = [FaceId::Fixed8x13, FaceId::Fixed6x13];

    /// The face, parsed on first use and kept for the life of the process.
    ///
    /// # Errors
    ///
    /// [`Error::Font`] if the bundled file does not parse (a build defect;
    /// the tests load every face).
    pub fn face(self) -> Result<&'static Face, Error> {
        static FIXED_8X13: OnceLock<Result<Face, Error>> = OnceLock::new();
        static FIXED_6X13: OnceLock<Result<Face, Error>> = OnceLock::new();
        let (cell, name, bytes): (_, _, &'static [u8]) = match self {
            FaceId::Fixed8x13 => (&FIXED_8X13, "8x13", include_bytes!("../fonts/8x13.bdf")),
            FaceId::Fixed6x13 => (&FIXED_6X13, "6x13", include_bytes!("../fonts/6x13.bdf")),
        };
        cell.get_or_init(|| {
            let text = std::str::from_utf8(bytes).map_err(|_| Error::Font {
                face: name.to_string(),
                detail: "file is not utf-8".to_string(),
            })?;
            Face::parse_bdf(name, text)
        })
        .as_ref()
        .map_err(Clone::clone)
    }

    /// The face's name, for example `8x13`.
    pub fn name(self) -> &'static str {
        match self {
            FaceId::Fixed8x13 => "8x13",
            FaceId::Fixed6x13 => "6x13",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picture(glyph: &Glyph) -> String {
        let mut out = String::new();
        for y in 0..u16::try_from(glyph.rows.len()).unwrap() {
            for x in 0..glyph.width {
                out.push(if glyph.ink(x, y) { '#' } else { '.' });
            }
            out.push('\n');
        }
        out
    }

    #[test]
    fn every_shipped_face_loads_with_ascii_coverage() {
        for id in FaceId::ALL {
            let face = id.face().unwrap();
            assert!(
                face.len() > 3000,
                "{} has {} glyphs",
                face.name(),
                face.len()
            );
            for ch in ' '..='~' {
                assert!(face.glyph(ch).is_some(), "{} lacks {ch:?}", face.name());
            }
        }
    }

    #[test]
    fn zero_and_capital_o_differ_in_every_shipped_face() {
        for id in FaceId::ALL {
            let face = id.face().unwrap();
            let zero = face.glyph('0').unwrap();
            let o = face.glyph('O').unwrap();
            assert_ne!(zero, o, "{}", face.name());
            // The patch put ink strictly inside the outline: the middle row
            // of `0` has more ink than the same row of `O`.
            let middle = zero.rows.len() / 2;
            assert!(
                zero.rows[middle].count_ones() > o.rows[middle].count_ones()
                    || zero.rows[middle - 1].count_ones() > o.rows[middle - 1].count_ones(),
                "{}:\n{}",
                face.name(),
                picture(zero)
            );
        }
    }

    #[test]
    fn patched_zero_8x13_has_a_centred_dot() {
        let face = FaceId::Fixed8x13.face().unwrap();
        insta::assert_snapshot!(picture(face.glyph('0').unwrap()));
    }

    #[test]
    fn patched_zero_6x13_has_a_centred_dot() {
        let face = FaceId::Fixed6x13.face().unwrap();
        insta::assert_snapshot!(picture(face.glyph('0').unwrap()));
    }

    #[test]
    fn glyph_sits_on_the_baseline() {
        let face = FaceId::Fixed8x13.face().unwrap();
        insta::assert_snapshot!(picture(face.glyph('g').unwrap()));
    }

    #[test]
    fn parse_rejects_non_hex_rows_naming_the_line() {
        let text = "FONTBOUNDINGBOX 4 4 0 0\nFONT_ASCENT 4\nSTARTCHAR a\nENCODING 97\nBBX 4 4 0 0\nBITMAP\nZZ\nENDCHAR\n";
        let err = Face::parse_bdf("tiny", text).unwrap_err();
        assert_eq!(
            err.to_string(),
            "font tiny: line 7: bitmap row \"ZZ\" is not hex"
        );
    }

    #[test]
    fn parse_places_a_small_bbx_inside_the_cell() {
        let text = "FONTBOUNDINGBOX 4 4 0 -1\nFONT_ASCENT 3\nSTARTCHAR dot\nENCODING 46\nBBX 1 1 1 0\nBITMAP\n80\nENDCHAR\n";
        let face = Face::parse_bdf("tiny", text).unwrap();
        assert_eq!(
            picture(face.glyph('.').unwrap()),
            "....\n....\n.#..\n....\n"
        );
    }
}
