//! The LLM mode's tables: the model-free mode's shape, with each cell the
//! share of probes the model's answer quoted exactly / matched once
//! normalised, and the probes answered and errored.

use super::ask::AnswerTally;
use super::ask::answer_tally;
use super::key::Key;
use super::llm::LlmGraded;
use super::probe::Category;
use crate::bench::Section;

/// One session's LLM-mode results.
pub(crate) struct LlmSessionResult {
    /// The file's name.
    pub(crate) name: String,
    /// How its compaction point was chosen.
    pub(crate) how: String,
    /// The window the methods ran under.
    pub(crate) window: u64,
    /// Its key.
    pub(crate) key: Key,
    /// Every method's answers, then the agent's own summary's.
    pub(crate) graded: Vec<LlmGraded>,
}

fn cell(tally: AnswerTally) -> String {
    match tally.percents() {
        Some((exact, normalised)) => format!("{exact:.0} / {normalised:.0}"),
        None => "-".to_string(),
    }
}

fn columns(first: &[&'static str]) -> Vec<&'static str> {
    let mut columns = first.to_vec();
    columns.extend(["answered", "errored"]);
    columns.extend(Category::ALL.iter().map(|c| c.label()));
    columns.push("all");
    columns
}

/// The answered and errored counts, every category's cell and the total.
fn tally_cells(key: &Key, graded: &LlmGraded) -> Vec<String> {
    let all = answer_tally(key, &graded.answers, None);
    let mut cells = vec![all.answered.to_string(), all.errored().to_string()];
    for category in Category::ALL {
        cells.push(cell(answer_tally(key, &graded.answers, Some(category))));
    }
    cells.push(cell(all));
    cells
}

/// The table of one session.
pub(crate) fn session_section(result: &LlmSessionResult, model: &str) -> Section {
    let mut section = Section::new(
        &format!("Fidelity asked of {model}: {}", result.name),
        &format!(
            "Compaction point: {}; window {}. Probes: {}, each asked through its category's question over the context the next request sends. A cell is the share quoted exactly / matched once normalised, in percent; `model calls` are the pass's calls to the summarizing model.",
            result.how,
            result.window,
            result.key.probes.len(),
        ),
        &columns(&[
            "method",
            "pass",
            "landed",
            "tokens after",
            "model calls",
            "questions",
        ]),
    );
    for graded in &result.graded {
        let mut cells = vec![
            graded.method.clone(),
            graded.status.clone().unwrap_or_else(|| "imported".into()),
            if graded.landed.is_empty() {
                "=".into()
            } else {
                graded.landed.join(", ")
            },
            graded.tokens.to_string(),
            graded.compaction_calls.to_string(),
            graded.questions.to_string(),
        ];
        cells.extend(tally_cells(&result.key, graded));
        section.row(cells);
        for error in graded.errors.iter().take(3) {
            section.note(format!("{}: {error}", graded.method));
        }
    }
    section
}

/// Every probe of every session pooled, per method.
pub(crate) fn pooled_section(results: &[LlmSessionResult], model: &str) -> Section {
    let mut section = Section::new(
        &format!("Fidelity asked of {model}: every session pooled"),
        "Every probe of every session above counted once, per method. Quoted exactly / matched once normalised, in percent.",
        &columns(&["method"]),
    );
    let mut methods: Vec<&str> = Vec::new();
    for graded in results.iter().flat_map(|r| &r.graded) {
        if !methods.contains(&graded.method.as_str()) {
            methods.push(&graded.method);
        }
    }
    for method in methods {
        let mut per_category = vec![AnswerTally::default(); Category::ALL.len()];
        let mut all = AnswerTally::default();
        for result in results {
            for graded in result.graded.iter().filter(|g| g.method == method) {
                for (slot, category) in per_category.iter_mut().zip(Category::ALL) {
                    slot.add(answer_tally(&result.key, &graded.answers, Some(category)));
                }
                all.add(answer_tally(&result.key, &graded.answers, None));
            }
        }
        let mut cells = vec![
            method.to_string(),
            all.answered.to_string(),
            all.errored().to_string(),
        ];
        cells.extend(per_category.into_iter().map(cell));
        cells.push(cell(all));
        section.row(cells);
    }
    section
}

/// Every table of a run: one per session, then the pooled one.
pub(crate) fn sections(results: &[LlmSessionResult], model: &str) -> Vec<Section> {
    let mut out: Vec<Section> = results.iter().map(|r| session_section(r, model)).collect();
    out.push(pooled_section(results, model));
    out
}
