//! Frame shapes as data: which face, on which cell, at which frame size,
//! for which model line, and where each figure came from.
//!
//! A shape trades density for legibility. The glyph is always a bitmap
//! face; the cell around it adds blank pixels between columns and rows, which
//! a model's vision encoder needs more or less of depending on how it cuts
//! the image into patches. The tables below are the defaults; callers pass
//! their own [`Shape`] or [`FrameSpec`] to override them.

use crate::error::Error;
use crate::font::FaceId;

/// How text is printed: a face on a cell, and the ink colours.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    /// Stable name, for example `11on16-bw` (glyph width "on" cell
    /// height, `bw` for black ink on white).
    pub name: &'static str,
    /// The bitmap face.
    pub face: FaceId,
    /// Cell width in pixels (at least the face's width).
    pub cell_w: u16,
    /// Cell height in pixels (at least the face's height).
    pub cell_h: u16,
    /// The shape used for the centre of a long archive: more cells per
    /// frame, a little harder to read. `None` for the densest.
    pub denser: Option<&'static str>,
    /// Where the shape comes from and what it is for.
    pub provenance: &'static str,
}

/// Every shape the crate knows, sharpest first.
pub const SHAPES: &[Shape] = &[
    Shape {
        name: "11on16-bw",
        face: FaceId::Fixed8x13,
        cell_w: 11,
        cell_h: 16,
        denser: Some("8on16-bw"),
        provenance: "issue 7: 8x13 glyphs with 3 px between columns and rows; the Claude default, whose encoder reads loosely spaced glyphs best",
    },
    Shape {
        name: "8on22-bw",
        face: FaceId::Fixed8x13,
        cell_w: 8,
        cell_h: 22,
        denser: Some("8on16-bw"),
        provenance: "issue 7: 8x13 glyphs on tall rows for GPT and Gemini at 2048 px, whose encoders read dense rows but need clear line gaps",
    },
    Shape {
        name: "8on16-bw",
        face: FaceId::Fixed8x13,
        cell_w: 8,
        cell_h: 16,
        denser: Some("8x13-bw"),
        provenance: "issue 7: the denser companion used in the centre of a foveated archive",
    },
    Shape {
        name: "8x13-bw",
        face: FaceId::Fixed8x13,
        cell_w: 8,
        cell_h: 13,
        denser: None,
        provenance: "issue 7: the bare 8x13 face with no spacing; densest 8x13 shape",
    },
    Shape {
        name: "6x13-bw",
        face: FaceId::Fixed6x13,
        cell_w: 6,
        cell_h: 13,
        denser: None,
        provenance: "ours: the 6x13 face with no spacing, for the legibility eval's floor; not chosen by default",
    },
];

impl Shape {
    /// The shape called `name`.
    ///
    /// # Errors
    ///
    /// [`Error::UnknownShape`] listing the known names.
    pub fn by_name(name: &str) -> Result<Shape, Error> {
        SHAPES
            .iter()
            .find(|shape| shape.name == name)
            .copied()
            .ok_or_else(|| Error::UnknownShape {
                name: name.to_string(),
                known: SHAPES.iter().map(|s| s.name).collect::<Vec<_>>().join(", "),
            })
    }

    /// The denser companion, if any.
    pub fn denser_shape(&self) -> Option<Shape> {
        self.denser.and_then(|name| Shape::by_name(name).ok())
    }
}

/// Everything the archive needs to know to print for one model: the shape
/// and the frame's size. Billing comes from the model catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameSpec {
    /// The sharp shape; its [`Shape::denser`] is used for foveation.
    pub shape: Shape,
    /// Frame width in pixels.
    pub width: u32,
    /// Tallest frame in pixels; a frame's height hugs the rows it uses.
    pub max_height: u32,
    /// Where the sizes come from.
    pub provenance: &'static str,
}

/// A model line: model ids that start with `prefix` (case-insensitive)
/// read frames as `spec` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelLine {
    /// Prefix of the model id (after any `provider/` part).
    pub prefix: &'static str,
    /// Shape name.
    pub shape: &'static str,
    /// Frame width in pixels.
    pub width: u32,
    /// Tallest frame in pixels.
    pub max_height: u32,
    /// Where the figures come from.
    pub provenance: &'static str,
}

/// Model lines, most specific prefix first. The first match wins. Sizes
/// are chosen so that the provider bills the frame at its own size and does
/// not scale it down (a scaled frame blurs its glyphs).
pub const MODEL_LINES: &[ModelLine] = &[
    ModelLine {
        prefix: "claude-opus-4-7",
        shape: "11on16-bw",
        width: 1932,
        max_height: 1932,
        provenance: "issue 7 width 1932 = 69 x 28 px patches; 69 x 69 = 4761 patches stays under Anthropic's 4784-patch cap, and Claude 4.7 reads long edges past 1568",
    },
    ModelLine {
        prefix: "claude",
        shape: "11on16-bw",
        width: 1568,
        max_height: 752,
        provenance: "Claude 4.6 and earlier scale an image down when its long edge passes 1568 px or it passes about 1,600 tokens (1.2 MP): 1568 x 752 (1.18 MP, 47 rows of 16 px) is read at its own size, where a 1568 px square would be shrunk by a third",
    },
    ModelLine {
        prefix: "gpt-5",
        shape: "8on22-bw",
        width: 2048,
        max_height: 2048,
        provenance: "issue 7 width 2048; GPT-5 bills 32 px patches up to 10000, so 2048 x 2048 (4096 patches) is not scaled",
    },
    ModelLine {
        prefix: "gpt",
        shape: "8on22-bw",
        width: 2048,
        max_height: 768,
        provenance: "issue 7 width 2048; OpenAI tile billing fits 2048 then scales the short side to 768, so a 2048 x 768 frame is not scaled",
    },
    ModelLine {
        prefix: "o1",
        shape: "8on22-bw",
        width: 2048,
        max_height: 768,
        provenance: "OpenAI o-series bill images with tiles, like GPT-4o",
    },
    ModelLine {
        prefix: "o3",
        shape: "8on22-bw",
        width: 2048,
        max_height: 768,
        provenance: "OpenAI o-series bill images with tiles, like GPT-4o",
    },
    ModelLine {
        prefix: "o4",
        shape: "8on22-bw",
        width: 2048,
        max_height: 768,
        provenance: "OpenAI o-series bill images with tiles, like GPT-4o",
    },
    ModelLine {
        prefix: "gemini",
        shape: "8on22-bw",
        width: 2048,
        max_height: 1536,
        provenance: "issue 7 width 2048; Gemini 2.x cuts images into 768 px tiles, 2048 x 1536 is 3 x 2 tiles",
    },
];

/// The line used when no prefix matches: the Claude default.
pub(crate) const DEFAULT_LINE: ModelLine = ModelLine {
    prefix: "",
    shape: "11on16-bw",
    width: 1568,
    max_height: 1568,
    provenance: "fallback for unknown models: the loosest shape on a 1568 px square",
};

impl FrameSpec {
    /// The frame spec for a model id such as `claude-sonnet-4-5` or
    /// `openai/gpt-5`. Unknown models get the default line.
    pub fn for_model(model: &str) -> FrameSpec {
        let id = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        let line = MODEL_LINES
            .iter()
            .find(|line| id.starts_with(line.prefix))
            .unwrap_or(&DEFAULT_LINE);
        FrameSpec::from_line(line)
    }

    fn from_line(line: &ModelLine) -> FrameSpec {
        let shape = Shape::by_name(line.shape).unwrap_or(FALLBACK_SHAPE);
        FrameSpec {
            shape,
            width: line.width,
            max_height: line.max_height,
            provenance: line.provenance,
        }
    }

    /// The same spec with another shape (for `--shape` overrides).
    pub fn with_shape(mut self, shape: Shape) -> FrameSpec {
        self.shape = shape;
        self
    }

    /// The same spec with another frame size.
    pub fn with_size(mut self, width: u32, max_height: u32) -> FrameSpec {
        self.width = width;
        self.max_height = max_height;
        self
    }
}

const FALLBACK_SHAPE: Shape = Shape {
    name: "11on16-bw",
    face: FaceId::Fixed8x13,
    cell_w: 11,
    cell_h: 16,
    denser: Some("8on16-bw"),
    provenance: "fallback",
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issue_shapes_exist_with_their_cells() {
        for (name, w, h) in [
            ("11on16-bw", 11, 16),
            ("8on22-bw", 8, 22),
            ("8on16-bw", 8, 16),
            ("8x13-bw", 8, 13),
        ] {
            let shape = Shape::by_name(name).unwrap();
            assert_eq!((shape.cell_w, shape.cell_h), (w, h), "{name}");
            assert_eq!(shape.face, FaceId::Fixed8x13);
        }
    }

    #[test]
    fn every_cell_holds_its_face_and_every_companion_exists() {
        for shape in SHAPES {
            let face = shape.face.face().unwrap();
            assert!(
                shape.cell_w >= face.width() && shape.cell_h >= face.height(),
                "{}",
                shape.name
            );
            if let Some(name) = shape.denser {
                let denser = Shape::by_name(name).unwrap();
                assert!(
                    u32::from(denser.cell_w) * u32::from(denser.cell_h)
                        < u32::from(shape.cell_w) * u32::from(shape.cell_h),
                    "{} -> {name}",
                    shape.name
                );
            }
        }
        assert_eq!(
            FALLBACK_SHAPE,
            Shape {
                provenance: "fallback",
                ..Shape::by_name("11on16-bw").unwrap()
            }
        );
    }

    #[test]
    fn unknown_shape_names_the_known_ones() {
        assert_eq!(
            Shape::by_name("9on9").unwrap_err().to_string(),
            "unknown frame shape \"9on9\"; known shapes: 11on16-bw, 8on22-bw, 8on16-bw, 8x13-bw, 6x13-bw"
        );
    }

    #[test]
    fn model_ids_choose_their_line() {
        let cases = [
            ("claude-sonnet-4-5", "11on16-bw", 1568),
            ("anthropic/claude-opus-4-7", "11on16-bw", 1932),
            ("gpt-5", "8on22-bw", 2048),
            ("GPT-4.1-mini", "8on22-bw", 2048),
            ("gemini-2.5-pro", "8on22-bw", 2048),
            ("o3", "8on22-bw", 2048),
            ("openchat-3.5", "11on16-bw", 1568),
            ("some-local-model", "11on16-bw", 1568),
        ];
        for (model, shape, width) in cases {
            let spec = FrameSpec::for_model(model);
            assert_eq!((spec.shape.name, spec.width), (shape, width), "{model}");
        }
    }
}
