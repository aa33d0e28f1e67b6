//! The crate's one error type.

/// What can go wrong while printing history onto frames.
///
/// Every message is lower case and names the value and place at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A bundled font did not parse. A build defect: the crate's tests load
    /// every face, so callers only see this if the assets were altered.
    #[error("font {face}: {detail}")]
    Font {
        /// The face, for example `8x13`.
        face: String,
        /// What was wrong and where.
        detail: String,
    },
    /// The PNG encoder failed (in practice only on an impossible size).
    #[error("png encoding of a {width}x{height} frame failed: {detail}")]
    Png {
        /// Frame width in pixels.
        width: u32,
        /// Frame height in pixels.
        height: u32,
        /// The encoder's message.
        detail: String,
    },
    /// A shape name that is not in the shape table.
    #[error("unknown frame shape {name:?}; known shapes: {known}")]
    UnknownShape {
        /// The name asked for.
        name: String,
        /// The names that exist, comma separated.
        known: String,
    },
    /// A frame geometry that cannot hold a single cell.
    #[error("frame {width}x{height} cannot hold one {cell_w}x{cell_h} cell of shape {shape}")]
    FrameTooSmall {
        /// The shape's name.
        shape: String,
        /// Frame width in pixels.
        width: u32,
        /// Frame height in pixels.
        height: u32,
        /// Cell width in pixels.
        cell_w: u16,
        /// Cell height in pixels.
        cell_h: u16,
    },
    /// The archive would not cost fewer tokens than the text it replaces,
    /// so the method refuses and the chain falls through to the next one.
    #[error(
        "snapcompact would not save tokens: frames cost {imaged} tokens against {text} as text"
    )]
    NoSaving {
        /// Tokens the imaged archive would cost (frames, guide and edges).
        imaged: u64,
        /// Tokens the replaced history costs as text.
        text: u64,
    },
    /// Not one frame fits the budget (window, image count or bytes).
    #[error("no frame fits the budget: {reason}")]
    NoFrameBudget {
        /// Which limit ran out first.
        reason: String,
    },
    /// The archive's record did not serialize for the log.
    #[error(transparent)]
    Record(#[from] abridge_compact::DetailsError),
    /// Drawing would take more frames than the caller allows (`abridge
    /// render --max-frames`); refused after layout, before any frame is
    /// drawn.
    #[error(
        "the text needs {frames} frames, over the limit of {limit}; raise --max-frames or render less"
    )]
    TooManyFrames {
        /// Frames the text needs.
        frames: usize,
        /// The limit.
        limit: usize,
    },
    /// The model cannot read images.
    #[error("model {model:?} has no vision input; snapcompact needs one")]
    NoVision {
        /// The model id.
        model: String,
    },
}
