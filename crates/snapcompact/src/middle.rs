//! The imaged middle of an archive, planned to fit a frame budget: the
//! ink of serialized text, and foveation (sharp ends around a denser
//! centre, or the oldest part dropped when even dense frames cannot hold
//! it). The archive stores the resulting segments; this module decides
//! them.

use serde::Deserialize;
use serde::Serialize;

use crate::error::Error;
use crate::normalize::NEWLINE;
use crate::render::Grid;
use crate::render::Ink;
use crate::render::Page;
use crate::render::Run;
use crate::render::paginate;
use crate::shape::FrameSpec;

/// Tags that open a scope printed in dim ink.
const DIM_TAGS: [&str; 2] = ["[result] ", "[error] "];
/// Tags that open a scope printed in normal ink.
const NORMAL_TAGS: [&str; 6] = [
    "[user] ",
    "[assistant] ",
    "[thinking] ",
    "[call] ",
    "[system] ",
    "[developer] ",
];

/// Rebuilds ink runs from serialized text: a scope tagged `[result]` or
/// `[error]` is dim, every other scope normal. The inverse of
/// [`plain_text`](crate::plain_text) on the serializer's output, so the archive can store text
/// alone.
pub(crate) fn reink(text: &str) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    let mut ink = Ink::Normal;
    let push = |runs: &mut Vec<Run>, ink: Ink, piece: &str| {
        if piece.is_empty() {
            return;
        }
        match runs.last_mut() {
            Some(run) if run.ink == ink => run.text.push_str(piece),
            _ => runs.push(Run::new(ink, piece)),
        }
    };
    let scope_ink = |line: &str| -> Option<Ink> {
        if DIM_TAGS.iter().any(|tag| line.starts_with(tag)) {
            Some(Ink::Dim)
        } else if NORMAL_TAGS.iter().any(|tag| line.starts_with(tag)) {
            Some(Ink::Normal)
        } else {
            None
        }
    };
    for (index, line) in text.split(NEWLINE).enumerate() {
        if let Some(next) = scope_ink(line) {
            ink = next;
        }
        if index > 0 {
            push(&mut runs, ink, "\n");
        }
        push(&mut runs, ink, line);
    }
    runs
}

/// A stretch of the imaged middle printed in one shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Segment {
    /// Shape name.
    pub shape: String,
    /// First character (in `char`s) of the middle it covers.
    pub start: usize,
    /// One past its last character.
    pub end: usize,
}

/// Runs covering characters `start..end` of the text `runs` hold.
pub(crate) fn slice_runs(runs: &[Run], start: usize, end: usize) -> Vec<Run> {
    let mut out = Vec::new();
    let mut offset = 0usize;
    for run in runs {
        let len = run.text.chars().count();
        let (from, to) = (start.max(offset), end.min(offset + len));
        if from < to {
            let text: String = run
                .text
                .chars()
                .skip(from - offset)
                .take(to - from)
                .collect();
            out.push(Run::new(run.ink, text));
        }
        offset += len;
        if offset >= end {
            break;
        }
    }
    out
}

fn page_chars(pages: &[Page]) -> usize {
    pages.iter().map(Page::chars).sum()
}

/// Plans the middle's segments for at most `frames` frames: all sharp if
/// it fits; else sharp ends around a dense centre; else dense with the
/// oldest part dropped. Returns (segments, dropped chars, dropped frames).
pub(crate) fn foveate(
    middle: &str,
    spec: &FrameSpec,
    line_spacing: u16,
    frames: usize,
) -> Result<(Vec<Segment>, usize, usize), Error> {
    let runs = reink(middle);
    let total = middle.chars().count();
    if total == 0 {
        return Ok((Vec::new(), 0, 0));
    }
    let sharp = Grid::new(spec.shape, spec.width, spec.max_height, line_spacing)?;
    let sharp_pages = paginate(&runs, &sharp)?;
    let segment = |shape: &str, start: usize, end: usize| Segment {
        shape: shape.to_string(),
        start,
        end,
    };
    if sharp_pages.len() <= frames {
        return Ok((vec![segment(spec.shape.name, 0, total)], 0, 0));
    }
    let dense_shape = spec.shape.denser_shape().unwrap_or(spec.shape);
    let dense = Grid::new(dense_shape, spec.width, spec.max_height, line_spacing)?;
    let dense_pages = paginate(&runs, &dense)?;
    if dense_shape != spec.shape && dense_pages.len() <= frames {
        // Fewest dense frames that make it fit: estimate, then step.
        let (cs, cd) = (sharp.cells_per_frame(), dense.cells_per_frame());
        let need = total.saturating_sub(frames * cs);
        let mut d = if cd > cs {
            need.div_ceil(cd - cs)
        } else {
            frames
        };
        d = d.clamp(1, frames);
        while d <= frames {
            let s = frames - d;
            let s_head = s / 2;
            let s_tail = s - s_head;
            let head_end = page_chars(&sharp_pages[..s_head.min(sharp_pages.len())]);
            let tail_start = suffix_start(&runs, total, head_end, &sharp, s_tail)?;
            let centre = slice_runs(&runs, head_end, tail_start);
            if paginate(&centre, &dense)?.len() <= d {
                let mut segments = Vec::new();
                if head_end > 0 {
                    segments.push(segment(spec.shape.name, 0, head_end));
                }
                if tail_start > head_end {
                    segments.push(segment(dense_shape.name, head_end, tail_start));
                }
                if total > tail_start {
                    segments.push(segment(spec.shape.name, tail_start, total));
                }
                return Ok((segments, 0, 0));
            }
            d += 1;
        }
    }
    // Even dense frames cannot hold it: keep the newest part, starting at
    // a scope (a tag after a line break) so the first frame reads cleanly.
    let start = suffix_start(&runs, total, 0, &dense, frames)?;
    let start = scope_start_at_or_after(middle, start, dense.cells_per_frame()).unwrap_or(start);
    let dropped_frames = paginate(&slice_runs(&runs, 0, start), &dense)?.len();
    Ok((
        vec![segment(dense_shape.name, start, total)],
        start,
        dropped_frames,
    ))
}

/// The first char index at or after `from` (and within `within` chars)
/// where a scope begins: a `[` right after a line break.
fn scope_start_at_or_after(middle: &str, from: usize, within: usize) -> Option<usize> {
    let mut previous = None;
    for (index, ch) in middle.chars().enumerate().skip(from.saturating_sub(1)) {
        if index > from + within {
            return None;
        }
        if index >= from && ch == '[' && previous == Some(NEWLINE) {
            return Some(index);
        }
        previous = Some(ch);
    }
    None
}

/// The smallest char index `k >= floor` such that `runs[k..]` fits in
/// `pages` pages of `grid`.
fn suffix_start(
    runs: &[Run],
    total: usize,
    floor: usize,
    grid: &Grid,
    pages: usize,
) -> Result<usize, Error> {
    if pages == 0 {
        return Ok(total);
    }
    // Start from the character estimate, then walk a row at a time.
    let cols = usize::from(grid.cols);
    let mut k = total
        .saturating_sub(pages * grid.cells_per_frame())
        .max(floor);
    loop {
        let fits = paginate(&slice_runs(runs, k, total), grid)?.len() <= pages;
        if fits {
            // Try to move earlier by whole rows while it still fits.
            let mut best = k;
            while best > floor {
                let candidate = best.saturating_sub(cols).max(floor);
                if paginate(&slice_runs(runs, candidate, total), grid)?.len() <= pages {
                    best = candidate;
                } else {
                    break;
                }
            }
            return Ok(best);
        }
        k = (k + cols).min(total);
        if k == total {
            return Ok(total);
        }
    }
}
