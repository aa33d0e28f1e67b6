//! Grading a context against a key: each probe is in context, one recall
//! away, or lost.

use super::key::Key;
use super::probe::Category;
use super::probe::normalise;

/// How far a fact is from the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Reach {
    /// Its needle occurs in what the next request sends.
    InContext,
    /// Not in context, but the first page the recall tool answers for the
    /// probe's words holds it.
    OneRecall,
    /// Neither.
    Lost,
}

/// The reach of every probe of `key`, in its order. `context` is the text
/// the model will see (raw; normalised here); `recall` answers a query
/// with the recall tool's first page.
pub(crate) fn grade(
    key: &Key,
    context: &str,
    mut recall: impl FnMut(&str) -> String,
) -> Vec<Reach> {
    let context = normalise(context);
    key.probes
        .iter()
        .map(|probe| {
            if context.contains(&probe.needle) {
                Reach::InContext
            } else if normalise(&recall(&probe.query())).contains(&probe.needle) {
                Reach::OneRecall
            } else {
                Reach::Lost
            }
        })
        .collect()
}

/// Counts for one category: probes, in context, at most one recall away.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Tally {
    pub(crate) probes: usize,
    pub(crate) in_context: usize,
    pub(crate) reachable: usize,
}

impl Tally {
    /// Shares in percent; `None` when the category has no probe.
    pub(crate) fn percents(&self) -> Option<(f64, f64)> {
        (self.probes > 0).then(|| {
            let total = self.probes as f64;
            (
                100.0 * self.in_context as f64 / total,
                100.0 * self.reachable as f64 / total,
            )
        })
    }

    pub(crate) fn add(&mut self, other: Tally) {
        self.probes += other.probes;
        self.in_context += other.in_context;
        self.reachable += other.reachable;
    }
}

/// The tally of `category` from a grading of `key`.
pub(crate) fn tally(key: &Key, reaches: &[Reach], category: Category) -> Tally {
    let mut out = Tally::default();
    for (probe, reach) in key.probes.iter().zip(reaches) {
        if probe.category != category {
            continue;
        }
        out.probes += 1;
        out.in_context += usize::from(*reach == Reach::InContext);
        out.reachable += usize::from(*reach != Reach::Lost);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fidelity::probe::Probe;

    fn key() -> Key {
        Key {
            probes: vec![
                Probe::new(Category::Task, "Fix the flaky parser test").unwrap(),
                Probe::new(Category::FilesChanged, "src/parse.rs").unwrap(),
                Probe::new(Category::FilesChanged, "src/lex.rs").unwrap(),
            ],
        }
    }

    #[test]
    fn in_context_beats_recall_and_recall_beats_lost() {
        let key = key();
        let reaches = grade(
            &key,
            "## Goal\nfix the *flaky* parser-test\n- `src/parse.rs`",
            |q| {
                if q.contains("lex") {
                    "recall://4 ... wrote src/lex.rs ...".to_string()
                } else {
                    String::new()
                }
            },
        );
        assert_eq!(
            reaches,
            [Reach::InContext, Reach::InContext, Reach::OneRecall]
        );
        let files = tally(&key, &reaches, Category::FilesChanged);
        assert_eq!(
            files,
            Tally {
                probes: 2,
                in_context: 1,
                reachable: 2
            }
        );
        assert_eq!(files.percents(), Some((50.0, 100.0)));
    }

    #[test]
    fn a_probe_found_nowhere_is_lost() {
        let key = key();
        let reaches = grade(&key, "nothing here", |_| "no matches".to_string());
        assert!(reaches.iter().all(|r| *r == Reach::Lost));
        assert_eq!(
            tally(&key, &reaches, Category::Identifiers).percents(),
            None
        );
    }
}
