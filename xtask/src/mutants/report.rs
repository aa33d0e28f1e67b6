//! Outcome counts of one cargo-mutants run, read from its output
//! directory, and the report written from them.

use std::path::Path;

/// Columns of the report table, after the crate name.
pub(super) const COLUMNS: [&str; 7] = [
    "planned",
    "tested",
    "caught",
    "missed",
    "timeout",
    "unviable",
    "missed of viable",
];

/// Outcome counts and the missed mutants of one crate's run, read from a
/// mutants.out directory. A run stopped at the budget leaves the lists it
/// appended so far, so the counts cover the mutants it reached.
#[derive(Debug, Default, Clone)]
pub(super) struct Report {
    /// Mutants the run meant to test (after sharding).
    pub(super) planned: usize,
    /// Mutants a test failed on.
    pub(super) caught: usize,
    /// Mutants every test passed on, as cargo-mutants names them.
    pub(super) missed: Vec<String>,
    /// Mutants whose tests ran past the per-mutant timeout.
    pub(super) timeout: usize,
    /// Mutants that did not build.
    pub(super) unviable: usize,
}

impl Report {
    /// Reads `out` (a `mutants.out` directory); a missing file counts as
    /// empty, so a run that never started reads as all zero.
    pub(super) fn read(out: &Path) -> Report {
        let lines = |name: &str| -> Vec<String> {
            std::fs::read_to_string(out.join(name))
                .unwrap_or_default()
                .lines()
                .filter(|l| !l.trim().is_empty())
                .map(String::from)
                .collect()
        };
        let planned = std::fs::read_to_string(out.join("mutants.json"))
            .ok()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .and_then(|json| json.as_array().map(Vec::len))
            .unwrap_or(0);
        Report {
            planned,
            caught: lines("caught.txt").len(),
            missed: lines("missed.txt"),
            timeout: lines("timeout.txt").len(),
            unviable: lines("unviable.txt").len(),
        }
    }

    /// Adds another crate's counts, for the total row.
    pub(super) fn add(&mut self, other: &Report) {
        self.planned += other.planned;
        self.caught += other.caught;
        self.missed.extend(other.missed.iter().cloned());
        self.timeout += other.timeout;
        self.unviable += other.unviable;
    }

    /// Mutants with an outcome.
    pub(super) fn tested(&self) -> usize {
        self.caught + self.missed.len() + self.timeout + self.unviable
    }

    /// One table row, in the order of [`COLUMNS`].
    pub(super) fn cells(&self) -> Vec<String> {
        vec![
            self.planned.to_string(),
            self.tested().to_string(),
            self.caught.to_string(),
            self.missed.len().to_string(),
            self.timeout.to_string(),
            self.unviable.to_string(),
            self.missed_share(),
        ]
    }

    /// Missed as a share of the viable mutants tested (a timeout counts as
    /// viable: the mutant built and the tests noticed something).
    pub(super) fn missed_share(&self) -> String {
        let viable = self.caught + self.missed.len() + self.timeout;
        if viable == 0 {
            return "n/a".to_string();
        }
        format!("{:.1}%", 100.0 * self.missed.len() as f64 / viable as f64)
    }
}

/// A markdown table: a header of `first` and [`COLUMNS`], then one row per
/// `(name, report)`.
pub(super) fn table(first: &str, rows: &[(String, Report)]) -> String {
    let mut text = format!(
        "| {first} | {} |\n|---|{}\n",
        COLUMNS.join(" | "),
        "---|".repeat(COLUMNS.len())
    );
    for (name, report) in rows {
        text.push_str(&format!("| {name} | {} |\n", report.cells().join(" | ")));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missed_share_counts_only_viable_mutants() {
        let report = Report {
            planned: 10,
            caught: 3,
            missed: vec!["m".into()],
            timeout: 0,
            unviable: 6,
        };
        assert_eq!(report.missed_share(), "25.0%");
        assert_eq!(report.tested(), 10);
        assert_eq!(Report::default().missed_share(), "n/a");
    }

    #[test]
    fn totals_add_every_count() {
        let one = Report {
            planned: 4,
            caught: 2,
            missed: vec!["a".into()],
            timeout: 1,
            unviable: 0,
        };
        let mut total = Report::default();
        total.add(&one);
        total.add(&one);
        assert_eq!(total.cells(), ["8", "8", "4", "2", "2", "0", "25.0%"]);
    }

    #[test]
    fn outcome_lists_are_read_from_the_output_directory() {
        let dir = std::env::temp_dir().join(format!("xtask-mutants-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("mutants.json"), "[{}, {}, {}]").unwrap();
        std::fs::write(dir.join("caught.txt"), "a\n\nb\n").unwrap();
        std::fs::write(dir.join("missed.txt"), "c\n").unwrap();
        let report = Report::read(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(report.planned, 3);
        assert_eq!(report.caught, 2);
        assert_eq!(report.missed, ["c"]);
        assert_eq!(report.unviable, 0);
    }
}
