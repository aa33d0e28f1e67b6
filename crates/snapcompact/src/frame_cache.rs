//! Frames drawn on demand and kept by content hash: an archive stores
//! text only, so every request that shows its frames draws them through
//! this cache.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;

use sha2::Digest;
use sha2::Sha256;

use crate::error::Error;
use crate::render::Frame;
use crate::render::Grid;
use crate::render::Ink;
use crate::render::Page;
use crate::render::render_page;

/// Frames drawn so far, by content hash, so a request built twice renders
/// once. Bounded: when it holds `capacity` frames it is emptied and starts
/// over (frames are cheap to draw again).
#[derive(Debug)]
pub struct FrameCache {
    capacity: usize,
    frames: Mutex<HashMap<[u8; 32], Arc<Frame>>>,
}

impl Default for FrameCache {
    fn default() -> Self {
        FrameCache::new(256)
    }
}

impl FrameCache {
    /// A cache holding at most `capacity` frames.
    pub fn new(capacity: usize) -> Self {
        FrameCache {
            capacity: capacity.max(1),
            frames: Mutex::new(HashMap::new()),
        }
    }

    /// Frames currently held.
    pub fn len(&self) -> usize {
        self.frames.lock().map(|map| map.len()).unwrap_or(0)
    }

    /// True when no frame is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The frame for `page` on `grid`, drawn if not cached.
    ///
    /// # Errors
    ///
    /// Font and PNG errors from rendering.
    pub fn render(&self, page: &Page, grid: &Grid) -> Result<Arc<Frame>, Error> {
        let key = content_key(page, grid);
        if let Ok(map) = self.frames.lock()
            && let Some(frame) = map.get(&key)
        {
            return Ok(Arc::clone(frame));
        }
        let frame = Arc::new(render_page(page, grid)?);
        if let Ok(mut map) = self.frames.lock() {
            if map.len() >= self.capacity {
                map.clear();
            }
            map.insert(key, Arc::clone(&frame));
        }
        Ok(frame)
    }
}

fn content_key(page: &Page, grid: &Grid) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(grid.shape.name.as_bytes());
    hasher.update(grid.width.to_le_bytes());
    hasher.update(grid.rows.to_le_bytes());
    hasher.update(grid.line_spacing.to_le_bytes());
    hasher.update(page.rows.to_le_bytes());
    for run in &page.runs {
        hasher.update([match run.ink {
            Ink::Normal => 0u8,
            Ink::Dim => 1u8,
        }]);
        hasher.update((run.text.len() as u64).to_le_bytes());
        hasher.update(run.text.as_bytes());
    }
    hasher.finalize().into()
}
