//! History printed onto PNG frames for vision models.
mod error;
mod font;

pub use error::Error;
pub use font::Face;
pub use font::FaceId;
pub use font::Glyph;
