//! Our estimate against a provider's usage reports, replayed over a
//! recorded session: how the per-family corrections ([`crate::o200k_correction`])
//! are measured, and how the bench reports their error.
//!
//! A usage report counts the whole prompt of the call that wrote the
//! assistant message: the history before it plus what the log never holds
//! (the system prompt, the tool definitions). That overhead is unknown but
//! fixed while the host's prompt and tools stay the same, so it cancels in
//! the difference of two consecutive reports: `reported[k+1] -
//! reported[k]` is the provider's count of what was added between them,
//! and `estimate[k+1] - estimate[k]` is ours. The correction is fitted on
//! those deltas, never on the totals.

use abridge_session::Draft;
use abridge_session::EventBody;
use abridge_session::Seq;
use abridge_session::Session;
use abridge_session::SessionError;
use abridge_session::SurfaceOp;

use crate::cost::CostModel;
use crate::meter::TokenMeter;

/// One usage report, beside our estimate of the same prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportPoint {
    /// The reporting assistant message.
    pub seq: Seq,
    /// Our estimate of the surface before that message: the history the
    /// call was sent.
    pub estimate: u64,
    /// The prompt the provider reported (uncached input + cache read +
    /// cache write): history plus unseen overhead.
    pub reported: u64,
    /// The model that answered, when the message names it.
    pub model: Option<String>,
    /// Counts surface rewrites (a compaction, a pruning, a navigation):
    /// two points with the same epoch see one growing history, so their
    /// difference is history added, nothing else.
    pub epoch: u32,
}

/// The difference between two consecutive points of one epoch and model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportDelta {
    /// Our estimate of what was added.
    pub estimate: u64,
    /// The provider's count of it.
    pub reported: u64,
}

/// Replays `drafts` into an in-memory session, measuring with `cost`
/// before every appended assistant message that reports a prompt.
///
/// # Errors
/// When the session refuses a draft (the drafts do not form a log).
pub fn report_points(
    drafts: impl IntoIterator<Item = Draft>,
    cost: CostModel,
) -> Result<Vec<ReportPoint>, SessionError> {
    let mut session = Session::in_memory("calibrate");
    let mut meter = TokenMeter::new(cost);
    let mut points = Vec::new();
    let mut epoch = 0u32;
    let mut previous: Vec<Seq> = Vec::new();
    for draft in drafts {
        let report = match &draft.body {
            EventBody::Message(event) if event.op == SurfaceOp::Append => event
                .message
                .meta
                .usage
                .filter(|u| {
                    u.prompt_tokens() > 0 && event.message.role == abridge_llm::Role::Assistant
                })
                .map(|u| (u.prompt_tokens(), model_of(&event.message))),
            _ => None,
        };
        if let Some((reported, model)) = report {
            let surface = session.surface().seqs();
            if !surface.starts_with(&previous) {
                epoch += 1;
            }
            previous = surface.to_vec();
            let estimate = meter.measure(&session).estimate;
            let seq = session.append(draft)?;
            points.push(ReportPoint {
                seq,
                estimate,
                reported,
                model,
                epoch,
            });
        } else {
            session.append(draft)?;
        }
    }
    Ok(points)
}

fn model_of(message: &abridge_llm::Message) -> Option<String> {
    match &message.meta.origin {
        Some(abridge_llm::Origin::Model { model, .. }) => Some(model.clone()),
        _ => None,
    }
}

/// The differences of consecutive points that see one growing history
/// with one model (a model switch can change the host's system prompt).
/// A pair whose report shrank or whose estimate did not grow is left out:
/// the host removed something the log still holds (context editing,
/// cleared tool results), so the pair measures no addition.
pub fn report_deltas(points: &[ReportPoint]) -> Vec<ReportDelta> {
    points
        .windows(2)
        .filter(|pair| pair[0].epoch == pair[1].epoch && pair[0].model == pair[1].model)
        .filter(|pair| pair[1].reported >= pair[0].reported && pair[1].estimate > pair[0].estimate)
        .map(|pair| ReportDelta {
            estimate: pair[1].estimate - pair[0].estimate,
            reported: pair[1].reported - pair[0].reported,
        })
        .collect()
}

/// The correction fitted on `deltas`: everything the provider counted
/// over everything we counted (a ratio of sums, so a long delta weighs
/// what it holds and a two-token delta cannot swing it). `None` without
/// deltas.
pub fn fit(deltas: &[ReportDelta]) -> Option<f64> {
    let estimated: u64 = deltas.iter().map(|d| d.estimate).sum();
    let reported: u64 = deltas.iter().map(|d| d.reported).sum();
    (estimated > 0).then(|| reported as f64 / estimated as f64)
}

/// Mean and worst absolute error, in percent of the reported figure.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ErrorStats {
    /// How many figures were compared.
    pub count: usize,
    /// Mean of `|predicted - reported| / reported`, in percent.
    pub mean_percent: f64,
    /// The middle one (the upper of the two middle ones for an even
    /// count), in percent: what a typical figure is off by, whatever a
    /// few outliers do to the mean.
    pub median_percent: f64,
    /// The largest of them, in percent.
    pub worst_percent: f64,
}

impl ErrorStats {
    /// The error of each `(predicted, reported)` pair; pairs reporting 0
    /// are left out.
    pub fn of(pairs: impl IntoIterator<Item = (f64, f64)>) -> ErrorStats {
        let mut errors: Vec<f64> = pairs
            .into_iter()
            .filter(|(_, reported)| *reported > 0.0)
            .map(|(predicted, reported)| (predicted - reported).abs() / reported * 100.0)
            .collect();
        if errors.is_empty() {
            return ErrorStats::default();
        }
        errors.sort_by(f64::total_cmp);
        ErrorStats {
            count: errors.len(),
            mean_percent: errors.iter().sum::<f64>() / errors.len() as f64,
            median_percent: errors[errors.len() / 2],
            worst_percent: errors[errors.len() - 1],
        }
    }
}

/// The error of `factor x our delta` against each reported delta.
pub fn delta_error(deltas: &[ReportDelta], factor: f64) -> ErrorStats {
    ErrorStats::of(
        deltas
            .iter()
            .map(|d| (d.estimate as f64 * factor, d.reported as f64)),
    )
}

/// The error of the totals with the overhead anchored once: at the first
/// point of each epoch and model the prediction is the report itself (that
/// is where the overhead is learnt); every later point is predicted as
/// that report plus `factor x` our count of what came after it, which is
/// what the meter's anchored figure does between reports. The anchoring
/// points themselves are not scored.
pub fn total_error(points: &[ReportPoint], factor: f64) -> ErrorStats {
    let mut pairs = Vec::new();
    let mut anchor: Option<&ReportPoint> = None;
    for point in points {
        match anchor {
            Some(a) if a.epoch == point.epoch && a.model == point.model => {
                let grown = point.estimate as f64 - a.estimate as f64;
                pairs.push((a.reported as f64 + factor * grown, point.reported as f64));
            }
            _ => anchor = Some(point),
        }
    }
    ErrorStats::of(pairs)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use abridge_llm::ImageBilling;
    use abridge_llm::Message;
    use abridge_llm::Meta;
    use abridge_llm::Usage;
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::tokenizer::Estimate;

    fn reply(text: &str, prompt: u64) -> Draft {
        Draft::message(Message::assistant(text).with_meta(Meta {
            usage: Some(Usage {
                input: prompt,
                output: 1,
                ..Usage::default()
            }),
            ..Meta::default()
        }))
    }

    fn cost() -> CostModel {
        CostModel::new(Arc::new(Estimate), ImageBilling::Anthropic)
    }

    /// A provider that counts 1.5 tokens per token of ours, plus 1000 of
    /// overhead: the fit finds 1.5 from the deltas, whatever the overhead.
    #[test]
    fn the_fit_cancels_the_overhead() {
        // "abcd" x n costs 4 + 2 + n under bytes/4.
        let user = |n: usize| Draft::message(Message::user("abcd".repeat(n)));
        let drafts = vec![
            user(94),
            reply("abcd", 1000 + 150),
            user(194),
            reply("abcd", 1000 + 150 + 15 + 300),
        ];
        let points = report_points(drafts, cost()).unwrap();
        assert_eq!(points.len(), 2);
        assert_eq!((points[0].estimate, points[0].reported), (100, 1150));
        assert_eq!(
            (points[1].estimate, points[1].reported),
            (100 + 7 + 200, 1465)
        );
        let deltas = report_deltas(&points);
        assert_eq!(
            deltas,
            vec![ReportDelta {
                estimate: 207,
                reported: 315
            }]
        );
        let factor = fit(&deltas).unwrap();
        assert!((factor - 315.0 / 207.0).abs() < 1e-9);
        assert!(delta_error(&deltas, factor).worst_percent < 1e-9);
        // Anchored at the first report, the second is predicted exactly.
        let total = total_error(&points, factor);
        assert_eq!(total.count, 1);
        assert!(total.worst_percent < 1e-9);
        // Uncorrected, the growth is under-counted by a third.
        let raw = delta_error(&deltas, 1.0);
        assert!((raw.mean_percent - (315.0 - 207.0) / 315.0 * 100.0).abs() < 1e-9);
    }

    #[test]
    fn a_shrinking_report_or_a_rewritten_history_is_no_delta() {
        let points = vec![
            ReportPoint {
                seq: 1,
                estimate: 100,
                reported: 500,
                model: None,
                epoch: 0,
            },
            ReportPoint {
                seq: 3,
                estimate: 200,
                reported: 450,
                model: None,
                epoch: 0,
            },
            ReportPoint {
                seq: 5,
                estimate: 300,
                reported: 700,
                model: None,
                epoch: 1,
            },
            ReportPoint {
                seq: 7,
                estimate: 400,
                reported: 900,
                model: None,
                epoch: 1,
            },
        ];
        assert_eq!(
            report_deltas(&points),
            vec![ReportDelta {
                estimate: 100,
                reported: 200
            }]
        );
        assert_eq!(fit(&[]), None);
    }
}
