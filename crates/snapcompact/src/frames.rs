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
    let grid = Grid::new(spec.shape, spec.width, spec.max_height, line_spacing)?;
    paginate(runs, &grid)?
        .iter()
        .map(|page| render_page(page, &grid))
        .collect()
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
    fn messages_render_with_their_scopes() {
        let spec = FrameSpec::for_model("gpt-5");
        let frames =
            render_messages(&[Message::user("hi")], &spec, &SerializeConfig::default()).unwrap();
        assert_eq!(frames.len(), 1);
        assert_eq!((frames[0].width, frames[0].height), (2048, 22));
    }
}
