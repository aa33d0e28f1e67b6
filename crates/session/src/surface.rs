//! The surface: which messages the model sees, folded from the active path.

use crate::event::Seq;
use crate::event::SurfaceOp;

/// The ordered seqs visible on the active path, with a generation counter
/// that grows on every `replace` and `rewrite`.
///
/// Each position holds the seq of the event that supplies its message: the
/// original event, or the latest rewrite of it, or a checkpoint.
#[derive(Clone, Default)]
pub struct Surface {
    seqs: Vec<Seq>,
    /// Position of each seq, indexed by seq ([`NOT_VISIBLE`] when hidden).
    /// Seqs are dense, so a vector beats a hash map: the entries an append
    /// touches are at its end, in cache, however long the log is.
    positions: Vec<usize>,
    generation: u64,
}

/// The position of a seq that is not on the surface.
const NOT_VISIBLE: usize = usize::MAX;

/// Two surfaces are equal when they show the same seqs at the same
/// generation (positions follow from the seqs).
impl PartialEq for Surface {
    fn eq(&self, other: &Self) -> bool {
        self.seqs == other.seqs && self.generation == other.generation
    }
}

impl Eq for Surface {}

impl std::fmt::Debug for Surface {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Surface")
            .field("seqs", &self.seqs)
            .field("generation", &self.generation)
            .finish()
    }
}

/// What one message event did to the surface. Consumers that keep running
/// totals (the token meter) replay these instead of refolding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SurfaceChange {
    /// The seq that became visible.
    pub seq: Seq,
    /// The seqs it hid: empty for an append, the span for a replace, the
    /// previous holder of the position for a rewrite.
    pub removed: Vec<Seq>,
}

/// Why a surface operation cannot apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SurfaceReject {
    SpanOutOfRange {
        start: usize,
        end: usize,
        len: usize,
    },
    TargetNotVisible {
        target: Seq,
    },
    AlreadyVisible {
        seq: Seq,
    },
}

impl std::fmt::Display for SurfaceReject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SurfaceReject::SpanOutOfRange { start, end, len } => write!(
                f,
                "span {start}..={end} is not on the surface of {len} messages"
            ),
            SurfaceReject::TargetNotVisible { target } => {
                write!(f, "target seq {target} is not visible on the surface")
            }
            SurfaceReject::AlreadyVisible { seq } => {
                write!(f, "seq {seq} is already visible on the surface")
            }
        }
    }
}

/// How to take back one applied change (used to roll back a rejected batch).
#[derive(Debug, Clone)]
pub(crate) enum Undo {
    Pop,
    Replace { start: usize, removed: Vec<Seq> },
    Rewrite { position: usize, previous: Seq },
}

impl Surface {
    /// The visible seqs, oldest first.
    pub fn seqs(&self) -> &[Seq] {
        &self.seqs
    }

    /// Number of visible messages.
    pub fn len(&self) -> usize {
        self.seqs.len()
    }

    /// True when the model would see nothing.
    pub fn is_empty(&self) -> bool {
        self.seqs.is_empty()
    }

    /// Grows by one on every replace and rewrite, so caches keyed on it
    /// (rendered requests, plans) know when history changed shape.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Where `seq` stands on the surface, if visible.
    pub fn position(&self, seq: Seq) -> Option<usize> {
        usize::try_from(seq)
            .ok()
            .and_then(|i| self.positions.get(i))
            .copied()
            .filter(|p| *p != NOT_VISIBLE)
    }

    /// True when `seq` is visible.
    pub fn contains(&self, seq: Seq) -> bool {
        self.position(seq).is_some()
    }

    fn set_position(&mut self, seq: Seq, position: usize) {
        // Only seqs of events being applied get here, and those are
        // contiguous from 0 (checked before any fold), so this grows the
        // vector by one at a time.
        let Ok(index) = usize::try_from(seq) else {
            return;
        };
        if index >= self.positions.len() {
            self.positions.resize(index + 1, NOT_VISIBLE);
        }
        self.positions[index] = position;
    }

    fn clear_position(&mut self, seq: Seq) {
        if let Some(slot) = usize::try_from(seq)
            .ok()
            .and_then(|i| self.positions.get_mut(i))
        {
            *slot = NOT_VISIBLE;
        }
    }

    /// Checks that `op` by event `seq` can apply, without changing anything.
    pub(crate) fn check(&self, seq: Seq, op: &SurfaceOp) -> Result<(), SurfaceReject> {
        if self.contains(seq) {
            return Err(SurfaceReject::AlreadyVisible { seq });
        }
        match *op {
            SurfaceOp::Append => Ok(()),
            SurfaceOp::Replace { start, end } => {
                if start > end || end >= self.seqs.len() {
                    Err(SurfaceReject::SpanOutOfRange {
                        start,
                        end,
                        len: self.seqs.len(),
                    })
                } else {
                    Ok(())
                }
            }
            SurfaceOp::Rewrite { target } => {
                if self.contains(target) {
                    Ok(())
                } else {
                    Err(SurfaceReject::TargetNotVisible { target })
                }
            }
        }
    }

    /// Applies a checked operation. Callers must call [`Surface::check`]
    /// first; an unchecked span is clamped rather than panicking.
    pub(crate) fn apply(&mut self, seq: Seq, op: &SurfaceOp) -> (SurfaceChange, Undo) {
        match *op {
            SurfaceOp::Append => {
                self.set_position(seq, self.seqs.len());
                self.seqs.push(seq);
                (
                    SurfaceChange {
                        seq,
                        removed: Vec::new(),
                    },
                    Undo::Pop,
                )
            }
            SurfaceOp::Replace { start, end } => {
                let end = end.min(self.seqs.len().saturating_sub(1));
                let start = start.min(end);
                let removed: Vec<Seq> = self.seqs.splice(start..=end, [seq]).collect();
                for gone in &removed {
                    self.clear_position(*gone);
                }
                self.reindex_from(start);
                self.generation += 1;
                (
                    SurfaceChange {
                        seq,
                        removed: removed.clone(),
                    },
                    Undo::Replace { start, removed },
                )
            }
            SurfaceOp::Rewrite { target } => {
                let position = self.position(target).unwrap_or(self.seqs.len());
                self.clear_position(target);
                if let Some(slot) = self.seqs.get_mut(position) {
                    *slot = seq;
                    self.set_position(seq, position);
                }
                self.generation += 1;
                (
                    SurfaceChange {
                        seq,
                        removed: vec![target],
                    },
                    Undo::Rewrite {
                        position,
                        previous: target,
                    },
                )
            }
        }
    }

    /// Takes back the most recent change.
    pub(crate) fn undo(&mut self, undo: Undo) {
        match undo {
            Undo::Pop => {
                if let Some(seq) = self.seqs.pop() {
                    self.clear_position(seq);
                }
            }
            Undo::Replace { start, removed } => {
                if let Some(seq) = self.seqs.get(start).copied() {
                    self.clear_position(seq);
                    self.seqs.splice(start..=start, removed);
                    self.reindex_from(start);
                }
                self.generation -= 1;
            }
            Undo::Rewrite { position, previous } => {
                if let Some(current) = self.seqs.get(position).copied() {
                    self.clear_position(current);
                    self.seqs[position] = previous;
                    self.set_position(previous, position);
                }
                self.generation -= 1;
            }
        }
    }

    fn reindex_from(&mut self, start: usize) {
        for offset in 0..self.seqs.len().saturating_sub(start) {
            let seq = self.seqs[start + offset];
            self.set_position(seq, start + offset);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_then_undo_restores_everything() {
        let mut surface = Surface::default();
        for seq in 0..5 {
            surface.apply(seq, &SurfaceOp::Append);
        }
        let before = surface.clone();
        let op = SurfaceOp::Replace { start: 1, end: 3 };
        surface.check(9, &op).unwrap();
        let (change, undo) = surface.apply(9, &op);
        assert_eq!(change.removed, vec![1, 2, 3]);
        assert_eq!(surface.seqs(), &[0, 9, 4]);
        assert_eq!(surface.position(4), Some(2));
        assert_eq!(surface.generation(), 1);
        surface.undo(undo);
        assert_eq!(surface, before);
    }

    #[test]
    fn rejects_span_past_the_end() {
        let mut surface = Surface::default();
        surface.apply(0, &SurfaceOp::Append);
        assert_eq!(
            surface
                .check(1, &SurfaceOp::Replace { start: 0, end: 1 })
                .unwrap_err()
                .to_string(),
            "span 0..=1 is not on the surface of 1 messages"
        );
    }
}
