//! The tables: per session, and pooled over every session graded.

use super::key::Key;
use super::probe::Category;
use super::run::Graded;
use super::score::Tally;
use super::score::tally;
use crate::bench::Section;

/// One session's results.
pub(crate) struct SessionResult {
    /// The file's name.
    pub(crate) name: String,
    /// How its compaction point was chosen.
    pub(crate) how: String,
    /// The window the methods ran under.
    pub(crate) window: u64,
    /// Its key.
    pub(crate) key: Key,
    /// Every method's grading, then the agent's own summary's.
    pub(crate) graded: Vec<Graded>,
}

impl SessionResult {
    /// The tally of `method` in `category`; `None` when it was not run.
    pub(crate) fn tally(&self, method: &str, category: Category) -> Option<Tally> {
        self.graded
            .iter()
            .find(|g| g.method == method)
            .map(|g| tally(&self.key, &g.reaches, category))
    }
}

/// A cell: in context, then at most one recall away, in percent.
fn cell(tally: Tally) -> String {
    match tally.percents() {
        Some((context, reachable)) => format!("{context:.0} / {reachable:.0}"),
        None => "-".to_string(),
    }
}

fn columns() -> Vec<&'static str> {
    let mut columns = vec!["method", "pass", "tokens after", "checkpoint text"];
    columns.extend(Category::ALL.iter().map(|c| c.label()));
    columns.push("all");
    columns
}

/// The table of one session.
pub(crate) fn session_section(result: &SessionResult) -> Section {
    let counts: Vec<String> = Category::ALL
        .iter()
        .map(|c| format!("{} {}", c.label(), result.key.of(*c).count()))
        .collect();
    let mut section = Section::new(
        &format!("Fidelity: {}", result.name),
        &format!(
            "Compaction point: {}; window {}. Probes: {} ({}). A cell is the share in context / the share at most one recall away, in percent; `=` marks a pass that changed nothing.",
            result.how,
            result.window,
            result.key.probes.len(),
            counts.join(", ")
        ),
        &columns(),
    );
    for graded in &result.graded {
        let mut cells = vec![
            graded.method.clone(),
            graded
                .status
                .map_or_else(|| "imported".to_string(), |s| format!("{s:?}")),
            format!(
                "{}{}",
                graded.tokens,
                if graded.landed.is_empty() { "=" } else { "" }
            ),
            graded.checkpoint_tokens.to_string(),
        ];
        let mut all = Tally::default();
        for category in Category::ALL {
            let t = tally(&result.key, &graded.reaches, category);
            all.add(t);
            cells.push(cell(t));
        }
        cells.push(cell(all));
        section.row(cells);
    }
    section
}

/// Probes of every session pooled, per method and category.
pub(crate) fn pooled(results: &[SessionResult], method: &str, category: Category) -> Tally {
    let mut total = Tally::default();
    for result in results {
        if let Some(t) = result.tally(method, category) {
            total.add(t);
        }
    }
    total
}

/// The pooled table: every probe of every session counted once.
pub(crate) fn pooled_section(results: &[SessionResult], methods: &[&str]) -> Section {
    let mut columns = vec!["method"];
    columns.extend(Category::ALL.iter().map(|c| c.label()));
    columns.push("all");
    let mut section = Section::new(
        "Fidelity: every session pooled",
        "Every probe of every session above counted once, per method (the agent's own summary only where a session has one). In context / at most one recall away, in percent.",
        &columns,
    );
    for method in methods {
        let mut cells = vec![(*method).to_string()];
        let mut all = Tally::default();
        for category in Category::ALL {
            let t = pooled(results, method, category);
            all.add(t);
            cells.push(cell(t));
        }
        cells.push(cell(all));
        section.row(cells);
    }
    section
}
