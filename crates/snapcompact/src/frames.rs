//! One-call rendering, for `abridge render` and for looking at frames:
//! text or messages in, PNG frames out, no archive planning.

use std::borrow::Borrow;

use abridge_llm::Message;

use crate::error::Error;
use crate::normalize::normalize;
use crate::render::Frame;
use crate::render::Grid;
use crate::render::Ink;
use crate::render::Run;
use crate::render::paginate;
use crate::render::render_page;
use crate::serialize::SerializeConfig;
use crate::serialize::serialize;
use crate::shape::FrameSpec;

/// Draws ink runs (already normalized) onto as many frames as they need.
///
/// # Errors
///
/// [`Error::FrameTooSmall`] for a spec that holds no cell; font and PNG
/// errors from rendering.
pub fn render_runs(runs: &[Run], spec: &FrameSpec, line_spacing: u16) -> Result<Vec<Frame>, Error> {
    render_runs_within(runs, spec, line_spacing, usize::MAX)
}

/// As [`render_runs`], refusing with [`Error::TooManyFrames`] when the
/// runs need more than `max_frames` frames. The pages are laid out first
/// (cheap) and counted before any is drawn, so a huge input costs no
/// drawing and leaves nothing half done.
///
/// # Errors
///
/// [`Error::TooManyFrames`]; otherwise as [`render_runs`].
pub fn render_runs_within(
    runs: &[Run],
    spec: &FrameSpec,
    line_spacing: u16,
    max_frames: usize,
) -> Result<Vec<Frame>, Error> {
    let grid = Grid::new(spec.shape, spec.width, spec.max_height, line_spacing)?;
    let pages = paginate(runs, &grid)?;
    if pages.len() > max_frames {
        return Err(Error::TooManyFrames {
            frames: pages.len(),
            limit: max_frames,
        });
    }
    pages.iter().map(|page| render_page(page, &grid)).collect()
}

/// Normalizes `text` and draws it in black ink.
///
/// # Errors
///
/// As [`render_runs`].
pub fn render_text(text: &str, spec: &FrameSpec) -> Result<Vec<Frame>, Error> {
    render_runs(&[Run::new(Ink::Normal, normalize(text))], spec, 0)
}

/// Serializes `messages` (scopes, nested results in grey, caps) and draws
/// them: what an archive's middle looks like, without edges or budget.
///
/// # Errors
///
/// As [`render_runs`].
pub fn render_messages<M: Borrow<Message>>(
    messages: &[M],
    spec: &FrameSpec,
    config: &SerializeConfig,
) -> Result<Vec<Frame>, Error> {
    render_runs(&serialize(messages, config), spec, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_becomes_as_many_frames_as_it_needs() {
        let spec = FrameSpec::for_model("claude-sonnet-4-5").with_size(1568, 160);
        let frames = render_text(&"word ".repeat(2000), &spec).unwrap();
        // 142 x 10 cells per frame, 10,000 characters (the last space is trimmed).
        assert_eq!(frames.len(), 9999usize.div_ceil(1420));
        assert!(frames.iter().all(|f| f.width == 1568 && f.height <= 160));
        assert!(frames.iter().all(|f| f.png.starts_with(b"\x89PNG")));
    }

    #[test]
    fn more_frames_than_allowed_is_refused_before_drawing() {
        let spec = FrameSpec::for_model("claude-sonnet-4-5").with_size(1568, 160);
        let runs = [Run::new(Ink::Normal, normalize(&"word ".repeat(2000)))];
        assert_eq!(
            render_runs_within(&runs, &spec, 0, 3),
            Err(Error::TooManyFrames {
                frames: 9999usize.div_ceil(1420),
                limit: 3
            })
        );
        assert_eq!(render_runs_within(&runs, &spec, 0, 8).unwrap().len(), 8);
    }

    #[test]
    fn messages_render_with_their_scopes() {
        let spec = FrameSpec::for_model("gpt-5");
        let frames =
            render_messages(&[Message::user("hi")], &spec, &SerializeConfig::default()).unwrap();
        assert_eq!(frames.len(), 1);
        assert_eq!((frames[0].width, frames[0].height), (2048, 22));
    }
}
