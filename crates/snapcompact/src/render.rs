//! Laying normalized text out on a grid of cells, cutting it into pages,
//! and drawing each page as an indexed PNG.
//!
//! Text flows cell after cell and wraps at the right edge; a line break is a
//! filled cell ([`crate::NEWLINE`]), never the rest of a row, so no pixel is
//! spent on blank line ends. A frame is as wide as its spec says and exactly
//! as tall as the rows it uses. The palette holds only the colours a frame
//! uses, so black on white is a 1-bit PNG.
//!
//! Output is deterministic: the same page, shape and grid always give the
//! same bytes, which is what lets frames be cached by content hash and
//! re-rendered instead of stored.

use serde::Deserialize;
use serde::Serialize;

use crate::canvas::Canvas;
use crate::canvas::encode_png;
use crate::error::Error;
use crate::fallback;
use crate::font::Face;
use crate::font::Glyph;
use crate::normalize::NEWLINE;
use crate::normalize::UNPRINTABLE;
use crate::shape::Shape;

/// The colour a run is printed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ink {
    /// Black: what people and the model said.
    Normal,
    /// Grey: tool output, so the eye can skip it and the model can tell it
    /// from conversation.
    Dim,
}

/// A stretch of normalized text in one ink.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Run {
    /// The ink.
    pub ink: Ink,
    /// Normalized text (see [`crate::normalize()`]).
    pub text: String,
}

impl Run {
    /// A run in `ink`.
    pub fn new(ink: Ink, text: impl Into<String>) -> Self {
        Run {
            ink,
            text: text.into(),
        }
    }
}

/// Where cells go on a frame of one shape and width.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grid {
    /// The shape.
    pub shape: Shape,
    /// Frame width in pixels.
    pub width: u32,
    /// Cells per row.
    pub cols: u16,
    /// Rows per full frame.
    pub rows: u16,
    /// Extra blank pixel rows under every row of cells (0 by default).
    pub line_spacing: u16,
}

impl Grid {
    /// The grid for `shape` on frames of `width` x at most `max_height`.
    ///
    /// # Errors
    ///
    /// [`Error::FrameTooSmall`] when not even one cell fits.
    pub fn new(
        shape: Shape,
        width: u32,
        max_height: u32,
        line_spacing: u16,
    ) -> Result<Grid, Error> {
        let pitch = u32::from(shape.cell_h) + u32::from(line_spacing);
        let cols = width / u32::from(shape.cell_w.max(1));
        let rows = max_height / pitch.max(1);
        let too_small = || Error::FrameTooSmall {
            shape: shape.name.to_string(),
            width,
            height: max_height,
            cell_w: shape.cell_w,
            cell_h: shape.cell_h,
        };
        // Two columns so that a wide glyph always fits a row.
        if cols < 2 || rows < 1 {
            return Err(too_small());
        }
        Ok(Grid {
            shape,
            width,
            cols: u16::try_from(cols.min(u32::from(u16::MAX))).map_err(|_| too_small())?,
            rows: u16::try_from(rows.min(u32::from(u16::MAX))).map_err(|_| too_small())?,
            line_spacing,
        })
    }

    /// Cells in one full frame.
    pub fn cells_per_frame(&self) -> usize {
        usize::from(self.cols) * usize::from(self.rows)
    }

    /// Pixel height of a frame with `rows` rows.
    pub fn height_for(&self, rows: u16) -> u32 {
        u32::from(rows) * (u32::from(self.shape.cell_h) + u32::from(self.line_spacing))
    }

    /// Pixel height of a full frame.
    pub fn full_height(&self) -> u32 {
        self.height_for(self.rows)
    }
}

/// One frame's worth of text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Page {
    /// The text on the page, in order.
    pub runs: Vec<Run>,
    /// Rows of cells it fills (the last page may be shorter).
    pub rows: u16,
}

impl Page {
    /// Characters on the page.
    pub fn chars(&self) -> usize {
        self.runs.iter().map(|run| run.text.chars().count()).sum()
    }
}

/// How many cells `ch` takes in `face`.
fn cells_of(face: &Face, ch: char) -> u16 {
    if ch == NEWLINE || face.glyph(ch).is_some() {
        1
    } else {
        fallback::cells(ch)
    }
}

/// Walks the cells of `runs` on a grid `cols` wide, calling `visit` with
/// (column, row, char, ink, cells) for each character.
fn walk(runs: &[Run], face: &Face, cols: u16, mut visit: impl FnMut(u16, u32, char, Ink, u16)) {
    let mut col = 0u16;
    let mut row = 0u32;
    for run in runs {
        for ch in run.text.chars() {
            let cells = cells_of(face, ch);
            if col + cells > cols {
                col = 0;
                row += 1;
            }
            visit(col, row, ch, run.ink, cells);
            col += cells;
            if col >= cols {
                col = 0;
                row += 1;
            }
        }
    }
}

/// Cuts `runs` into pages of at most `grid.rows` rows.
pub fn paginate(runs: &[Run], grid: &Grid) -> Result<Vec<Page>, Error> {
    let face = grid.shape.face.face()?;
    let rows_per_page = u32::from(grid.rows);
    let mut pages: Vec<Page> = Vec::new();
    let mut current: Vec<Run> = Vec::new();
    let mut page_index = 0u32;
    let mut last_row = 0u32;
    let mut any = false;
    walk(runs, face, grid.cols, |_, row, ch, ink, _| {
        let index = row / rows_per_page;
        if index != page_index && any {
            pages.push(Page {
                runs: std::mem::take(&mut current),
                rows: u16::try_from(last_row % rows_per_page + 1).unwrap_or(grid.rows),
            });
            page_index = index;
        }
        any = true;
        last_row = row;
        match current.last_mut() {
            Some(run) if run.ink == ink => run.text.push(ch),
            _ => current.push(Run::new(ink, ch.to_string())),
        }
    });
    if any {
        pages.push(Page {
            runs: current,
            rows: u16::try_from(last_row % rows_per_page + 1).unwrap_or(grid.rows),
        });
    }
    Ok(pages)
}

/// Counts the cells `runs` take on `grid` (row ends left blank by a wide
/// glyph included), without building pages: the tests' check of the walk.
#[cfg(test)]
fn cells_needed(runs: &[Run], grid: &Grid) -> Result<usize, Error> {
    let face = grid.shape.face.face()?;
    let mut end = 0usize;
    walk(runs, face, grid.cols, |col, row, _, _, cells| {
        end = usize::try_from(row).unwrap_or(usize::MAX) * usize::from(grid.cols)
            + usize::from(col)
            + usize::from(cells);
    });
    Ok(end)
}

/// A drawn page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// The PNG file.
    pub png: Vec<u8>,
    /// Characters no font had, printed as `?`.
    pub missing: usize,
}

/// Draws `page` on `grid` and encodes it as an indexed PNG.
///
/// Pixels are drawn straight into PNG scanlines at two bits per pixel
/// (0 paper, 1 ink, 2 dim), a glyph row at a time: each row of a glyph is
/// a bit mask, spread to two bits per pixel and ORed into the scanline
/// bytes it covers. When a frame uses only one ink the scanlines are then
/// narrowed to one bit per pixel. No per-pixel work, no per-glyph
/// allocation for the bitmap faces.
///
/// # Errors
///
/// [`Error::Font`] if a bundled face fails to load, [`Error::Png`] if the
/// encoder fails.
pub fn render_page(page: &Page, grid: &Grid) -> Result<Frame, Error> {
    let face = grid.shape.face.face()?;
    let width = grid.width;
    let height = grid.height_for(page.rows.max(1));
    let mut canvas = Canvas::new(width, height);
    let pitch = u32::from(grid.shape.cell_h) + u32::from(grid.line_spacing);
    let top_pad = u32::from(grid.shape.cell_h.saturating_sub(face.height()) / 2);
    let mut missing = 0usize;
    let mut used = [true, false, false];
    walk(&page.runs, face, grid.cols, |col, row, ch, ink, cells| {
        let colour = match ink {
            Ink::Normal => 1u8,
            Ink::Dim => 2u8,
        };
        let cell_x = u32::from(col) * u32::from(grid.shape.cell_w);
        let span_w = u32::from(grid.shape.cell_w) * u32::from(cells);
        let y0 = row * pitch + top_pad;
        if ch == NEWLINE {
            // The newline glyph: a block filling the glyph box, inset by a
            // pixel so it stays apart from its neighbours.
            let glyph_w = u32::from(face.width());
            let x0 = cell_x + (span_w - glyph_w) / 2 + 1;
            let fill = glyph_w.saturating_sub(2);
            let mask = if fill == 0 {
                0
            } else {
                u32::MAX << (32 - fill.min(32))
            };
            for y in y0 + 2..y0 + u32::from(face.height()) - 2 {
                canvas.blit_row(y, x0, mask, colour);
            }
            used[usize::from(colour)] = true;
            return;
        }
        if ch == ' ' {
            return;
        }
        let owned: Option<Glyph>;
        let glyph = match face.glyph(ch) {
            Some(glyph) => glyph,
            None => {
                owned = fallback::glyph(face, ch, cells);
                match owned.as_ref() {
                    Some(glyph) => glyph,
                    None => {
                        missing += 1;
                        match face.glyph(UNPRINTABLE) {
                            Some(glyph) => glyph,
                            None => return,
                        }
                    }
                }
            }
        };
        let x0 = cell_x + span_w.saturating_sub(u32::from(glyph.width)) / 2;
        let mut inked = false;
        for (dy, &bits) in glyph.rows.iter().enumerate() {
            let y = y0 + u32::try_from(dy).unwrap_or(u32::MAX);
            inked |= canvas.blit_row(y, x0, bits, colour);
        }
        if inked {
            used[usize::from(colour)] = true;
        }
    });
    let png = encode_png(canvas, used)?;
    Ok(Frame {
        width,
        height,
        png,
        missing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::canvas::DIM;
    use crate::canvas::INK;
    use crate::canvas::PAPER;
    use crate::shape::Shape;
    use sha2::Digest;

    fn grid(name: &str, width: u32, height: u32) -> Grid {
        Grid::new(Shape::by_name(name).unwrap(), width, height, 0).unwrap()
    }

    fn decode(png_bytes: &[u8]) -> (png::OutputInfo, Vec<u8>, Vec<u8>) {
        let decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
        let mut reader = decoder.read_info().unwrap();
        let palette = reader.info().palette.as_ref().unwrap().to_vec();
        let mut buf = vec![0; reader.output_buffer_size().unwrap()];
        let info = reader.next_frame(&mut buf).unwrap();
        buf.truncate(info.buffer_size());
        (info, buf, palette)
    }

    #[test]
    fn grid_counts_cells_per_frame() {
        let g = grid("11on16-bw", 1568, 752);
        assert_eq!((g.cols, g.rows), (142, 47));
        assert_eq!(g.full_height(), 752);
        assert!(Grid::new(Shape::by_name("8x13-bw").unwrap(), 10, 10, 0).is_err());
    }

    #[test]
    fn text_wraps_and_pages_break_at_the_row_limit() {
        let g = grid("8x13-bw", 80, 26); // 10 columns, 2 rows
        let runs = vec![Run::new(Ink::Normal, "abcdefghijklmnopqrstuvwxyz")];
        let pages = paginate(&runs, &g).unwrap();
        let texts: Vec<(String, u16)> = pages
            .iter()
            .map(|p| (p.runs.iter().map(|r| r.text.as_str()).collect(), p.rows))
            .collect();
        assert_eq!(
            texts,
            vec![
                ("abcdefghijklmnopqrst".to_string(), 2),
                ("uvwxyz".to_string(), 1)
            ]
        );
        assert_eq!(cells_needed(&runs, &g).unwrap(), 26);
    }

    #[test]
    fn a_wide_glyph_never_splits_across_rows() {
        let g = grid("8x13-bw", 24, 130); // 3 columns
        let runs = vec![Run::new(Ink::Normal, "ab東c")];
        // a b | 東 c : the wide glyph moves to the next row, leaving one blank cell.
        assert_eq!(cells_needed(&runs, &g).unwrap(), 6);
    }

    #[test]
    fn pages_keep_ink_runs_apart() {
        let g = grid("8x13-bw", 80, 13);
        let runs = vec![Run::new(Ink::Normal, "abc"), Run::new(Ink::Dim, "def")];
        let pages = paginate(&runs, &g).unwrap();
        assert_eq!(pages.len(), 1);
        assert_eq!(pages[0].runs, runs);
    }

    #[test]
    fn black_and_white_frames_are_one_bit_and_height_hugs_rows() {
        let g = grid("11on16-bw", 1568, 752);
        let page = Page {
            runs: vec![Run::new(Ink::Normal, "hello\nworld")],
            rows: 1,
        };
        let frame = render_page(&page, &g).unwrap();
        assert_eq!((frame.width, frame.height), (1568, 16));
        let (info, _, palette) = decode(&frame.png);
        assert_eq!(info.bit_depth, png::BitDepth::One);
        assert_eq!(info.color_type, png::ColorType::Indexed);
        assert_eq!(palette, [PAPER, INK].concat());
    }

    #[test]
    fn dim_ink_adds_a_third_colour_and_two_bits() {
        let g = grid("8x13-bw", 160, 13);
        let page = Page {
            runs: vec![Run::new(Ink::Normal, "call"), Run::new(Ink::Dim, "result")],
            rows: 1,
        };
        let frame = render_page(&page, &g).unwrap();
        let (info, _, palette) = decode(&frame.png);
        assert_eq!(info.bit_depth, png::BitDepth::Two);
        assert_eq!(palette, [PAPER, INK, DIM].concat());
    }

    #[test]
    fn drawn_pixels_match_the_glyph_bitmap() {
        let g = grid("8x13-bw", 16, 13);
        let page = Page {
            runs: vec![Run::new(Ink::Normal, "0O")],
            rows: 1,
        };
        let frame = render_page(&page, &g).unwrap();
        let (_, buf, _) = decode(&frame.png);
        let face = crate::font::FaceId::Fixed8x13.face().unwrap();
        for (i, ch) in ['0', 'O'].into_iter().enumerate() {
            let glyph = face.glyph(ch).unwrap();
            for y in 0..13u16 {
                for x in 0..8u16 {
                    let px = usize::from(x) + 8 * i;
                    let bit = (buf[usize::from(y) * 2 + px / 8] >> (7 - px % 8)) & 1;
                    assert_eq!(bit == 1, glyph.ink(x, y), "{ch} at {x},{y}");
                }
            }
        }
    }

    #[test]
    fn missing_glyphs_print_as_question_marks_and_are_counted() {
        let g = grid("8x13-bw", 160, 13);
        let page = Page {
            runs: vec![Run::new(Ink::Normal, "a\u{10fffd}b")],
            rows: 1,
        };
        let frame = render_page(&page, &g).unwrap();
        assert_eq!(frame.missing, 1);
        let question = Page {
            runs: vec![Run::new(Ink::Normal, "a?b")],
            rows: 1,
        };
        assert_eq!(render_page(&question, &g).unwrap().png, frame.png);
    }

    /// Code with CJK in both inks on a 1568 px grid, paginated.
    fn mixed_pages() -> (Grid, Vec<Page>) {
        let g = grid("11on16-bw", 1568, 752);
        let text = "fn main() {\nprintln!(\"0O 1lI\");\n} 東京 ".repeat(40);
        let runs = [
            Run::new(Ink::Normal, text.clone()),
            Run::new(Ink::Dim, text),
        ];
        let pages = paginate(&runs, &g).unwrap();
        (g, pages)
    }

    #[test]
    fn rendering_is_deterministic() {
        let (g, pages) = mixed_pages();
        let first = render_page(&pages[0], &g).unwrap();
        let second = render_page(&pages[0], &g).unwrap();
        assert_eq!(first, second);
        let digest = format!("{:x}", sha2::Sha256::digest(&first.png));
        insta::assert_snapshot!(digest);
    }

    /// The SHA-256 of this page's PNG as drawn before the encoder moved
    /// from the png crate's default (zlib level 6) to [`crate::canvas::DEFLATE`].
    const BEFORE_LEVEL_4: &str = "081d5ea3b6ccfba57ed1a723650192615d6cf7e5f5ef9970c2fa5d523c88282d";

    #[test]
    fn the_faster_encoder_changes_bytes_but_not_pixels() {
        let (g, pages) = mixed_pages();
        let frame = render_page(&pages[0], &g).unwrap();
        let (info, scanlines, palette) = decode(&frame.png);
        // The decoded pixels, encoded again as the old code did, give the
        // old code's file byte for byte: both files hold the same pixels.
        let mut again = Vec::new();
        {
            let mut encoder = png::Encoder::new(&mut again, info.width, info.height);
            encoder.set_color(png::ColorType::Indexed);
            encoder.set_depth(info.bit_depth);
            encoder.set_palette(palette);
            encoder.set_compression(png::Compression::Balanced);
            let mut writer = encoder.write_header().unwrap();
            writer.write_image_data(&scanlines).unwrap();
            writer.finish().unwrap();
        }
        assert_eq!(
            format!("{:x}", sha2::Sha256::digest(&again)),
            BEFORE_LEVEL_4
        );
        assert_ne!(again, frame.png, "level 4 writes other bytes");
    }
}
