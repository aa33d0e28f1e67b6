//! The e2e check of fidelity's LLM mode: the benchmark run against the
//! llama.cpp server on a small bundled session. SmolLM2-135M answers
//! badly; the check proves the wiring (every probe asked, every answer
//! graded, soft's checkpoint written by the model, the tables produced),
//! never the scores.

use std::path::Path;
use std::time::Duration;
use std::time::Instant;

use anyhow::Context;
use anyhow::ensure;

use crate::fidelity::LlmOptions;

/// The bundled session the check compacts (about 8k tokens).
const SESSION: &str =
    "assets/sessions/swe-agent__marshmallow-1867__function_calling_replace_from_source.traj";

/// Messages of the session kept: the task and the first six steps, about
/// 4,300 tokens, so even a context no method shrank fits the server's
/// 8,192 with a question and its answer.
const MESSAGES: usize = 12;

/// The window the methods run under: abridge's smallest, which the cut
/// crosses, so every method has a span to compact.
const WINDOW: u64 = abridge::MIN_WINDOW;

/// The checks of this module.
pub(crate) const CHECKS: [(&str, crate::e2e_checks::Check); 1] = [(
    "fidelity's LLM mode asks every probe of digest's and soft's contexts",
    llm_mode,
)];

fn llm_mode(_binary: &Path, base_url: &str, root: &Path, _work: &Path) -> anyhow::Result<()> {
    let started = Instant::now();
    let mut options = LlmOptions::new(base_url, "smollm2");
    options.methods = Some(vec!["digest".into(), "soft".into()]);
    // Two summarizer calls for the hidden span; room for the sections
    // soft's prompt asks for; short answers.
    options.input_tokens = Some(3_000);
    options.max_output = Some(1_500);
    options.answer_tokens = 150;
    options.messages = Some(MESSAGES);
    options.timeout = Duration::from_secs(300);
    let results = crate::fidelity::run_llm(&[root.join(SESSION)], Some(WINDOW), &options)?;
    println!(
        "e2e: fidelity --llm took {:.1}s",
        started.elapsed().as_secs_f64()
    );
    let result = results.first().context("no session graded")?;
    ensure!(!result.key.probes.is_empty(), "the key has no probes");
    let categories = crate::fidelity::categories_asked(&result.key);
    let methods: Vec<&str> = result.graded.iter().map(|g| g.method.as_str()).collect();
    ensure!(
        methods == ["digest", "soft"],
        "expected rows for digest and soft, got {methods:?}"
    );
    for graded in &result.graded {
        ensure!(
            graded.questions == categories,
            "{}: {} questions for {categories} categories",
            graded.method,
            graded.questions
        );
        ensure!(
            graded.answers.len() == result.key.probes.len(),
            "{}: {} grades for {} probes",
            graded.method,
            graded.answers.len(),
            result.key.probes.len()
        );
        ensure!(
            graded.errors.is_empty(),
            "{}: questions failed: {:?}",
            graded.method,
            graded.errors
        );
    }
    let digest = &result.graded[0];
    ensure!(
        digest.landed == ["digest"] && digest.compaction_calls == 0,
        "digest: landed {:?} with {} model calls ({:?})",
        digest.landed,
        digest.compaction_calls,
        digest.status
    );
    // Whether the 135M model's summary is usable is not the question;
    // that soft asked it is. Its pass and calls are printed either way.
    let soft = &result.graded[1];
    println!(
        "e2e: fidelity: soft made {} model calls, landed {:?} ({})",
        soft.compaction_calls,
        soft.landed,
        soft.status.as_deref().unwrap_or("")
    );
    ensure!(
        soft.compaction_calls >= 1,
        "soft made no call to the model: {:?}",
        soft.status
    );
    let tables: String = crate::fidelity::llm_sections(&results, &options.model)
        .iter()
        .map(|s| s.to_markdown())
        .collect();
    for row in ["| digest |", "| soft |"] {
        ensure!(
            tables.contains(row),
            "the report has no {row} row:\n{tables}"
        );
    }
    print!("{tables}");
    Ok(())
}
