//! The human form of a replay's passes: one row per pass in the order
//! they ran, with repeated failures counted rather than listed, and the
//! methods that failed before a landing named only when they differ from
//! the landing before.

use abridge::MethodFailure;
use abridge::PassStatus;
use abridge_compact::ErrorKind;

use super::Compaction;
use super::Failure;
use super::Report;
use super::Row;
use super::is_skip;
use super::percent_less;

/// The passes as rows, in the order they ran. A failed attempt that
/// repeats the one before it (the same methods failing the same way) is
/// counted on that one, not listed again: a long replay under a window
/// its fixed part does not fit fails the same way hundreds of times.
pub(super) fn rows(report: &Report, timings: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut repeats: Option<(&Failure, usize)> = None;
    // The methods that failed before the last landing, so a landing after
    // the same failures does not list them again.
    let mut failed_first = None;
    for row in &report.order {
        match *row {
            Row::Failed(i) => {
                let f = &report.failed_attempts[i];
                if let Some((first, count)) = &mut repeats
                    && same_failure(first, f)
                {
                    *count += 1;
                    continue;
                }
                repeated(repeats.take(), &mut out);
                failure_rows(f, timings, &mut out);
                repeats = Some((f, 0));
            }
            Row::Landed(i) => {
                repeated(repeats.take(), &mut out);
                let c = &report.compactions[i];
                let first = kinds(&c.failures);
                let again = failed_first.as_ref() == Some(&first);
                compaction_rows(c, timings, !again, &mut out);
                failed_first = Some(first);
            }
        }
    }
    repeated(repeats, &mut out);
    out
}

fn millis(millis: u128, timings: bool) -> String {
    if timings {
        format!(" {millis:>8}")
    } else {
        String::new()
    }
}

/// A landed pass's row; with `failures`, the methods that failed before
/// it landed.
fn compaction_rows(c: &Compaction, timings: bool, failures: bool, out: &mut Vec<String>) {
    out.push(format!(
        "{:>7}  {:<12} {:>9} {:>9} {:>5.1}%{}",
        c.at_message,
        c.method,
        c.tokens_before,
        c.tokens_after,
        percent_less(c.tokens_before, c.tokens_after),
        millis(c.millis, timings)
    ));
    if c.status != PassStatus::Succeeded {
        out.push(format!(
            "         pass {:?} ({})",
            c.status,
            c.trigger.as_str()
        ));
    }
    for failure in c.failures.iter().filter(|f| failures && !is_skip(f)) {
        out.push(format!(
            "         {} failed first: {}",
            failure.method, failure.message
        ));
    }
}

fn failure_rows(f: &Failure, timings: bool, out: &mut Vec<String>) {
    out.push(format!(
        "{:>7}  {:<12} {:>9} {:>9} {:>6}{}",
        f.at_message,
        "(failed)",
        f.tokens,
        "-",
        "-",
        millis(f.millis, timings)
    ));
    for failure in f.failures.iter().filter(|f| !is_skip(f)) {
        out.push(format!("         {}: {}", failure.method, failure.message));
    }
}

/// The line that closes a run of repeated failures, if it repeated.
fn repeated(run: Option<(&Failure, usize)>, out: &mut Vec<String>) {
    if let Some((first, count)) = run
        && count > 0
    {
        let times = if count == 1 { "time" } else { "times" };
        out.push(format!(
            "         the same failure {count} more {times} after message {}",
            first.at_message
        ));
    }
}

/// Two failed attempts that ended the same way: the same trigger and
/// status, and the same methods failing with the same kinds (their
/// messages differ only in the figures they quote).
fn same_failure(a: &Failure, b: &Failure) -> bool {
    a.status == b.status && a.trigger == b.trigger && kinds(&a.failures) == kinds(&b.failures)
}

/// Which methods failed, and how, leaving out those that never ran.
fn kinds(failures: &[MethodFailure]) -> Vec<(String, ErrorKind)> {
    failures
        .iter()
        .filter(|f| !is_skip(f))
        .map(|f| (f.method.clone(), f.kind))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::Run;
    use super::*;
    use abridge_compact::Trigger;

    fn failure(at_message: usize, kind: ErrorKind) -> Failure {
        Failure {
            at_message,
            trigger: Trigger::Threshold,
            tokens: 50_000 + at_message as u64,
            status: PassStatus::Failed,
            failures: vec![MethodFailure::new(
                "digest",
                kind,
                format!("digest failed at {at_message}"),
            )],
            millis: 0,
        }
    }

    fn landed(at_message: usize) -> Compaction {
        Compaction {
            at_message,
            trigger: Trigger::Threshold,
            method: "digest".into(),
            tokens_before: 50_000,
            tokens_after: 20_000,
            status: PassStatus::Succeeded,
            failures: vec![MethodFailure::new(
                "prune",
                ErrorKind::NothingToCompact,
                "nothing to compact: prune found no tool output to reclaim",
            )],
            millis: 0,
        }
    }

    /// Issue 27, point 8: a long replay printed every failed attempt (700
    /// lines of one failure) and listed the failed ones after all the
    /// landed ones. Rows follow the replay, a failure that repeats is
    /// counted on its first row, and the methods that failed before a
    /// landing are named again only when they change.
    #[test]
    fn rows_follow_the_replay_and_repeated_failures_are_counted() {
        let report = Report {
            session: "s".into(),
            model: "m".into(),
            window: 64_000,
            threshold: 48_000,
            keep: 20_000,
            methods: vec!["digest".into()],
            skipped: Vec::new(),
            messages: 100,
            assistant_turns: 50,
            compaction_count: 2,
            cache_breaks: 2,
            compactions: vec![landed(10), landed(40)],
            failed_attempts: vec![
                failure(20, ErrorKind::NothingToCompact),
                failure(21, ErrorKind::NothingToCompact),
                failure(22, ErrorKind::NothingToCompact),
                failure(23, ErrorKind::NotSmaller),
                failure(50, ErrorKind::NotSmaller),
            ],
            fixed_above_threshold: None,
            order: vec![
                Row::Landed(0),
                Row::Failed(0),
                Row::Failed(1),
                Row::Failed(2),
                Row::Failed(3),
                Row::Landed(1),
                Row::Failed(4),
            ],
            simulated: Run::default(),
            baseline: Run::default(),
            violations: Vec::new(),
        };
        let rows = rows(&report, false);
        let firsts: Vec<&str> = rows
            .iter()
            .filter(|r| !r.starts_with("         "))
            .map(|r| r.split_whitespace().next().unwrap())
            .collect();
        assert_eq!(firsts, ["10", "20", "23", "40", "50"], "{rows:#?}");
        assert!(
            rows.contains(&"         the same failure 2 more times after message 20".to_string()),
            "{rows:#?}"
        );
        let failed_first = rows
            .iter()
            .filter(|r| r.contains("prune failed first"))
            .count();
        assert_eq!(failed_first, 1, "{rows:#?}");
        assert_eq!(rows.len(), 10, "{rows:#?}");
    }
}
