//! Glyphs the bitmap faces lack (CJK, Hangul, and other scripts), drawn from
//! a TrueType font and thresholded to one bit.
//!
//! The misc-fixed faces cover Latin, Greek, Cyrillic and symbols, but not
//! CJK. A session in Chinese or Japanese would otherwise print as rows of
//! `?`. Droid Sans Fallback (Apache-2.0) covers those scripts; its glyphs are
//! rasterized at the cell height, inked where coverage passes one half, and
//! cached. East Asian wide characters take two cells, as in a terminal.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::OnceLock;

use ab_glyph::Font;
use ab_glyph::FontRef;
use ab_glyph::PxScale;
use ab_glyph::ScaleFont;

use crate::font::Face;
use crate::font::Glyph;

static TTF: &[u8] = include_bytes!("../fonts/DroidSansFallbackFull.ttf");

/// Coverage above which a pixel is ink.
const INK_THRESHOLD: f32 = 0.5;

fn font() -> Option<&'static FontRef<'static>> {
    static FONT: OnceLock<Option<FontRef<'static>>> = OnceLock::new();
    FONT.get_or_init(|| FontRef::try_from_slice(TTF).ok())
        .as_ref()
}

/// True for characters a terminal draws two cells wide (East Asian Wide and
/// Fullwidth ranges).
pub(crate) fn is_wide(ch: char) -> bool {
    matches!(u32::from(ch),
        0x1100..=0x115f | 0x2e80..=0x303e | 0x3041..=0x33ff | 0x3400..=0x4dbf
        | 0x4e00..=0x9fff | 0xa000..=0xa4cf | 0xa960..=0xa97f | 0xac00..=0xd7a3
        | 0xf900..=0xfaff | 0xfe30..=0xfe4f | 0xff00..=0xff60 | 0xffe0..=0xffe6
        | 0x20000..=0x2fffd | 0x30000..=0x3fffd)
}

/// True when the fallback font can draw `ch`.
pub(crate) fn covers(ch: char) -> bool {
    font().is_some_and(|f| f.glyph_id(ch).0 != 0)
}

/// Cells `ch` takes when the bitmap face lacks it: 2 for wide characters
/// the fallback font covers, else 1 (drawn narrow, or as `?`).
pub(crate) fn cells(ch: char) -> u16 {
    if is_wide(ch) && covers(ch) { 2 } else { 1 }
}

/// The glyph for `ch` drawn to fit `face`'s cell (`cells` cells wide), or
/// `None` when the fallback font lacks it.
pub(crate) fn glyph(face: &Face, ch: char, cells: u16) -> Option<Glyph> {
    type Key = (&'static str, char, u16);
    static CACHE: OnceLock<Mutex<HashMap<Key, Option<Glyph>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let key = (face.name(), ch, cells);
    if let Ok(map) = cache.lock()
        && let Some(found) = map.get(&key)
    {
        return found.clone();
    }
    let drawn = draw(face, ch, cells);
    if let Ok(mut map) = cache.lock() {
        map.insert(key, drawn.clone());
    }
    drawn
}

fn draw(face: &Face, ch: char, cells: u16) -> Option<Glyph> {
    let font = font()?;
    let id = font.glyph_id(ch);
    if id.0 == 0 {
        return None;
    }
    let width = face.width() * cells;
    let height = face.height();
    // Make the em square as tall as the cell (ab_glyph's scale is the
    // ascent-to-descent height, which for this font exceeds the em), and
    // put the baseline where the bitmap face has it.
    let upem = font.units_per_em().unwrap_or(1000.0);
    let px = f32::from(height) * font.height_unscaled() / upem;
    let scaled = font.as_scaled(PxScale::from(px));
    let advance = scaled.h_advance(id);
    let left = ((f32::from(width) - advance) / 2.0).max(0.0);
    let baseline = face.ascent() as f32;
    let glyph = id.with_scale_and_position(px, ab_glyph::point(left, baseline));
    let mut out = Glyph::blank(width, height);
    if let Some(outline) = font.outline_glyph(glyph) {
        let bounds = outline.px_bounds();
        outline.draw(|x, y, coverage| {
            if coverage < INK_THRESHOLD {
                return;
            }
            let px_x = bounds.min.x as i32 + x as i32;
            let px_y = bounds.min.y as i32 + y as i32;
            if let (Ok(px_x), Ok(px_y)) = (u16::try_from(px_x), u16::try_from(px_y))
                && px_x < width
                && px_y < height
            {
                out.set(px_x, px_y);
            }
        });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::font::FaceId;

    #[test]
    fn cjk_is_wide_and_covered() {
        assert!(is_wide('東'));
        assert!(covers('東'));
        assert_eq!(cells('東'), 2);
        assert_eq!(cells('é'), 1);
    }

    #[test]
    fn a_cjk_glyph_has_ink_within_two_cells() {
        let face = FaceId::Fixed8x13.face().unwrap();
        let glyph = glyph(face, '東', 2).unwrap();
        assert_eq!(glyph.width, 16);
        assert_eq!(glyph.rows.len(), 13);
        assert!(glyph.ink_count() > 20, "{}", glyph.ink_count());
        // Nothing outside the two cells.
        assert!(glyph.rows.iter().all(|row| row & 0xffff == 0));
    }

    #[test]
    fn a_character_no_font_has_gives_none() {
        let face = FaceId::Fixed8x13.face().unwrap();
        assert!(glyph(face, '\u{10fffd}', 1).is_none());
    }
}
