//! The Claude correction against the bundled Claude sessions' usage
//! reports (issue 16, point 3): with the correction, our count of what each
//! turn added matches what Anthropic reported for it, taken over every
//! delta of both samples.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use abridge_llm::Catalog;
use abridge_meter::CostModel;
use abridge_meter::calibrate::ReportDelta;
use abridge_meter::calibrate::fit;
use abridge_meter::calibrate::report_deltas;
use abridge_meter::calibrate::report_points;

/// The bundled samples with Claude usage reports, with the model that
/// wrote most of each.
const SAMPLES: &[(&str, &str)] = &[
    ("claude-code__spotter__4d5611e5.jsonl", "claude-opus-4-6"),
    ("pi-mono__large-session.jsonl", "claude-sonnet-4-5"),
];

fn deltas(cost: impl Fn(&str) -> CostModel) -> Vec<ReportDelta> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../assets/sessions");
    let mut all = Vec::new();
    for (name, model) in SAMPLES {
        let imported = abridge_import::read(&root.join(name), None).unwrap();
        let points = report_points(imported.drafts, cost(model)).unwrap();
        let deltas = report_deltas(&points);
        assert!(deltas.len() > 100, "{name}: {} deltas", deltas.len());
        all.extend(deltas);
    }
    all
}

/// Regression: Claude was counted with bare o200k, about a fifth under
/// what Anthropic reports for the same text.
#[test]
fn corrected_counts_match_the_reported_deltas() {
    let catalog = Catalog::builtin();
    let corrected = fit(&deltas(|model| {
        CostModel::for_model(&catalog.lookup(model).entry)
    }))
    .unwrap();
    assert!(
        (0.97..1.05).contains(&corrected),
        "corrected fit {corrected}"
    );
    let bare = fit(&deltas(|model| {
        CostModel::for_model(&catalog.lookup(model).entry).with_correction(1.0)
    }))
    .unwrap();
    assert!(bare > 1.15, "bare o200k fit {bare}");
}
