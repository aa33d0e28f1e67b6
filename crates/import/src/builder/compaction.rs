//! Compactions the source recorded, as checkpoints: the replace that
//! hides what the compacting agent stopped showing its model.

use abridge_llm::Block;
use abridge_llm::Message;
use abridge_session::Draft;
use abridge_session::Reference;
use abridge_session::Seq;

use super::Builder;
use crate::ImportError;
use crate::ImportWarning;

/// What a compaction keeps visible after its summary.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Keep {
    /// Nothing: the summary stands for the whole surface (Claude Code,
    /// Codex).
    Nothing,
    /// The messages that came from source lines at or after `line`, when
    /// `anchor` (the first kept entry, as mapped) is on the compacted
    /// branch; everything else is hidden (pi).
    FromLine {
        /// The first kept entry's source line.
        line: u64,
        /// Where that entry landed in our log; `None` when it was not found.
        anchor: Option<Option<Seq>>,
    },
}

impl Builder {
    /// The seqs a model would see at the end of `path`: appends push,
    /// replaces swap their span for the checkpoint. The builder writes no
    /// rewrites, and its replaces always fit, so this short fold is the
    /// session's own fold for these drafts. It reads the nodes, not the
    /// drafts, so it holds for drafts already passed on.
    fn surface_of(&self, path: &[Seq]) -> Vec<Seq> {
        let mut surface: Vec<Seq> = Vec::new();
        for seq in path {
            if self.node(*seq).and_then(|n| n.role).is_none() {
                continue;
            }
            match self.replaces.get(seq) {
                None => surface.push(*seq),
                Some(&(start, end)) if start <= end && end < surface.len() => {
                    surface.splice(start..=end, [*seq]);
                }
                Some(_) => {}
            }
        }
        surface
    }

    /// Adds a compaction checkpoint after `parent`: `message` replaces
    /// every message the compacting agent stopped showing its model, and
    /// lists them with `bookkeeping` (log events describing the compaction)
    /// in its sources.
    ///
    /// # Errors
    /// [`ImportError::Cycle`] (never, by construction).
    pub(crate) fn compaction(
        &mut self,
        mut message: Message,
        parent: Option<Seq>,
        time: Option<String>,
        line: u64,
        keep: Keep,
        bookkeeping: &[Seq],
    ) -> Result<Seq, ImportError> {
        let parent = self.snap(parent);
        let parent = self.close_open(parent);
        let path = self.path_to(parent)?;
        let surface = self.surface_of(&path);
        let cut = match keep {
            Keep::Nothing => surface.len(),
            Keep::FromLine { line: kept, anchor } => {
                let on_path = match anchor {
                    Some(Some(seq)) => path.contains(&seq),
                    Some(None) => true,
                    None => false,
                };
                if on_path {
                    let mut cut = surface.len();
                    while let Some(seq) = cut.checked_sub(1).map(|i| surface[i]) {
                        let keep_it = self
                            .node(seq)
                            .is_some_and(|n| !n.checkpoint && n.line.is_some_and(|l| l >= kept));
                        if !keep_it {
                            break;
                        }
                        cut -= 1;
                    }
                    cut
                } else {
                    self.report.warn(ImportWarning::Compaction {
                        line,
                        reason: format!(
                            "the first kept entry (line {kept}) is not on the compacted branch; the summary replaces everything before it"
                        ),
                    });
                    surface.len()
                }
            }
        };
        if message.meta.origin.is_none() {
            message.meta.origin = Some(self.imported());
        }
        if cut == 0 {
            self.report.warn(ImportWarning::Compaction {
                line,
                reason: "nothing was hidden; the summary was appended".to_string(),
            });
            return Ok(self.message(message, parent, time, Some(line)));
        }
        // Name what the checkpoint hides, as the seam's framing does, so the
        // `recall` tool reads an imported checkpoint's past back too.
        let hides = Reference::range(surface[0], surface[cut - 1]);
        message.content.push(Block::text(hides.hidden_note()));
        let mut sources: Vec<Seq> = surface[..cut].to_vec();
        sources.extend_from_slice(bookkeeping);
        crate::shared::fit(&mut message.content);
        let Draft { body, .. } = Draft::replace(message, 0, cut - 1, sources);
        let seq = self.push(body, parent, time, Some(line), true);
        self.report.compactions += 1;
        Ok(seq)
    }
}
