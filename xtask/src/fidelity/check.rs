//! `--check`: floors just under the figures measured, so a change that
//! loses facts fails CI.

use super::probe::Category;
use super::report::SessionResult;
use super::report::pooled;

/// One floor: a method's pooled share in a category, in percent.
struct Floor {
    method: &'static str,
    category: Category,
    /// Least share in context.
    in_context: f64,
    /// Least share at most one recall away.
    reachable: f64,
}

/// A floor for a category at 100%: any lost probe fails it.
const ALL: f64 = 99.0;

/// The floors, just under the figures in BENCHMARKS.md (`fidelity`):
/// `digest` per category, in context and within one recall; the default
/// order within one recall. The targets for digest in context
/// are task and constraints 100%, files changed 95%, last error 90%,
/// identifiers 60%; each floor here is at or above its target.
const FLOORS: &[Floor] = &[
    floor("digest", Category::Task, ALL, ALL),
    floor("digest", Category::Constraints, ALL, ALL),
    floor("digest", Category::FilesChanged, ALL, ALL),
    floor("digest", Category::FilesRead, ALL, ALL),
    floor("digest", Category::LastError, ALL, ALL),
    floor("digest", Category::Commands, ALL, ALL),
    floor("digest", Category::Identifiers, 75.0, ALL),
    floor("digest", Category::OpenItems, ALL, ALL),
    floor("default order", Category::Task, ALL, ALL),
    floor("default order", Category::Constraints, 0.0, ALL),
    floor("default order", Category::FilesChanged, 0.0, ALL),
    floor("default order", Category::FilesRead, 0.0, ALL),
    floor("default order", Category::LastError, 0.0, ALL),
    floor("default order", Category::Commands, 0.0, ALL),
    floor("default order", Category::Identifiers, 0.0, ALL),
    floor("default order", Category::OpenItems, 0.0, ALL),
];

const fn floor(method: &'static str, category: Category, in_context: f64, reachable: f64) -> Floor {
    Floor {
        method,
        category,
        in_context,
        reachable,
    }
}

/// Every floor not met, in words. Floors are for the bundled sessions:
/// on other sessions the check still runs, and a category with no probe
/// fails, since nothing was measured.
pub(crate) fn failures(results: &[SessionResult]) -> Vec<String> {
    let mut out = Vec::new();
    for floor in FLOORS {
        let Some((context, reachable)) = pooled(results, floor.method, floor.category).percents()
        else {
            out.push(format!("{} {}: no probes", floor.method, floor.category));
            continue;
        };
        if context < floor.in_context {
            out.push(format!(
                "{} {}: {context:.1}% in context, floor {:.0}%",
                floor.method, floor.category, floor.in_context
            ));
        }
        if reachable < floor.reachable {
            out.push(format!(
                "{} {}: {reachable:.1}% within one recall, floor {:.0}%",
                floor.method, floor.category, floor.reachable
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fidelity::key::Key;
    use crate::fidelity::probe::Probe;
    use crate::fidelity::run::Graded;
    use crate::fidelity::score::Reach;

    /// One session whose key has one probe per category, graded for
    /// `digest` and the default order with `digest_reach` for digest's
    /// identifiers and everything else in context.
    fn results(digest_reach: Reach) -> Vec<SessionResult> {
        let key = Key {
            probes: Category::ALL
                .iter()
                .map(|c| Probe::new(*c, &format!("a fact about {c}")).unwrap())
                .collect(),
        };
        let graded = |method: &str, identifiers: Reach| Graded {
            method: method.to_string(),
            landed: vec![method.to_string()],
            status: None,
            tokens: 0,
            checkpoint_tokens: 0,
            reaches: Category::ALL
                .iter()
                .map(|c| {
                    if *c == Category::Identifiers {
                        identifiers
                    } else {
                        Reach::InContext
                    }
                })
                .collect(),
        };
        vec![SessionResult {
            name: "s".into(),
            how: "test".into(),
            window: 0,
            graded: vec![
                graded("digest", digest_reach),
                graded("default order", Reach::OneRecall),
            ],
            key,
        }]
    }

    #[test]
    fn figures_at_their_floors_pass() {
        assert_eq!(failures(&results(Reach::InContext)), Vec::<String>::new());
    }

    #[test]
    fn a_lost_fact_fails_both_floors_of_its_category() {
        assert_eq!(
            failures(&results(Reach::Lost)),
            [
                "digest identifiers: 0.0% in context, floor 75%",
                "digest identifiers: 0.0% within one recall, floor 99%"
            ]
        );
        assert_eq!(
            failures(&results(Reach::OneRecall)),
            ["digest identifiers: 0.0% in context, floor 75%"]
        );
    }
}
